// SPDX-License-Identifier: Apache-2.0
#pragma once
// One tool of symmem-report run as a child process: its stdout captured (bounded), its stderr passed
// through to the user's terminal as it comes (the tail kept when the tool fails), a time limit after
// which it is killed, and every fork, exec and wait checked and named when it fails. The child leads
// its own process group, so a tool's forked ranks are stopped with it; only a pid above 0 that this
// call started is ever signalled (tools/common/forked_ranks.h has the same rule).
#include <csignal>
#include <string>
#include <vector>

#include "tools/report/text.h"

namespace symmem::report {

struct RunRequest {
  std::string tool;               // "symmem-health": the name the report shows
  std::vector<std::string> argv;  // argv[0]: the executable's path
  std::vector<std::string> env;   // the child's environment, "NAME=value"
  int timeoutSeconds = 600;
  size_t stdoutMaxBytes = size_t{4} << 20;  // kept; the rest is read and dropped (stdoutTruncated)
  // Where the tool's process group is published while it runs (0 before and after), for a signal
  // handler that must stop it at once; may be null.
  volatile std::sig_atomic_t* runningGroup = nullptr;
};

// Runs the tool and waits for it (at most timeoutSeconds, or until *interrupted becomes non-zero).
// Never throws; every way it can end is in the returned ToolRun (command: argv as commandLine()).
ToolRun runTool(const RunRequest& request, const volatile std::sig_atomic_t* interrupted);

}  // namespace symmem::report

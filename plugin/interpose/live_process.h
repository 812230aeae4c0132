// SPDX-License-Identifier: Apache-2.0
#pragma once
// A process as another process can recognise it later: its pid and the moment it started. A pid alone
// is reused once its process has ended (a job killed hours ago leaves pids that new processes, of any
// user, may hold now); the start time (field 22 of /proc/<pid>/stat, clock ticks since boot) tells
// the process that wrote a record from one that took its pid since.
#include <sys/types.h>

#include <cstdint>

namespace symmem {

struct ProcessMark {
  pid_t pid = 0;
  uint64_t startTicks = 0;  // 0: unknown (no /proc); then only the pid is compared
};

// This process, read once per process (and again in a forked child, whose pid is its own).
ProcessMark thisProcessMark();

// Whether the process `mark` names still runs: its pid exists (kill(pid, 0) does not say ESRCH) and,
// where both start times are known, started when the mark says. A pid of 0 or less names no process.
bool stillRunning(const ProcessMark& mark);

// The start time of `pid` from /proc (a bounded read), or 0 when it cannot be read.
uint64_t processStartTicks(pid_t pid);

}  // namespace symmem

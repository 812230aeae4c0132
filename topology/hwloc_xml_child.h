// SPDX-License-Identifier: Apache-2.0
#pragma once
// hwloc XML read in a child process, so that a file hwloc cannot cope with takes down only that
// child. hwloc's XML importer is not hardened against malformed input (a 514-byte file crashes
// hwloc 2.9.0 with SIGSEGV), so the tools read hwloc exports this way and the plugin, which lives
// inside the user's job, does not read them at all (topology_file.h, HwlocXmlPolicy).
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "topology/expected.h"
#include "topology/model.h"

namespace symmem {

inline constexpr std::chrono::milliseconds kHwlocXmlChildTimeout{30000};

// parseHwlocXml(text, fileName) in a forked child; the model comes back through a pipe
// (topology_record.h). A child that dies by a signal or runs past `timeout` (then killed) gives an
// error naming the file and what happened.
Expected<Topology> parseHwlocXmlInChildProcess(std::string_view text, std::string_view fileName,
                                               std::chrono::milliseconds timeout = kHwlocXmlChildTimeout);

// ---- The mechanism, for tests ----

// How a child run ended, when it did not hand back a result of its own.
struct ChildOutcome {
  enum class Kind : int { Finished, Crashed, TimedOut, Failed };
  Kind kind = Kind::Failed;
  std::string value;  // Finished: what `work` returned (ok or not: see ok)
  bool ok = false;    // Finished: whether `work` succeeded; value is then its bytes, else its error
  std::string what;   // otherwise: "signal 11 (Segmentation fault)", "still running after 30000 ms", ...
};

// Runs `work` in a forked child (which ends with _exit, running no atexit handlers) and waits at
// most `timeout` for it. Exceptions in `work` count as its failure.
ChildOutcome runInChildProcess(const std::function<Expected<std::string>()>& work, std::chrono::milliseconds timeout);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The live statistics of the processes that have the plugin loaded, read from their files
// (core/call_stats_segment.h) for symmem-stat and symmem-report: every file of the directory, or those
// of the PIDs asked for, each either read or turned into one line that says why not. A file left by
// a process that ended is reported and left in place: a reader changes nothing, and the next process
// of that user that writes statistics in the folder removes it (stats::removeEndedSegments). A file
// is shown only when it is whom its name says: owned by the uid in its name, of a running process of
// that uid with the PID in its name and header; any other is skipped with a line that says whose it
// is (another user can make a file under any name not yet taken in /dev/shm). docs/live-stats.md
// describes the files.
#include <sys/types.h>

#include <string>
#include <vector>

#include "core/call_stats_segment.h"

namespace symmem {

struct StatsGatherRequest {
  std::string dir;          // where the files are (stats::segmentDirectory)
  std::vector<pid_t> pids;  // only these processes; empty: every file of `dir`
};

struct StatsGathered {
  std::vector<stats::ProcessSnapshot> processes;  // running processes, by PID
  // One line per file (or PID asked for) not shown, saying why: "pid 42 ended without removing its
  // statistics file /dev/shm/nccl-symmem-1000-42.stats (...)", a refused layout, an unreadable file.
  std::vector<std::string> notes;
  int filesSeen = 0;       // statistics files found in `dir` (of the PIDs asked for)
  int filesUnusable = 0;   // of those: refused or unreadable
  int endedFiles = 0;      // of those: left by processes that ended
  std::string dirProblem;  // "" or why `dir` could not be read
};

StatsGathered gatherStats(const StatsGatherRequest& request);

// What a reader says when no process has the plugin loaded (one line, no newline), and the hint it
// ends with: when the plugin writes its file, and how it is turned off.
std::string noProcessText(const std::string& dir);
std::string noProcessHint();

}  // namespace symmem

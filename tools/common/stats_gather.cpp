// SPDX-License-Identifier: Apache-2.0
#include "tools/common/stats_gather.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/printable_text.h"

namespace symmem {

namespace {

bool noSuchProcess(pid_t pid) { return !stats::processStartTicks(pid); }

// The note's ending for a file an ended process left: who removes it (a reader never does).
std::string whoRemoves(const stats::SegmentFile& f) {
  if (f.owner != geteuid())
    return " (uid " + std::to_string(f.owner) + "'s; that user's next process with the plugin removes it)";
  return " (the next process of this user that writes statistics here removes it)";
}

bool dirReadable(const std::string& dir, std::string* why) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    *why = "cannot read " + printableText(dir) + ": " + std::strerror(errno);
    return false;
  }
  closedir(d);
  return true;
}

}  // namespace

StatsGathered gatherStats(const StatsGatherRequest& request) {
  StatsGathered out;
  if (!dirReadable(request.dir, &out.dirProblem)) return out;
  std::vector<stats::SegmentFile> files = stats::listSegments(request.dir);
  if (!request.pids.empty()) {
    std::erase_if(files, [&](const stats::SegmentFile& f) {
      return std::find(request.pids.begin(), request.pids.end(), f.name.pid) == request.pids.end();
    });
    for (pid_t pid : request.pids) {
      const bool found =
          std::any_of(files.begin(), files.end(), [&](const stats::SegmentFile& f) { return f.name.pid == pid; });
      if (!found) {
        out.notes.push_back("pid " + std::to_string(pid) + ": no statistics file in " + printableText(request.dir) +
                            (stats::processStartTicks(pid) ? " (" + noProcessHint() + ")" : " (no such process)"));
      }
    }
  }
  out.filesSeen = static_cast<int>(files.size());
  for (const stats::SegmentFile& f : files) {
    const std::string shown = printableText(f.path);
    stats::SegmentRead read = stats::readNamedSegment(f);
    switch (read.outcome) {
      case stats::SegmentRead::Outcome::Ok:
        if (!stats::writerAlive(read.snapshot)) {
          ++out.endedFiles;
          out.notes.push_back("pid " + std::to_string(f.name.pid) + " ended without removing its statistics file " +
                              shown + whoRemoves(f));
          break;
        }
        // Another user can make a file of their own under their uid and any PID, with any start time
        // (anyone can read it in /proc): the process with that PID must run as the file's owner.
        if (!stats::processRunsAs(read.snapshot.pid, read.snapshot.uid)) {
          ++out.filesUnusable;
          out.notes.push_back("skipped " + shown + ": pid " + std::to_string(read.snapshot.pid) +
                              " does not run as uid " + std::to_string(read.snapshot.uid) +
                              ", who owns the file (not shown)");
          break;
        }
        out.processes.push_back(std::move(read.snapshot));
        break;
      case stats::SegmentRead::Outcome::Gone:
        --out.filesSeen;  // removed at its process's exit since it was listed
        break;
      case stats::SegmentRead::Outcome::Starting:
        if (noSuchProcess(f.name.pid)) {
          ++out.endedFiles;
          out.notes.push_back("pid " + std::to_string(f.name.pid) + " ended while creating its statistics file " +
                              shown + whoRemoves(f));
        } else {
          --out.filesSeen;  // being created: shown at the next look
        }
        break;
      case stats::SegmentRead::Outcome::Refused:
      case stats::SegmentRead::Outcome::Unreadable:
        ++out.filesUnusable;
        out.notes.push_back("skipped " + printableText(read.error));
        break;
    }
  }
  std::sort(out.processes.begin(), out.processes.end(),
            [](const stats::ProcessSnapshot& a, const stats::ProcessSnapshot& b) { return a.pid < b.pid; });
  return out;
}

std::string noProcessHint() {
  return "the plugin writes its file once it has set up a communicator; SYMMEM_STATS=0 turns the statistics off";
}

std::string noProcessText(const std::string& dir) {
  return "no process has the plugin loaded with statistics in " + printableText(dir) + " (" + noProcessHint() + ")";
}

}  // namespace symmem

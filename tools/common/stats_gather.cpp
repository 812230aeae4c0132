// SPDX-License-Identifier: Apache-2.0
#include "tools/common/stats_gather.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/printable_text.h"

namespace symmem {

namespace {

struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  bool ok = false;
};

FileIdentity identityOf(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  return {st.st_dev, st.st_ino, true};
}

// Whether the process that `name` and `startTicks` describe has ended: no such PID, or the PID is now
// another process's (another start time). startTicks 0: any process with the PID counts as it.
bool ended(pid_t pid, uint64_t startTicks) {
  const std::optional<uint64_t> now = stats::processStartTicks(pid);
  return !now || (startTicks != 0 && *now != startTicks);
}

// Removes an ended process's file when it is still the file that was read (not one a new process with
// the recycled PID made since) and this user's. The note's ending.
std::string removeEndedFile(const stats::SegmentFile& f, const FileIdentity& read, uint64_t startTicks, bool allowed) {
  if (f.owner != getuid()) return " (uid " + std::to_string(f.owner) + "'s; not removed)";
  if (!allowed) return " (not removed)";
  const FileIdentity now = identityOf(f.path);
  if (!now.ok || now.dev != read.dev || now.ino != read.ino || !ended(f.name.pid, startTicks))
    return " (replaced meanwhile; not removed)";
  if (unlink(f.path.c_str()) != 0) return std::string(" (could not be removed: ") + std::strerror(errno) + ")";
  return " (removed)";
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
    const FileIdentity identity = identityOf(f.path);
    stats::SegmentRead read = stats::readNamedSegment(f);
    switch (read.outcome) {
      case stats::SegmentRead::Outcome::Ok:
        if (!stats::writerAlive(read.snapshot)) {
          ++out.endedFiles;
          out.notes.push_back("pid " + std::to_string(f.name.pid) + " ended without removing its statistics file " +
                              shown + removeEndedFile(f, identity, read.snapshot.startTicks, request.removeEnded));
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
        if (ended(f.name.pid, 0)) {
          ++out.endedFiles;
          out.notes.push_back("pid " + std::to_string(f.name.pid) + " ended while creating its statistics file " +
                              shown + removeEndedFile(f, identity, 0, request.removeEnded));
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

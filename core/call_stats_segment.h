// SPDX-License-Identifier: Apache-2.0
#pragma once
// The file behind a process's live statistics (core/call_stats_layout.h): created by the plugin, read
// by symmem-stat and symmem-report. One file per process, `nccl-symmem-<uid>-<pid>.stats` in
// /dev/shm (SYMMEM_STATS_DIR elsewhere), mode 0600, removed when the process exits. A file whose
// process ended without removing it (killed, crashed) is removed by the next writer of the same user in
// that folder (removeEndedSegments); readers report such files and change nothing.
//
// /dev/shm is every user's: anyone may make a file under any name not taken yet, this process's name
// included, and fill it with any bytes. So the writer makes its file under a suffixed name where its
// own is taken, and the reader trusts nothing in a file: it reads only files owned by the uid in
// their name, of a running process of that uid with the PID in their name and header; it copies
// them with pread (a file shrunk meanwhile is a short read, never a SIGBUS) and sums their counts
// without wrapping.
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/call_stats_layout.h"

namespace symmem::stats {

inline constexpr const char* kDefaultDirectory = "/dev/shm";

// `dirSetting` (SYMMEM_STATS_DIR) when set, else /dev/shm.
std::string segmentDirectory(const std::string& dirSetting);
// `suffix` 0: the process's own name; else `nccl-symmem-<uid>-<pid>.<suffix>.stats`, made where
// another user took the own name first.
std::string segmentFileName(uid_t uid, pid_t pid, uint32_t suffix = 0);
// The owner and process a file name names; nullopt for any other name.
struct SegmentName {
  uid_t uid;
  pid_t pid;
  uint32_t suffix = 0;
};
std::optional<SegmentName> parseSegmentFileName(std::string_view name);

// A process's start time in clock ticks since boot (field 22 of /proc/PID/stat), nullopt when no such
// process exists. With the PID it names one process: a PID reused later has another start time.
std::optional<uint64_t> processStartTicks(pid_t pid);
// Whether the process `pid` runs as `uid` (as its real, effective, saved or filesystem uid:
// /proc/PID/status); false when it cannot be read.
bool processRunsAs(pid_t pid, uid_t uid);

// Counts read from a file are any 64-bit values: their sums stop at UINT64_MAX instead of wrapping
// (a sum wrapped to 0 would be a divisor of 0).
constexpr uint64_t addCounts(uint64_t a, uint64_t b) {
  uint64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? UINT64_MAX : sum;
}

// The timed executions of a kernel kind, over every bucket (addCounts).
uint64_t timedRuns(const GpuCounts& g, int kind);
// A kernel kind's executions: with every call timed (`sampling` 1), its timed count; else its
// algorithm's executions shared among the algorithm's kinds as their timed executions are (exact when
// one kind of the algorithm ran, as on a communicator whose table picks one variant per algorithm;
// an estimate otherwise).
uint64_t kindRuns(const GpuCounts& g, uint32_t sampling, int kind);

// The writer's side: the mapped segment of this process.

// Stores `from`'s counts into a slot's GPU counts under their sequence word (GpuCounts::seq), word by
// word. One writer at a time.
void storeGpuCounts(GpuCounts* to, const GpuCounts& from);

class WrittenSegment {
 public:
  // A file in `dir` that other processes can read, named for this process's effective uid (the
  // owner the file gets) and PID. A file of that name that is this user's was left by an ended
  // process with this PID and is replaced; one that is another user's is left alone and the file is
  // made under the name with a random suffix (O_EXCL: never someone else's file). Its whole size is
  // reserved before it is mapped (posix_fallocate), so that a full directory is a nullptr here and
  // never a SIGBUS at a later store. nullptr with `why` when it cannot be made (no such directory,
  // full, every name tried taken). Once its own file is made it removes what this user's ended
  // processes left in `dir` (removeEndedSegments).
  static std::unique_ptr<WrittenSegment> createShared(const std::string& dir, const std::string& program,
                                                      const std::string& pluginVersion, std::string* why);
  // The same layout in this process's memory only: counters for the summary lines, no live view.
  static std::unique_ptr<WrittenSegment> createPrivate(const std::string& program, const std::string& pluginVersion);
  ~WrittenSegment();  // unmaps; removes the file when this process created it (not in a forked child)
  WrittenSegment(const WrittenSegment&) = delete;
  WrittenSegment& operator=(const WrittenSegment&) = delete;

  Header* header() const { return reinterpret_cast<Header*>(base_); }
  CommSlot* slot(int i) const { return reinterpret_cast<CommSlot*>(base_ + kHeaderBytes + size_t(i) * kSlotBytes); }
  void* base() const { return base_; }
  size_t bytes() const { return kSegmentBytes; }
  bool shared() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  // Removes the file now (at exit), if this process created it; the mapping stays valid.
  void removeFile();
  // Forgets the file without removing it (a forked child: the file is its parent's).
  void disown() { path_.clear(); }

 private:
  WrittenSegment(char* base, std::string path, pid_t owner) : base_(base), path_(std::move(path)), owner_(owner) {}
  char* base_;
  std::string path_;
  pid_t owner_;
};

// Fills a header for this process (everything but the magic, which the creator writes last).
void initHeader(Header* h, pid_t pid, uint64_t startTicks, const std::string& program,
                const std::string& pluginVersion);

// The reader's side: a consistent copy of one slot.
struct SlotSnapshot {
  int index = 0;
  SlotState state = SlotState::Free;
  int rank = 0, nRanks = 0, device = 0;
  uint64_t comm = 0;
  uint64_t openedNs = 0, closedNs = 0;
  bool symmetric = false;
  uint32_t gpuSampling = 0;  // CommSlot::gpuSampling
  std::string path;
  uint64_t calls[kRoutes][kBuckets][kModes] = {};
  GpuCounts gpu = {};

  uint64_t routeCalls(Route r) const;  // every bucket, both modes
  uint64_t totalCalls() const;
};

struct ProcessSnapshot {
  std::string file;
  pid_t pid = 0;
  uid_t uid = 0;
  uint64_t startTicks = 0;
  uint64_t createdNs = 0;
  uint64_t untrackedComms = 0;
  std::string program;
  std::string pluginVersion;
  uint64_t takenNs = 0;             // CLOCK_REALTIME when this copy was taken
  std::vector<SlotSnapshot> comms;  // slots in use (Live and Ended), by slot index
};

struct SegmentRead {
  enum class Outcome { Ok, Gone, Refused, Starting, Unreadable };
  Outcome outcome = Outcome::Unreadable;
  std::string error;  // "path: why" unless Ok
  ProcessSnapshot snapshot;
};
// Reads the segment file `path`: a regular file of exactly kSegmentBytes, this layout's magic, version
// and sizes (anything else is Refused, saying which layout it is), each slot copied consistently
// (a slot that keeps changing under the copy is retried, then skipped with the copy's other slots).
// Copied with pread, never mapped: a file that shrinks while it is read is Unreadable, not a SIGBUS.
// A slot no writer makes (a state other than live or ended) is skipped; a GPU entry whose values are
// impossible together (min above max, a sum outside count x min .. count x max) is read as empty.
SegmentRead readSegment(const std::string& path);

// The segment files in `dir` (any owner), by pid, then suffix; `owner` from the file's metadata.
struct SegmentFile {
  std::string path;
  SegmentName name;
  uid_t owner;
};
std::vector<SegmentFile> listSegments(const std::string& dir);

// readSegment, and the file is whom its name says: owned (the opened file's owner) by the uid in its
// name, its header's PID the one in its name. One that is not is Refused, saying whose it is.
SegmentRead readNamedSegment(const SegmentFile& f);

// Whether the process that wrote `s` still runs (same PID, same start time).
bool writerAlive(const ProcessSnapshot& s);

// The writer's clean-up: removes the statistics files in `dir` that this process's effective uid owns,
// whose names carry that uid, and whose processes ended (no process with the PID of the name, or one
// started at another time than the file's header says), other than `keep`. Never another user's
// file, never one of a running process, never one replaced while it was looked at (same inode before
// and after), at most `limit` per call. Returns how many it removed.
int removeEndedSegments(const std::string& dir, const std::string& keep, int limit = 64);

}  // namespace symmem::stats

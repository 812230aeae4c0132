// SPDX-License-Identifier: Apache-2.0
#include "plugin/interpose/rendezvous.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <type_traits>

#include "core/log.h"
#include "plugin/interpose/shm_directory.h"

namespace symmem {

namespace {

constexpr uint64_t kMagic = 0x4e4353594d52445aull;  // "ZDRMYSCN"
constexpr uint32_t kLayoutVersion = 2;
constexpr size_t kWhyBytes = 160;
constexpr const char kTempMark[] = ".new-";

// The verdict word: the verdict in its low byte, above it the deciding slot + 1, whose reason it is.
constexpr uint32_t verdictWord(Verdict v, int slot) {
  return static_cast<uint32_t>(v) | (static_cast<uint32_t>(slot + 1) << 8);
}
constexpr Verdict verdictOf(uint32_t word) { return static_cast<Verdict>(word & 0xffu); }
constexpr int deciderOf(uint32_t word) { return static_cast<int>(word >> 8) - 1; }

// Text copied into a fixed field, always NUL-terminated.
template <size_t N>
void putText(char (&field)[N], std::string_view text) {
  const size_t n = std::min(text.size(), N - 1);
  std::memcpy(field, text.data(), n);
  field[n] = '\0';
}

template <size_t N>
std::string getText(const char (&field)[N]) {
  return std::string(field, strnlen(field, N));
}

std::string rankOrPid(const SlotView& s) {
  return s.rank >= 0 ? "rank " + std::to_string(s.rank) : "the rank in process " + std::to_string(s.pid);
}

std::string errnoText(int e) { return std::strerror(e); }

}  // namespace

// The shared layout. Every field a peer reads is written before the slot's state (release) says so;
// the verdict is the only word written by more than one process, by compare-and-swap, and each
// slot's reasons only by the process that claimed it.
struct Rendezvous::Segment {
  uint64_t magic;
  uint32_t version;
  uint32_t nRanks;
  uint64_t commId;
  int32_t creatorPid;  // who linked it in: a segment nobody claimed yet is stale once its maker ended
  uint32_t reserved;
  uint64_t creatorStartTicks;
  std::atomic<uint32_t> claimed;   // slots handed out: never more than nRanks
  std::atomic<uint32_t> verdict;   // verdictWord(), or Pending (0)
  std::atomic<uint32_t> attached;  // processes holding it; the last one out removes a name still its
  uint32_t reserved2;
  struct Slot {
    std::atomic<uint32_t> state;
    int32_t pid;
    uint64_t startTicks;
    uint32_t reach;
    int32_t rank;
    uint32_t takesPart;
    uint32_t reserved;
    uint64_t bands;
    SetupVote vote;
    char why[kWhyBytes];         // why this rank cannot take part
    char verdictWhy[kWhyBytes];  // the verdict's reason, when this slot decided it
  } slots[kRendezvousSlots];
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "the segment's words are shared between processes");
static_assert(std::is_trivially_copyable_v<SetupVote>);

std::string rendezvousPath(const std::string& directory, uint64_t commId, int nRanks) {
  char name[64];
  std::snprintf(name, sizeof(name), "/rdv-%016" PRIx64 "-%d", commId, nRanks);
  return directory + name;
}

Tally tallyRendezvous(const TallyInput& in) {
  if (in.nRanks < 2 || in.nRanks > kRendezvousSlots)
    return {Verdict::No, "the symmetric path takes 2 to " + std::to_string(kRendezvousSlots) + " ranks"};
  if (in.claimed > static_cast<uint32_t>(in.nRanks))
    return {Verdict::No, "more processes joined this communicator's agreement than it has ranks (" +
                             std::to_string(in.claimed) + " for " + std::to_string(in.nRanks) + ")"};
  int declared = 0, arrived = 0;
  std::vector<const SlotView*> byRank(static_cast<size_t>(in.nRanks), nullptr);
  for (const SlotView& s : in.slots) {
    if (s.state >= SlotView::Declared) ++declared;
    if (s.state >= SlotView::Declared && s.reach != Reach::Every)
      return {Verdict::No, "the rank in process " + std::to_string(s.pid) +
                               " does not pass its all-reduces "
                               "through the plugin (" +
                               (s.why.empty() ? std::string("no reason given") : s.why) + ")"};
    if (s.state == SlotView::Arrived) {
      ++arrived;
      if (!s.takesPart) return {Verdict::No, rankOrPid(s) + " cannot take part (" + s.why + ")"};
      if (s.rank < 0 || s.rank >= in.nRanks || byRank[static_cast<size_t>(s.rank)] != nullptr)
        return {Verdict::No, "two processes arrived as rank " + std::to_string(s.rank)};
      byRank[static_cast<size_t>(s.rank)] = &s;
    } else if (!s.alive) {
      return {Verdict::No, "the process of a rank (pid " + std::to_string(s.pid) +
                               ") ended before its first "
                               "all-reduce"};
    }
  }
  if (in.everyDeclarationIsIn && declared < in.nRanks)
    return {Verdict::No, "only " + std::to_string(declared) + " of " + std::to_string(in.nRanks) +
                             " ranks loaded the plugin as NCCL's tuner (NCCL_TUNER_PLUGIN must be set on every rank; "
                             "with NCCL 2.27 and older the plugin must also have seen the communicator made)"};
  if (arrived == in.nRanks) {
    std::vector<SetupVote> votes;
    for (const SlotView* s : byRank) votes.push_back(s->vote);
    const VoteOutcome vote = tallyVotes(votes);
    if (!vote.go) return {Verdict::No, vote.why};
    return {Verdict::Go, "every rank arrived and agrees"};
  }
  if (in.aborted) return {Verdict::No, "the communicator was aborted during its setup"};
  if (in.timedOut) {
    std::string missing;
    for (int r = 0; r < in.nRanks; ++r)
      if (byRank[static_cast<size_t>(r)] == nullptr) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    return {Verdict::No, "rank(s) " + missing + " did not reach their first eligible all-reduce within " +
                             std::to_string(in.timeoutMs) + " ms (SYMMEM_TIMEOUT_MS)"};
  }
  return {Verdict::Pending, {}};
}

bool bandsAgreeIn(const TallyInput& in) {
  if (in.nRanks < 2 || in.claimed != static_cast<uint32_t>(in.nRanks) ||
      in.slots.size() != static_cast<size_t>(in.nRanks))
    return false;
  for (const SlotView& s : in.slots)
    if (s.state < SlotView::Declared || s.bands == 0 || s.bands != in.slots[0].bands) return false;
  return true;
}

namespace {

using Segment = Rendezvous::Segment;

// What a segment found under the instance's name is to a process about to join.
enum class Found { Joinable, Full, Stale, Foreign };

bool sameFile(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// Whether `st` is what this user's processes make: a regular file of theirs, 0600, a segment's size.
bool looksLikeASegment(const struct stat& st) {
  return S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 0777) == 0600 &&
         static_cast<size_t>(st.st_size) == sizeof(Segment);
}

// Whether every process that ever claimed the segment (or, unclaimed, made it) has ended. A slot
// claimed whose owner has not written its mark yet counts as running.
bool everyClaimerEnded(const Segment& s) {
  const uint32_t claimed = std::min<uint32_t>(s.claimed.load(std::memory_order_acquire), kRendezvousSlots);
  if (claimed == 0) return !stillRunning({s.creatorPid, s.creatorStartTicks});
  for (uint32_t i = 0; i < claimed; ++i) {
    const Segment::Slot& slot = s.slots[i];
    if (slot.state.load(std::memory_order_acquire) == SlotView::Free) return false;
    if (stillRunning({slot.pid, slot.startTicks})) return false;
  }
  return true;
}

Found inspect(const Segment& s, uint64_t commId, int nRanks) {
  if (s.magic != kMagic || s.version != kLayoutVersion || s.nRanks != static_cast<uint32_t>(nRanks) ||
      s.commId != commId)
    return Found::Foreign;
  if (everyClaimerEnded(s)) return Found::Stale;
  if (s.claimed.load(std::memory_order_acquire) >= static_cast<uint32_t>(nRanks)) return Found::Full;
  return Found::Joinable;
}

// Removes `name` from `dir` if it is still the file `st` describes (another process may have
// replaced it since).
void unlinkIfSame(int dir, const char* name, const struct stat& st) {
  struct stat now {};
  if (fstatat(dir, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && sameFile(now, st)) unlinkat(dir, name, 0);
}

// A complete, unclaimed segment under a private name, linked in as `name`. False, with `why`, when it
// cannot be made (the directory full: the space is reserved before the first store, so a full
// /dev/shm is an answer here, never a SIGBUS later). A peer's segment that was linked first wins.
bool makeSegment(int dir, const std::string& name, uint64_t commId, int nRanks, std::string* why) {
  static std::atomic<uint32_t> made{0};
  const std::string temp = name + kTempMark + std::to_string(getpid()) + "-" + std::to_string(made.fetch_add(1));
  const int fd = openat(dir, temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    *why = "cannot make a segment: " + errnoText(errno);
    return false;
  }
  bool ok = fchmod(fd, 0600) == 0;  // whatever the umask
  if (const int e = ok ? posix_fallocate(fd, 0, sizeof(Segment)) : errno; e != 0) {
    *why = "cannot reserve " + std::to_string(sizeof(Segment)) + " bytes for a segment: " + errnoText(e);
    ok = false;
  }
  void* m = ok ? mmap(nullptr, sizeof(Segment), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (ok && m == MAP_FAILED) {
    *why = "cannot map a segment: " + errnoText(errno);
    ok = false;
  }
  if (ok) {
    auto* s = static_cast<Segment*>(m);  // reserved space reads as zeros: every atomic starts at 0
    const ProcessMark me = thisProcessMark();
    s->version = kLayoutVersion;
    s->nRanks = static_cast<uint32_t>(nRanks);
    s->commId = commId;
    s->creatorPid = me.pid;
    s->creatorStartTicks = me.startTicks;
    std::atomic_thread_fence(std::memory_order_release);
    s->magic = kMagic;
    munmap(m, sizeof(Segment));
    if (linkat(dir, temp.c_str(), dir, name.c_str(), 0) != 0 && errno != EEXIST) {
      *why = "cannot link a segment in: " + errnoText(errno);
      ok = false;
    }
  }
  unlinkat(dir, temp.c_str(), 0);
  close(fd);
  return ok;
}

}  // namespace

int sweepStaleRendezvous(const std::string& directory) {
  const int dirFd = open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (dirFd < 0) return 0;
  DIR* dir = fdopendir(dup(dirFd));
  if (!dir) {
    close(dirFd);
    return 0;
  }
  std::vector<std::string> stale;
  int read = 0;
  while (const dirent* e = readdir(dir)) {
    if (++read > kSweepEntries) break;  // the work is bounded; only this user's names are here
    const std::string name = e->d_name;
    if (name.rfind("rdv-", 0) != 0) continue;
    if (const size_t mark = name.find(kTempMark); mark != std::string::npos) {
      // A segment being made, or left half-made by a killed maker: its pid is in its name.
      const pid_t maker = static_cast<pid_t>(std::atol(name.c_str() + mark + std::strlen(kTempMark)));
      if (maker > 0 && !stillRunning({maker, 0})) stale.push_back(name);
      continue;
    }
    struct stat st {};
    if (fstatat(dirFd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !looksLikeASegment(st)) continue;
    const int fd = openat(dirFd, name.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat opened {};
    void* m = fstat(fd, &opened) == 0 && sameFile(opened, st) && looksLikeASegment(opened)
                  ? mmap(nullptr, sizeof(Segment), PROT_READ, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    close(fd);
    if (m == MAP_FAILED) continue;
    const auto* s = static_cast<const Segment*>(m);
    if (s->magic == kMagic && s->version == kLayoutVersion && everyClaimerEnded(*s)) stale.push_back(name);
    munmap(m, sizeof(Segment));
  }
  closedir(dir);
  int removed = 0;
  for (const std::string& name : stale) removed += unlinkat(dirFd, name.c_str(), 0) == 0 ? 1 : 0;
  close(dirFd);
  return removed;
}

std::shared_ptr<Rendezvous> Rendezvous::join(uint64_t commId, int nRanks, std::string* why,
                                             const std::string& directory) {
  if (nRanks < 2 || nRanks > kRendezvousSlots) {
    *why = "communicators of " + std::to_string(nRanks) + " ranks do not take the symmetric path";
    return nullptr;
  }
  const std::string dirPath = directory.empty() ? privateShmDirectory(why) : directory;
  if (dirPath.empty()) return nullptr;
  const int dir = open(dirPath.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (dir < 0) {
    *why = "cannot open " + dirPath + ": " + errnoText(errno);
    return nullptr;
  }
  const std::string path = rendezvousPath(dirPath, commId, nRanks);
  const std::string name = path.substr(dirPath.size() + 1);
  Segment* s = nullptr;
  struct stat st {};
  // A few rounds: each replaces a stale or full segment, or loses a race to a peer's new one.
  for (int round = 0; round < 8 && s == nullptr; ++round) {
    const int fd = openat(dir, name.c_str(), O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      sweepStaleRendezvous(dirPath);  // a new communicator: the moment to clear what killed jobs left
      if (!makeSegment(dir, name, commId, nRanks, why)) break;
      continue;
    }
    if (fd < 0) {
      *why = "cannot open " + path + ": " + errnoText(errno);
      break;
    }
    void* m = fstat(fd, &st) == 0 && looksLikeASegment(st)
                  ? mmap(nullptr, sizeof(Segment), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    close(fd);
    if (m == MAP_FAILED) {
      *why = path + " is not this plugin's segment (kind, owner, mode or size)";
      break;
    }
    auto* found = static_cast<Segment*>(m);
    switch (inspect(*found, commId, nRanks)) {
      case Found::Joinable:
        s = found;
        continue;
      case Found::Foreign:
        *why = path + " has another layout (another plugin version?)";
        munmap(m, sizeof(Segment));
        round = 8;
        continue;
      case Found::Stale:  // a killed job's: its verdict is not this communicator's
      case Found::Full:   // every rank of an earlier communicator with this id has claimed its slot
        munmap(m, sizeof(Segment));
        unlinkIfSame(dir, name.c_str(), st);
        continue;
    }
  }
  if (s == nullptr) {
    if (why->empty()) *why = "no segment of its own after several tries (" + path + ")";
    close(dir);
    return nullptr;
  }
  s->attached.fetch_add(1, std::memory_order_acq_rel);
  // A slot, only while fewer than nRanks are claimed: a later communicator with the same id never
  // takes one of this instance's.
  uint32_t slot = s->claimed.load(std::memory_order_acquire);
  while (slot < static_cast<uint32_t>(nRanks) &&
         !s->claimed.compare_exchange_weak(slot, slot + 1, std::memory_order_acq_rel)) {
  }
  if (slot >= static_cast<uint32_t>(nRanks)) {  // filled between the look and the claim
    s->attached.fetch_sub(1, std::memory_order_acq_rel);
    munmap(s, sizeof(Segment));
    close(dir);
    *why = "every slot of " + path + " was claimed as this process joined";
    return nullptr;
  }
  std::shared_ptr<Rendezvous> r(new Rendezvous());
  r->segment_ = s;
  r->nRanks_ = nRanks;
  r->path_ = path;
  r->dev_ = st.st_dev;
  r->ino_ = st.st_ino;
  r->slot_ = static_cast<int>(slot);
  Segment::Slot& mine = s->slots[slot];
  const ProcessMark me = thisProcessMark();
  mine.pid = me.pid;
  mine.startTicks = me.startTicks;
  mine.rank = -1;
  mine.state.store(SlotView::Claimed, std::memory_order_release);
  // The claim that fills the segment takes its name away: the instance is complete, and the next
  // communicator with the same id makes its own.
  if (slot + 1 == static_cast<uint32_t>(nRanks)) unlinkIfSame(dir, name.c_str(), st);
  close(dir);
  return r;
}

Rendezvous::~Rendezvous() {
  if (!segment_) return;
  // The last process out removes the name, if it is still this segment's.
  if (segment_->attached.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    struct stat now {};
    if (lstat(path_.c_str(), &now) == 0 && now.st_dev == dev_ && now.st_ino == ino_) unlink(path_.c_str());
  }
  munmap(segment_, sizeof(Segment));
}

void Rendezvous::declare(Reach reach, const std::string& why, uint64_t bands) {
  Segment::Slot& mine = segment_->slots[slot_];
  mine.reach = static_cast<uint32_t>(reach);
  mine.bands = bands;
  putText(mine.why, why);
  mine.state.store(SlotView::Declared, std::memory_order_release);
}

void Rendezvous::arrive(int rank, const SetupVote& vote, bool takesPart, const std::string& why) {
  Segment::Slot& mine = segment_->slots[slot_];
  mine.rank = rank;
  mine.takesPart = takesPart ? 1 : 0;
  mine.vote = vote;
  putText(mine.why, why);
  mine.state.store(SlotView::Arrived, std::memory_order_release);
}

TallyInput Rendezvous::snapshot(bool everyDeclarationIsIn) const {
  TallyInput in;
  in.nRanks = nRanks_;
  in.claimed = segment_->claimed.load(std::memory_order_acquire);
  in.everyDeclarationIsIn = everyDeclarationIsIn;
  const uint32_t n = std::min<uint32_t>(in.claimed, kRendezvousSlots);
  for (uint32_t i = 0; i < n; ++i) {
    const Segment::Slot& s = segment_->slots[i];
    SlotView v;
    v.state = s.state.load(std::memory_order_acquire);
    if (v.state >= SlotView::Claimed) v.pid = s.pid;
    if (v.state >= SlotView::Declared) {
      v.reach = static_cast<Reach>(s.reach);
      v.bands = s.bands;
      v.why = getText(s.why);
    }
    if (v.state == SlotView::Arrived) {
      v.rank = s.rank;
      v.takesPart = s.takesPart != 0;
      v.vote = s.vote;
    }
    // A slot claimed a moment ago has no mark yet: its process is the one claiming it, running.
    v.alive = v.state == SlotView::Free || stillRunning({s.pid, s.startTicks});
    in.slots.push_back(std::move(v));
  }
  return in;
}

bool Rendezvous::bandsAgreed() const { return bandsAgreeIn(snapshot(true)); }

bool Rendezvous::decide(Verdict verdict, std::string_view why) {
  std::lock_guard<std::mutex> lock(deciding_);
  // The reason goes into this slot first, and only while nothing is decided: once this slot's word
  // is the verdict, its reason is never written again.
  if (segment_->verdict.load(std::memory_order_acquire) != static_cast<uint32_t>(Verdict::Pending)) return false;
  putText(segment_->slots[slot_].verdictWhy, why);
  uint32_t expected = static_cast<uint32_t>(Verdict::Pending);
  return segment_->verdict.compare_exchange_strong(expected, verdictWord(verdict, slot_), std::memory_order_acq_rel);
}

Tally Rendezvous::verdict() const {
  const uint32_t word = segment_->verdict.load(std::memory_order_acquire);
  const Verdict v = verdictOf(word);
  if (v == Verdict::Pending) return {Verdict::Pending, {}};
  const int decider = deciderOf(word);
  std::string why = decider >= 0 && decider < kRendezvousSlots ? getText(segment_->slots[decider].verdictWhy)
                                                               : std::string("no reason recorded");
  return {v == Verdict::Go ? Verdict::Go : Verdict::No, std::move(why)};
}

Verdict Rendezvous::verdictNow() const noexcept {
  const Verdict v = verdictOf(segment_->verdict.load(std::memory_order_acquire));
  return v == Verdict::Pending || v == Verdict::Go ? v : Verdict::No;
}

void Rendezvous::refuse(const std::string& why) {
  decide(Verdict::No, why.empty() ? std::string_view("a rank failed inside the agreement") : std::string_view(why));
}

Tally Rendezvous::await(int64_t timeoutMs, bool everyDeclarationIsIn, const std::function<bool()>& aborted,
                        int64_t declarationsDueMs) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(timeoutMs);
  const auto declarationsDue = start + std::chrono::milliseconds(declarationsDueMs);
  auto nextWarning = start + std::chrono::seconds(60);
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    Tally t = verdict();
    if (t.verdict != Verdict::Pending) return t;
    const auto now = Clock::now();
    TallyInput in = snapshot(everyDeclarationIsIn || (declarationsDueMs > 0 && now >= declarationsDue));
    in.timedOut = now >= deadline;
    in.timeoutMs = timeoutMs;
    in.aborted = aborted && aborted();
    const Tally mine = tallyRendezvous(in);
    if (mine.verdict != Verdict::Pending) {
      decide(mine.verdict, mine.why);
      continue;  // the verdict in force, whoever set it
    }
    if (now > nextWarning) {
      SYMMEM_WARN(
          "setup is still waiting for its peers' first eligible all-reduce (%s; ncclCommAbort ends the wait; "
          "it ends by itself after SYMMEM_TIMEOUT_MS = %lld ms)",
          path_.c_str(), static_cast<long long>(timeoutMs));
      nextWarning += std::chrono::seconds(60);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::microseconds(1000));
  }
}

}  // namespace symmem

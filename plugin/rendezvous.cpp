// SPDX-License-Identifier: Apache-2.0
#include "plugin/rendezvous.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <thread>
#include <type_traits>

#include "core/log.h"

namespace symmem {

namespace {

constexpr uint64_t kMagic = 0x4e4353594d52445aull;  // "ZDRMYSCN"
constexpr uint32_t kLayoutVersion = 1;
constexpr uint32_t kDeciding = 3;  // the verdict word while its winner writes the reason
constexpr size_t kWhyBytes = 160;

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

bool processAlive(pid_t pid) { return pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH; }

std::string rankOrPid(const SlotView& s) {
  return s.rank >= 0 ? "rank " + std::to_string(s.rank) : "the rank in process " + std::to_string(s.pid);
}

}  // namespace

// The shared layout. Every field a peer reads is written before the slot's state (release) says so;
// the verdict is the only word written by more than one process, by compare-and-swap.
struct Rendezvous::Segment {
  uint64_t magic;
  uint32_t version;
  uint32_t nRanks;
  uint64_t commId;
  std::atomic<uint32_t> claimed;
  std::atomic<uint32_t> verdict;
  std::atomic<uint32_t> attached;  // processes holding it; the last one out removes the file
  char why[kWhyBytes];
  struct Slot {
    std::atomic<uint32_t> state;
    int32_t pid;
    uint32_t reach;
    int32_t rank;
    uint32_t takesPart;
    SetupVote vote;
    char why[kWhyBytes];
  } slots[kRendezvousSlots];
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "the segment's words are shared between processes");
static_assert(std::is_trivially_copyable_v<SetupVote>);

std::string rendezvousPath(uid_t uid, uint64_t commId, int nRanks) {
  char name[128];
  std::snprintf(name, sizeof(name), "/dev/shm/nccl-symmem-%u-%016" PRIx64 "-%d", static_cast<unsigned>(uid), commId,
                nRanks);
  return name;
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
                             " ranks loaded the plugin as NCCL's tuner (NCCL_TUNER_PLUGIN must be set on every rank)"};
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

int sweepStaleRendezvous(uid_t uid) {
  constexpr int kMaxLooked = 256;  // bounded, whatever /dev/shm holds
  const std::string prefix = "nccl-symmem-" + std::to_string(uid) + "-";
  DIR* dir = opendir("/dev/shm");
  if (!dir) return 0;
  int looked = 0, removed = 0;
  while (const dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0 || name.find(".new-") != std::string::npos) continue;
    if (++looked > kMaxLooked) break;
    const std::string path = "/dev/shm/" + name;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    struct stat st {};
    const bool sane =
        fstat(fd, &st) == 0 && st.st_uid == uid && static_cast<size_t>(st.st_size) == sizeof(Rendezvous::Segment);
    void* m = sane ? mmap(nullptr, sizeof(Rendezvous::Segment), PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (m == MAP_FAILED) continue;
    const auto* s = static_cast<const Rendezvous::Segment*>(m);
    // Stale: every process that ever joined it has ended. One that nobody has claimed yet is being made.
    const uint32_t claimed = std::min<uint32_t>(s->claimed.load(std::memory_order_acquire), kRendezvousSlots);
    bool stale = s->magic == kMagic && s->version == kLayoutVersion && claimed > 0;
    for (uint32_t i = 0; stale && i < claimed; ++i) {
      const pid_t pid = s->slots[i].pid;
      stale = pid > 0 && !processAlive(pid);
    }
    munmap(m, sizeof(Rendezvous::Segment));
    if (stale && unlink(path.c_str()) == 0) ++removed;
  }
  closedir(dir);
  return removed;
}

std::shared_ptr<Rendezvous> Rendezvous::join(uint64_t commId, int nRanks, std::string* why) {
  if (nRanks < 2 || nRanks > kRendezvousSlots) {
    *why = "communicators of " + std::to_string(nRanks) + " ranks do not take the symmetric path";
    return nullptr;
  }
  const std::string path = rendezvousPath(getuid(), commId, nRanks);
  // Open it, or create it complete under a private name and link it in: a peer never sees a half-made one.
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT) {
    sweepStaleRendezvous(getuid());  // a new communicator: the moment to clear what killed jobs left
    const std::string temp = path + ".new-" + std::to_string(getpid());
    const int t = open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (t >= 0) {
      bool made = ftruncate(t, sizeof(Segment)) == 0;
      if (made) {
        void* m = mmap(nullptr, sizeof(Segment), PROT_READ | PROT_WRITE, MAP_SHARED, t, 0);
        if (m != MAP_FAILED) {
          auto* s = static_cast<Segment*>(m);  // zero-filled by ftruncate: every atomic starts at 0
          s->version = kLayoutVersion;
          s->nRanks = static_cast<uint32_t>(nRanks);
          s->commId = commId;
          std::atomic_thread_fence(std::memory_order_release);
          s->magic = kMagic;
          munmap(m, sizeof(Segment));
        } else {
          made = false;
        }
      }
      if (made) link(temp.c_str(), path.c_str());  // EEXIST: a peer's came first, and is the one
      unlink(temp.c_str());
      close(t);
    }
    fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  }
  if (fd < 0) {
    *why = "cannot open " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  struct stat st {};
  const bool sane = fstat(fd, &st) == 0 && st.st_uid == getuid() && (st.st_mode & 077) == 0 &&
                    static_cast<size_t>(st.st_size) == sizeof(Segment);
  void* m = sane ? mmap(nullptr, sizeof(Segment), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  close(fd);
  if (m == MAP_FAILED) {
    *why = path + " is not this plugin's (owner, mode or size)";
    return nullptr;
  }
  auto* s = static_cast<Segment*>(m);
  if (s->magic != kMagic || s->version != kLayoutVersion || s->nRanks != static_cast<uint32_t>(nRanks) ||
      s->commId != commId) {
    munmap(m, sizeof(Segment));
    *why = path + " has another layout (another plugin version?)";
    return nullptr;
  }
  s->attached.fetch_add(1, std::memory_order_acq_rel);
  std::shared_ptr<Rendezvous> r(new Rendezvous());
  r->segment_ = s;
  r->nRanks_ = nRanks;
  r->path_ = path;
  const uint32_t slot = s->claimed.fetch_add(1, std::memory_order_acq_rel);
  if (slot < static_cast<uint32_t>(kRendezvousSlots)) {
    r->slot_ = static_cast<int>(slot);
    Segment::Slot& mine = s->slots[slot];
    mine.pid = getpid();
    mine.rank = -1;
    mine.state.store(SlotView::Claimed, std::memory_order_release);
  }
  // A slot past the end: the tally sees claimed > nRanks and every rank stays on NCCL.
  return r;
}

Rendezvous::~Rendezvous() {
  if (!segment_) return;
  // The last process out removes the name; a peer still holding it keeps its mapping.
  if (segment_->attached.fetch_sub(1, std::memory_order_acq_rel) == 1) unlink(path_.c_str());
  munmap(segment_, sizeof(Segment));
}

void Rendezvous::declare(Reach reach, const std::string& why) {
  if (slot_ < 0) return;
  Segment::Slot& mine = segment_->slots[slot_];
  mine.reach = static_cast<uint32_t>(reach);
  putText(mine.why, why);
  mine.state.store(SlotView::Declared, std::memory_order_release);
}

void Rendezvous::arrive(int rank, const SetupVote& vote, bool takesPart, const std::string& why) {
  if (slot_ < 0) return;
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
    v.pid = s.pid;
    if (v.state >= SlotView::Declared) {
      v.reach = static_cast<Reach>(s.reach);
      v.why = getText(s.why);
    }
    if (v.state == SlotView::Arrived) {
      v.rank = s.rank;
      v.takesPart = s.takesPart != 0;
      v.vote = s.vote;
    }
    v.alive = processAlive(v.pid);
    in.slots.push_back(std::move(v));
  }
  return in;
}

bool Rendezvous::decide(const Tally& t) {
  uint32_t expected = static_cast<uint32_t>(Verdict::Pending);
  if (!segment_->verdict.compare_exchange_strong(expected, kDeciding, std::memory_order_acq_rel)) return false;
  putText(segment_->why, t.why);
  segment_->verdict.store(static_cast<uint32_t>(t.verdict), std::memory_order_release);
  return true;
}

Tally Rendezvous::verdict() const {
  for (;;) {
    const uint32_t v = segment_->verdict.load(std::memory_order_acquire);
    if (v == static_cast<uint32_t>(Verdict::Pending)) return {Verdict::Pending, {}};
    if (v != kDeciding) return {static_cast<Verdict>(v), getText(segment_->why)};
    std::this_thread::yield();  // the winner is writing a few bytes of reason
  }
}

Verdict Rendezvous::verdictNow() const noexcept {
  for (;;) {
    const uint32_t v = segment_->verdict.load(std::memory_order_acquire);
    if (v != kDeciding) return static_cast<Verdict>(v);
    std::this_thread::yield();
  }
}

void Rendezvous::refuse(const std::string& why) {
  uint32_t expected = static_cast<uint32_t>(Verdict::Pending);
  if (!segment_->verdict.compare_exchange_strong(expected, kDeciding, std::memory_order_acq_rel)) return;
  putText(segment_->why, why.empty() ? std::string_view("a rank failed inside the agreement") : std::string_view(why));
  segment_->verdict.store(static_cast<uint32_t>(Verdict::No), std::memory_order_release);
}

Tally Rendezvous::await(int64_t timeoutMs, bool everyDeclarationIsIn, const std::function<bool()>& aborted) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(timeoutMs);
  auto nextWarning = start + std::chrono::seconds(60);
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    Tally t = verdict();
    if (t.verdict != Verdict::Pending) return t;
    TallyInput in = snapshot(everyDeclarationIsIn);
    const auto now = Clock::now();
    in.timedOut = now >= deadline;
    in.timeoutMs = timeoutMs;
    in.aborted = aborted && aborted();
    const Tally mine = tallyRendezvous(in);
    if (mine.verdict != Verdict::Pending) {
      decide(mine);
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

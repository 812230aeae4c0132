// SPDX-License-Identifier: Apache-2.0
#pragma once
// The agreement that comes before any exchange. A communicator's setup posts NCCL collectives on the
// application's communicator; a rank whose all-reduces do not pass through the plugin (code hooks
// refused, the plugin switched off there, not loaded at all) never posts them, and its peers would
// wait for collectives that pair with nothing. So before any rank posts anything, every rank of the
// communicator learns, from host-local shared memory, that every rank has arrived in the plugin at
// the same all-reduce and can take part; or else every rank stays on NCCL.
//
// One segment per communicator and user: /dev/shm/nccl-symmem-<uid>-<commId>-<nRanks>, mode 0600,
// keyed by the id NCCL gives every rank's tuner (the same on all ranks); the last process out removes
// it, and one left by killed processes goes at the next segment this user creates. Two moments write into it:
//   - declare, at tuner init, which NCCL runs on every rank of a single-node communicator before its
//     intra-node barrier: whether this process's all-reduces will reach the plugin (Reach);
//   - arrive, at the communicator's first eligible eager all-reduce: rank, settings vote, and whether
//     this rank can take part (its exchange buffers are allocated, its queries answered).
// The verdict is one word that the first rank able to decide sets with a compare-and-swap: every rank
// reads the same verdict, whatever the timing, so no mix of outcomes exists (docs/transparent-use.md,
// "Agreement before any exchange"). Every wait is bounded (SYMMEM_TIMEOUT_MS) and abortable.
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/symmetric_limits.h"
#include "plugin/setup_vote.h"

namespace symmem {

inline constexpr int kRendezvousSlots = kSymmetricMaxRanks;

// Whether every all-reduce of this process on the communicator will pass through the plugin.
enum class Reach : uint32_t { Unknown = 0, Every = 1, None = 2 };
enum class Verdict : uint32_t { Pending = 0, Go = 1, No = 2 };

// One slot as the tally reads it (a copy, taken without locks; each field is published before the
// slot's state says so).
struct SlotView {
  enum State : uint32_t { Free = 0, Claimed = 1, Declared = 2, Arrived = 3 };
  uint32_t state = Free;
  pid_t pid = 0;
  bool alive = true;  // the process still exists (kill(pid, 0) did not say ESRCH)
  Reach reach = Reach::Unknown;
  int rank = -1;           // once arrived
  bool takesPart = false;  // once arrived
  SetupVote vote;          // once arrived
  std::string why;         // why not (declared None, or arrived without taking part)
};

struct TallyInput {
  int nRanks = 0;
  uint32_t claimed = 0;         // slots handed out (tuner inits seen)
  std::vector<SlotView> slots;  // the first min(claimed, kRendezvousSlots) slots
  // NCCL's own view is one node: its intra-node barrier follows every rank's tuner init, so by a
  // rank's first all-reduce every process that loaded the plugin has declared; a slot still missing
  // will never come.
  bool everyDeclarationIsIn = false;
  bool timedOut = false;
  int64_t timeoutMs = 0;
  bool aborted = false;
};

struct Tally {
  Verdict verdict = Verdict::Pending;
  std::string why;  // for No; for Go a summary
};

// The verdict a snapshot allows, or Pending. Pure: any rank that reads the same snapshot decides
// the same, and the compare-and-swap makes the first decision everyone's.
Tally tallyRendezvous(const TallyInput& in);

// This user's segment of one communicator. Thread-safe; shared by the tuner's ticket and a setup in
// progress.
class Rendezvous {
 public:
  // Opens the segment (creating it when first), claims a slot. Null, with `why`, when it cannot.
  static std::shared_ptr<Rendezvous> join(uint64_t commId, int nRanks, std::string* why);
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  // At tuner init, once: whether this process's all-reduces will reach the plugin, and why not.
  void declare(Reach reach, const std::string& why);
  // At the first eligible all-reduce, once. Never waits.
  void arrive(int rank, const SetupVote& vote, bool takesPart, const std::string& why);
  // Sets the verdict to No unless it is already decided (an abort, a rank that cannot arrive).
  void refuse(const std::string& why);
  // Waits (bounded by timeoutMs; `aborted` polled) until the verdict is decided, and returns it.
  // `everyDeclarationIsIn`: see TallyInput.
  Tally await(int64_t timeoutMs, bool everyDeclarationIsIn, const std::function<bool()>& aborted);
  // The verdict now (Pending until decided).
  Tally verdict() const;
  // The same without its reason: never allocates.
  Verdict verdictNow() const noexcept;
  const std::string& path() const { return path_; }

  struct Segment;  // the shared layout (rendezvous.cpp)

 private:
  Rendezvous() = default;
  TallyInput snapshot(bool everyDeclarationIsIn) const;
  bool decide(const Tally& t);  // compare-and-swap from Pending; true if this call decided

  Segment* segment_ = nullptr;
  int slot_ = -1;
  int nRanks_ = 0;
  std::string path_;
};

// The segment's file name for (uid, commId, nRanks): tests look for it, and for what is left behind.
std::string rendezvousPath(uid_t uid, uint64_t commId, int nRanks);

// Removes this user's segments whose every process has ended (a job killed before its destructors
// ran leaves its segment behind), looking at 256 at most; returns how many it removed. Run whenever a
// process creates a new segment.
int sweepStaleRendezvous(uid_t uid);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The agreement that comes before any exchange. A communicator's setup posts NCCL collectives on the
// application's communicator; a rank whose all-reduces do not pass through the plugin (code hooks
// refused, the plugin switched off there, not loaded at all) never posts them, and its peers would
// wait for collectives that pair with nothing. So before any rank posts anything, every rank of the
// communicator learns, from host-local shared memory, that every rank has arrived in the plugin at
// the same all-reduce and can take part; or else every rank stays on NCCL.
//
// One segment per communicator instance, in this user's own directory (plugin/interpose/shm_directory.h):
// <dir>/rdv-<id>-<nRanks>, mode 0600, where the id is what every rank of the communicator knows alike
// (NCCL's id given to the tuner). Made complete under a private name and linked in, its space
// reserved before it is mapped (a full /dev/shm is a "no", never a SIGBUS). A segment belongs to one
// instance: slots are claimed only while fewer than nRanks are, and the claim that fills it removes
// the name, so the next communicator with the same id (a fixed NCCL_COMM_ID, a second shrink of one
// parent) makes a segment of its own; one whose every claimer has ended (a killed job) is replaced.
// Processes are known by pid and start time (plugin/interpose/live_process.h), so a reused pid is no claimer.
// Two moments write into it:
//   - declare, at tuner init, which NCCL runs on every rank of a single-node communicator before its
//     intra-node barrier: whether this process's all-reduces will reach the plugin (Reach), and the
//     fingerprint of the NCCL bands its tuner would apply (bandsAgreed() reads them back);
//   - arrive, at the communicator's first eligible eager all-reduce: rank, settings vote, and whether
//     this rank can take part (its exchange buffers are allocated, its queries answered).
// The verdict is one word that the first rank able to decide sets with a compare-and-swap, its reason
// written before, in the decider's own slot: every rank reads the same verdict, whatever the timing,
// and a decider killed at any moment leaves either no verdict or a whole one (docs/transparent-use.md,
// "Agreement before any exchange"). Every wait is bounded (SYMMEM_TIMEOUT_MS) and abortable.
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/symmetric_limits.h"
#include "plugin/interpose/live_process.h"
#include "plugin/interpose/setup_vote.h"

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
  bool alive = true;  // the process still runs (stillRunning: pid and start time)
  Reach reach = Reach::Unknown;
  uint64_t bands = 0;      // once declared: the fingerprint of the NCCL bands its tuner would apply
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

// Whether the NCCL bands may be applied: every one of the nRanks slots declared, all with the same
// non-zero fingerprint. Pure. Read once every declaration is in (NCCL's intra-node barrier follows
// every rank's tuner init), so every rank reads the same slots and answers the same.
bool bandsAgreeIn(const TallyInput& in);

// NCCL 2.27 and older run the tuner's init after their intra-node barrier: a peer's declaration can
// come after a rank's first all-reduce, but within moments of it (every rank has passed that barrier).
// One still missing this long into the wait never comes (that rank's creation call was not seen),
// and every rank stays on NCCL, rather than waiting out SYMMEM_TIMEOUT_MS.
inline constexpr int64_t kLateDeclarationsDueMs = 5000;

// This user's segment of one communicator. Thread-safe; shared by the tuner's ticket and a setup in
// progress.
class Rendezvous {
 public:
  // Opens the instance's segment in `directory` (empty: privateShmDirectory()), making it when first,
  // and claims a slot. Null, with `why`, when it cannot (this rank then says nothing, and its peers,
  // missing its declaration, stay on NCCL).
  static std::shared_ptr<Rendezvous> join(uint64_t commId, int nRanks, std::string* why,
                                          const std::string& directory = {});
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  // At tuner init, once: whether this process's all-reduces will reach the plugin, and why not; and
  // the fingerprint of the NCCL bands this rank's tuner would apply (non-zero).
  void declare(Reach reach, const std::string& why, uint64_t bands = 1);
  // Whether every rank declared the same bands (bandsAgreeIn over the segment now).
  bool bandsAgreed() const;
  // At the first eligible all-reduce, once. Never waits.
  void arrive(int rank, const SetupVote& vote, bool takesPart, const std::string& why);
  // Sets the verdict to No unless it is already decided (an abort, a rank that cannot arrive).
  void refuse(const std::string& why);
  // Waits (bounded by timeoutMs; `aborted` polled) until the verdict is decided, and returns it.
  // `everyDeclarationIsIn`: see TallyInput. Where it is false, `declarationsDueMs` > 0 makes it true
  // once that long has passed (NCCL 2.27 and older: see kLateDeclarationsDueMs).
  Tally await(int64_t timeoutMs, bool everyDeclarationIsIn, const std::function<bool()>& aborted,
              int64_t declarationsDueMs = 0);
  // The verdict now (Pending until decided). Never waits.
  Tally verdict() const;
  // The same without its reason: never allocates, never waits.
  Verdict verdictNow() const noexcept;
  // The slot this process claimed (-1: none).
  int slot() const { return slot_; }
  const std::string& path() const { return path_; }

  struct Segment;  // the shared layout (rendezvous.cpp)

 private:
  Rendezvous() = default;
  TallyInput snapshot(bool everyDeclarationIsIn) const;
  bool decide(Verdict verdict, std::string_view why);  // compare-and-swap from Pending; true if it decided

  Segment* segment_ = nullptr;
  std::mutex deciding_;  // this process's threads write its slot's reason one at a time
  int slot_ = -1;
  int nRanks_ = 0;
  std::string path_;
  dev_t dev_ = 0;  // the segment's file, so that only a name still its own is removed
  ino_t ino_ = 0;
};

// The segment's path for (directory, commId, nRanks): tests look for it, and for what is left behind.
std::string rendezvousPath(const std::string& directory, uint64_t commId, int nRanks);

// Removes this user's segments in `directory` whose every claimer has ended (a job killed before its
// destructors ran leaves its segment behind). Only regular files of this user with the segment's mode
// and size are opened (never blocking: a FIFO or a link is passed over), and at most
// kSweepEntries names read: the directory is this user's own, so only this user's files count against
// it. Returns how many it removed. Run whenever a process creates a new segment.
inline constexpr int kSweepEntries = 4096;
int sweepStaleRendezvous(const std::string& directory);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The interposer: what ncclAllReduce and the lifecycle/group entry points do when they reach the
// plugin (preloaded, loaded in place of libnccl, or attached). Eligible all-reduces go to the
// symmetric kernels; everything else is forwarded to NCCL unchanged.
//
// Per-communicator state is set up lazily, at the first all-reduce that could use the symmetric
// path, by one collective exchange on that communicator, so every rank decides from the same facts.
#include <nccl.h>

#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/decision.h"
#include "core/log.h"
#include "kernels/symmetric_comm.h"
#include "plugin/nccl/nccl_real.h"
#include "plugin/process/process_context.h"
#include "plugin/stats/call_stats.h"

namespace symmem {

// What a communicator's setup agreed on. Built once; read on every call.
struct CommState {
  bool ready = false;                 // false: every call on this communicator goes to NCCL
  CommFacts facts;                    // agreed across ranks
  const Thresholds* entry = nullptr;  // the table entry for those facts
  // Its counts (null with SYMMEM_STATS=0). Declared before `symmetric`, so it ends after the kernels
  // have: the summary line then holds the last GPU times (teardown's copy), and no kernel counts into
  // a slot handed on.
  std::unique_ptr<CommCounters> counters;
  std::unique_ptr<kernels::SymmetricComm> symmetric;
  // The publisher's copies of the kernels' counts (CallStats::publishGpu). Declared after `symmetric`,
  // so it ends first: no copy runs once teardown begins.
  std::unique_ptr<StatsPublisher::Registration> publication;
  std::string why;  // why the path is on or off (logged once)
  int rank = 0;
  int device = -1;
  std::once_flag errorReported;
};

// One all-reduce as the application issued it.
struct AllReduceCall {
  const void* sendbuff;
  void* recvbuff;
  size_t count;
  ncclDataType_t datatype;
  ncclRedOp_t op;
  ncclComm_t comm;
  cudaStream_t stream;
  const void* config = nullptr;  // ncclAllReduceConfig's: NCCL gets it back with the call
  // The configuration's launch-completion event (completionEventOf): recorded on `stream` right after
  // the symmetric kernel; NCCL records it itself on a call it takes.
  cudaEvent_t completionEvent = nullptr;
  // The type and operation as the decision knows them, converted once per call.
  DataType dtype = dataTypeFromNccl(static_cast<int>(datatype));
  ReduceOp rop = reduceOpFromNccl(static_cast<int>(op));
};

// Setup in three steps, each injectable so the interposer's bookkeeping is tested without GPUs:
//   prepare: what this rank needs before any exchange and could lack alone (the exchange buffers):
//            null, with a reason, when it cannot take part;
//   agree:   this rank's arrival in the communicator's agreement (plugin/interpose/rendezvous.h) and the verdict
//            every rank reads: go, or every rank stays on NCCL;
//   setup:   the exchanges, which every rank posts once the verdict is go.
struct Arrival {
  int rank = -1;
  int nRanks = 0;
  int device = -1;
  bool takesPart = false;
  std::string why;  // why not
};
struct Agreement {
  bool go = false;
  std::string why;
  bool expected = false;  // "no" for a reason that is no news (a communicator across nodes): no notice
};
using CommPrepareFn = std::function<std::shared_ptr<void>(ncclComm_t comm, int nRanks, int device, std::string* why)>;
using CommAgreeFn =
    std::function<Agreement(ncclComm_t comm, const Arrival& mine, const std::function<bool()>& aborted)>;
using CommSetupFn =
    std::function<std::unique_ptr<CommState>(ncclComm_t comm, int rank, int nRanks, int device, void* prepared)>;
struct SetupSteps {
  CommPrepareFn prepare;  // null: nothing to prepare
  CommAgreeFn agree;      // null: every rank goes ahead (tests of the bookkeeping alone)
  CommSetupFn setup;
};

// The point of no return of one entry-point call on this thread. Once the call has done what its peers
// pair with (this rank reached a setup's agreement, a symmetric kernel may have been launched, a
// group's end has begun), a failure comes back as an error: the same call handed to NCCL then would
// run twice, or pair with nothing. A scope per call (the entry points, route); the interposer passes
// the point right before the side effect.
class PointOfNoReturn {
 public:
  PointOfNoReturn() noexcept;  // this call: not passed; an enclosing call's state is kept aside
  ~PointOfNoReturn();          // the enclosing call's state back, passed as well if this call passed
  PointOfNoReturn(const PointOfNoReturn&) = delete;
  PointOfNoReturn& operator=(const PointOfNoReturn&) = delete;
  bool passed() const noexcept;
  static void pass() noexcept;

 private:
  bool enclosing_;
};

// Whether `stream` is being captured into a CUDA graph (nullopt: cannot tell). Injectable for tests.
using CaptureProbeFn = std::function<std::optional<bool>(cudaStream_t stream)>;
std::optional<bool> streamIsCapturing(cudaStream_t stream);

class Interposer {
 public:
  // `copy`: which of the process's NCCL copies `nccl` is (plugin/interpose/nccl_copies.h); each copy's groups are
  // its own, as NCCL keeps them.
  Interposer(const RealNccl& nccl, const ProcessContext& process, SetupSteps steps,
             CaptureProbeFn captureProbe = streamIsCapturing, int copy = 0);
  Interposer(const RealNccl& nccl, const ProcessContext& process, CommSetupFn setup,
             CaptureProbeFn captureProbe = streamIsCapturing)
      : Interposer(nccl, process, SetupSteps{nullptr, nullptr, std::move(setup)}, std::move(captureProbe)) {}

  ncclResult_t allReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                         ncclComm_t comm, cudaStream_t stream);
  // NCCL 2.31's ncclAllReduceConfig: decided like allReduce when `config` asks nothing of the
  // execution (plugin/interpose/coll_config.h), otherwise NCCL's, unchanged.
  ncclResult_t allReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const void* config);
  ncclResult_t commDestroy(ncclComm_t comm);
  ncclResult_t commFinalize(ncclComm_t comm);
  ncclResult_t commAbort(ncclComm_t comm);
  ncclResult_t commRevoke(ncclComm_t comm, int flags);
  // NCCL's async error, or, when NCCL has none, ncclSystemError once a symmetric kernel of this
  // communicator timed out (inside a replayed graph too): what PyTorch's watchdog polls.
  ncclResult_t commGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
  // Groups (plugin/interpose/interposer_group.cpp; the rules: docs/transparent-use.md, "Groups"). Inside a
  // group, all-reduces the table puts on the symmetric path are held; the outermost ncclGroupEnd
  // launches them in issue order, then ends NCCL's group, then sets up the communicators that the
  // group met for the first time, together.
  ncclResult_t groupStart();
  ncclResult_t groupEnd();
  // Ends the group the way NCCL's simulation does: held all-reduces are handed to NCCL first, so that
  // it estimates the group as it was issued; nothing is launched.
  ncclResult_t groupSimulateEnd(ncclSimInfo_t* simInfo);

  size_t liveCommunicators() const;
  // Counting every call (plugin/stats/call_stats.h), from now on; set before the first call. The process's
  // interposers (one per NCCL copy) share one.
  void enableStats(std::shared_ptr<CallStats> stats) { stats_ = std::move(stats); }
  CallStats* callStats() const { return stats_.get(); }
  // At process exit: the summary line of every communicator still alive, then the statistics file goes.
  void atExit();
  // The summary lines alone (the process removes the file it shares once every interposer said them).
  void sayLiveCommunicators() const;
  // In a forked child: the statistics file is the parent's.
  void statsAfterFork() {
    if (stats_) stats_->detachInForkedChild();
  }
  // Around fork (pthread_atfork, plugin/process/process.cpp): a child must not inherit the communicator table's
  // lock held by a thread it does not have. The process takes the statistics' locks after every
  // interposer's (the order every path takes them).
  void lockForFork() { mutex_.lock(); }
  void unlockAfterFork() { mutex_.unlock(); }
  // In the child the lock is made anew: glibc's rwlock knows its writer by thread id, which the
  // child's one thread no longer has, so an unlock there would not release it.
  void renewAfterFork() { new (&mutex_) std::shared_mutex; }
  const RealNccl& nccl() const { return nccl_; }

 private:
  struct HeldAllReduce;
  ncclResult_t forward(const AllReduceCall& c) const;
  ncclResult_t route(const AllReduceCall& c);
  // The kernel the table picks for this call on a set-up communicator, or nullopt (NCCL's call);
  // `nccl`: which NCCL route the call then takes (a band of the table, or NCCL untouched).
  std::optional<kernels::KernelChoice> symmetricChoice(const AllReduceCall& c, const CommState& state,
                                                       stats::Route* nccl = nullptr) const;
  // Counts the call (plugin/stats/call_stats.h): on `state`'s counters, or, before the communicator is set
  // up (state null), on counters kept for it until then. `captured`: nullopt asks the stream.
  void countCall(const AllReduceCall& c, CommState* state, stats::Route route,
                 std::optional<bool> captured = std::nullopt);
  CommCounters* earlyCounters(ncclComm_t comm);
  // The kernel for this call on `state` (null: not set up), or nullopt, the call then counted on the
  // NCCL route it takes (before setup, path off, or the table's).
  std::optional<kernels::KernelChoice> kernelFor(const AllReduceCall& c, CommState* state);
  // The counters a new state takes over: those kept since the communicator's first call, or new ones.
  void attachCounters(ncclComm_t comm, CommState& state, int nRanks);
  // Launches the symmetric kernel, then records the call's completion event after it; a call the
  // kernels cannot take goes to NCCL. Passes the point of no return first.
  ncclResult_t launch(const AllReduceCall& c, CommState& state, kernels::KernelChoice kernel);
  // A call that threw past its point of no return: ncclInternalError, with the communicator's one WARN.
  ncclResult_t failedPastPointOfNoReturn(const AllReduceCall& c, const char* what) const noexcept;
  struct ThreadGroup;
  ThreadGroup& group() const;  // this thread's group on this interposer's NCCL copy
  bool inGroup() const;        // this thread is inside ncclGroupStart/End
  ncclResult_t hold(const AllReduceCall& c);
  ncclResult_t endOutermostGroup();
  // Sets up every communicator in `comms`: one thread per GPU, so that one thread driving several ranks
  // (ncclCommInitAll, nccl-tests -g N) never waits for an exchange it has yet to post itself; on one
  // GPU in issue order, so that every process posts that GPU's exchanges in the same order.
  void setUpTogether(const std::vector<std::pair<ncclComm_t, cudaStream_t>>& comms);
  std::shared_ptr<CommState> find(ncclComm_t comm) const;
  // Whether setup may run for a call on `stream` now: never inside a capture. A probe that fails
  // (nullopt) still sets up, as a rank that cannot take part: its peers must hear it.
  std::optional<bool> captureState(cudaStream_t stream) const { return captureProbe_(stream); }
  // `cannotTakePart` (non-null): this rank still reaches the agreement, saying no, and why.
  std::shared_ptr<CommState> setUp(ncclComm_t comm, cudaStream_t stream, const char* cannotTakePart = nullptr);
  // What this rank brings to the agreement: its queries answered, its exchange buffers prepared.
  Arrival arrival(ncclComm_t comm, bool captureKnown, std::shared_ptr<void>* prepared);
  bool abortRequested(ncclComm_t comm) const;
  void noteAbort(ncclComm_t comm);
  void clearAbort(ncclComm_t comm);
  // Drops the communicator's state; its symmetric path is freed once its own kernels have ended
  // (kernels::SymmetricComm's destructor). `abort` (abort, revoke): first every wait of those kernels
  // is stopped, so they end within about a millisecond even when a peer is dead.
  void forget(ncclComm_t comm, bool abort);
  // The one WARN of a communicator whose kernel timed out, naming the rank it waited for.
  void warnTimeoutOnce(ncclComm_t comm, CommState& state) const;

  const RealNccl& nccl_;
  const ProcessContext& process_;
  SetupSteps steps_;
  CaptureProbeFn captureProbe_;
  // Communicators aborted while their setup waits in the agreement: the wait ends at once.
  mutable std::mutex abortMutex_;
  std::vector<ncclComm_t> aborted_;
  int copy_ = 0;
  std::shared_ptr<CallStats> stats_;  // before the states, which hold leases on its slots
  mutable std::shared_mutex mutex_;
  // shared_ptr: a call in flight on one thread keeps the state alive while another thread (a watchdog
  // calling ncclCommAbort, say) drops it.
  std::unordered_map<ncclComm_t, std::shared_ptr<CommState>> comms_;
  // Counters of communicators met before their setup (calls NCCL took), handed to their state at setup.
  std::unordered_map<ncclComm_t, std::unique_ptr<CommCounters>> early_;
};

// The real steps: the exchange buffers (prepare), the host-local agreement (agree), then the facts
// and buffers exchanged with pncclAllGather (setup), for the communicators of NCCL copy `copy`, whose
// real entry points `nccl` are. plugin/interpose/comm_setup.cpp.
SetupSteps symmetricSetupSteps(const RealNccl& nccl, const ProcessContext& process, int copy = 0);

}  // namespace symmem

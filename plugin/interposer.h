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

#include "core/decision.h"
#include "core/log.h"
#include "kernels/symmetric_comm.h"
#include "plugin/nccl_real.h"
#include "plugin/process_context.h"

namespace symmem {

// What a communicator's setup agreed on. Built once; read on every call.
struct CommState {
  bool ready = false;                 // false: every call on this communicator goes to NCCL
  CommFacts facts;                    // agreed across ranks
  const Thresholds* entry = nullptr;  // the table entry for those facts
  std::unique_ptr<kernels::SymmetricComm> symmetric;
  std::string why;  // why the path is on or off (logged once)
  int rank = 0;
  int device = -1;
  std::once_flag errorReported;
};

// The collective setup step; injectable so the interposer's bookkeeping is tested without GPUs.
using CommSetupFn = std::function<std::unique_ptr<CommState>(ncclComm_t comm, int rank, int nRanks, int device)>;

// Whether `stream` is being captured into a CUDA graph (nullopt: cannot tell). Injectable for tests.
using CaptureProbeFn = std::function<std::optional<bool>(cudaStream_t stream)>;
std::optional<bool> streamIsCapturing(cudaStream_t stream);

class Interposer {
 public:
  Interposer(const RealNccl& nccl, const ProcessContext& process, CommSetupFn setup,
             CaptureProbeFn captureProbe = streamIsCapturing);

  ncclResult_t allReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                         ncclComm_t comm, cudaStream_t stream);
  ncclResult_t commDestroy(ncclComm_t comm);
  ncclResult_t commFinalize(ncclComm_t comm);
  ncclResult_t commAbort(ncclComm_t comm);
  ncclResult_t commRevoke(ncclComm_t comm, int flags);
  // NCCL's async error, or, when NCCL has none, ncclSystemError once a symmetric kernel of this
  // communicator timed out (inside a replayed graph too): what PyTorch's watchdog polls.
  ncclResult_t commGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
  ncclResult_t groupStart();
  ncclResult_t groupEnd();

  size_t liveCommunicators() const;
  // Around fork (pthread_atfork): a child must not inherit the communicator table's lock held by a
  // thread it does not have. The plugin's one interposer registers them (plugin/process.cpp).
  void lockForFork() { mutex_.lock(); }
  void unlockAfterFork() { mutex_.unlock(); }
  // In the child the lock is made anew: glibc's rwlock knows its writer by thread id, which the
  // child's one thread no longer has, so an unlock there would not release it.
  void renewAfterFork() { new (&mutex_) std::shared_mutex; }
  const RealNccl& nccl() const { return nccl_; }

 private:
  ncclResult_t forward(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                       ncclComm_t comm, cudaStream_t stream) {
    SYMMEM_TRACE(kLogColl, "allreduce %zu elements on comm %p: NCCL", count, static_cast<void*>(comm));
    return nccl_.allReduce(sendbuff, recvbuff, count, datatype, op, comm, stream);
  }
  std::shared_ptr<CommState> find(ncclComm_t comm) const;
  std::shared_ptr<CommState> setUp(ncclComm_t comm, cudaStream_t stream);
  // Drops the communicator's state; its symmetric path is freed once its own kernels have ended
  // (kernels::SymmetricComm's destructor). `abort` (abort, revoke): first every wait of those kernels
  // is stopped, so they end within about a millisecond even when a peer is dead.
  void forget(ncclComm_t comm, bool abort);
  // The one WARN of a communicator whose kernel timed out, naming the rank it waited for.
  void warnTimeoutOnce(ncclComm_t comm, CommState& state) const;

  const RealNccl& nccl_;
  const ProcessContext& process_;
  CommSetupFn setup_;
  CaptureProbeFn captureProbe_;
  mutable std::shared_mutex mutex_;
  // shared_ptr: a call in flight on one thread keeps the state alive while another thread (a watchdog
  // calling ncclCommAbort, say) drops it.
  std::unordered_map<ncclComm_t, std::shared_ptr<CommState>> comms_;
};

// The real setup: exchange facts with pncclAllGather, agree, build the symmetric buffers.
std::unique_ptr<CommState> setUpSymmetricComm(const RealNccl& nccl, const ProcessContext& process, ncclComm_t comm,
                                              int rank, int nRanks, int device);

}  // namespace symmem

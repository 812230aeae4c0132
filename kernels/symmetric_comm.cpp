// SPDX-License-Identifier: Apache-2.0
// SymmetricComm: the host object of one communicator's symmetric path. Setup (buffer, IPC exchange,
// peer mappings, P2P check) is in symmetric_setup.cpp, call order in symmetric_order.cpp, teardown in
// symmetric_teardown.cpp; this file holds the per-call path and the host's error and abort words.
#include "kernels/symmetric_comm.h"

#include "core/decision.h"
#include "core/log.h"
#include "kernels/allreduce_launch.h"
#include "kernels/scoped_device.h"
#include "kernels/symmetric_comm_impl.h"

namespace symmem::kernels {

size_t symmetricBufferBytes(const SymmetricConfig& config) {
  return makeLayout(config.nRanks, config.oneShotMaxBytes, config.twoShotMaxBytes, config.halves).totalBytes;
}

const char* statusName(Status status) {
  switch (status) {
    case Status::Ok:
      return "ok";
    case Status::Unsupported:
      return "unsupported";
    case Status::PeerTimeout:
      return "peer timeout";
    case Status::CudaError:
      return "CUDA error";
  }
  return "unknown";
}

Status SymmetricCommImpl::deviceStatus() const {
  if (errorHost_ == nullptr) return Status::Ok;
  return errorHost_[kHostError] == kDevicePeerTimeout ? Status::PeerTimeout : Status::Ok;
}

int SymmetricCommImpl::waitedRank() const {
  return errorHost_ == nullptr ? -1 : static_cast<int>(errorHost_[kHostWaitedRank]);
}

void SymmetricCommImpl::abort() {
  if (errorHost_ == nullptr) return;
  errorHost_[kHostAbort] = 1;  // mapped pinned memory: the kernels' next check sees it
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

Status SymmetricComm::recordEvent(cudaEvent_t event, cudaStream_t stream) {
  const ScopedDevice onDevice(config().device, ScopedDevice::Switch::WhenOther);
  if (cudaEventRecord(event, stream) == cudaSuccess) return Status::Ok;
  cudaGetLastError();  // the caller reports it; a later CUDA call must not find it
  return Status::CudaError;
}

Status SymmetricCommImpl::allReduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                                    KernelChoice kernel, cudaStream_t stream, bool* captured) {
  // The caller says it (one WARN, naming waitedRank()): the interposer, or a tool.
  if (deviceStatus() != Status::Ok) return Status::PeerTimeout;
  const size_t elemBytes = dataTypeSize(dtype);
  if (count == 0 || !symmetricSupports(dtype, op)) return Status::Unsupported;
  if (kernel.variant == SymVariant::Halves && !view_.layout.halves) return Status::Unsupported;
  const size_t bytes = count * elemBytes;
  const bool twoShot = kernel.algorithm == Algorithm::TwoShot;
  if (twoShot ? !twoShotFits(view_.layout, bytes) : !oneShotFits(view_.layout, bytes)) return Status::Unsupported;

  const cudaError_t err = launchInCallOrder(send, recv, count, dtype, op, kernel, stream, captured);
  if (err != cudaSuccess) {
    SYMMEM_WARN("symmetric all-reduce: kernel launch failed on rank %d: %s", config_.rank, cudaGetErrorString(err));
    return Status::CudaError;
  }
  return Status::Ok;
}

}  // namespace symmem::kernels

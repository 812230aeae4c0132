// SPDX-License-Identifier: Apache-2.0
// SymmetricComm: the host object of one communicator's symmetric path. Setup (buffer, IPC exchange,
// peer mappings, P2P check) is in symmetric_setup.cpp; this file holds the per-call path.
#include "kernels/symmetric_comm.h"

#include "core/decision.h"
#include "core/log.h"
#include "kernels/allreduce_launch.h"
#include "kernels/scoped_device.h"
#include "kernels/symmetric_comm_impl.h"

namespace symmem::kernels {

size_t symmetricBufferBytes(const SymmetricConfig& config) {
  return makeLayout(config.nRanks, config.oneShotMaxBytes, config.twoShotMaxBytes).totalBytes;
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
  return errorHost_[0] == kDevicePeerTimeout ? Status::PeerTimeout : Status::Ok;
}

Status SymmetricCommImpl::allReduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                                    Algorithm algorithm, cudaStream_t stream) {
  if (deviceStatus() != Status::Ok) {
    if (!timeoutReported_.exchange(true)) {
      SYMMEM_WARN(
          "symmetric all-reduce: rank %d timed out after %lld ms waiting for rank %u; this communicator's "
          "symmetric path stays off",
          config_.rank, static_cast<long long>(config_.timeoutMs), errorHost_[1]);
    }
    return Status::PeerTimeout;
  }
  const size_t elemBytes = dataTypeSize(dtype);
  if (count == 0 || !symmetricSupports(dtype, op)) return Status::Unsupported;
  const size_t bytes = count * elemBytes;
  const bool twoShot = algorithm == Algorithm::TwoShot;
  if (twoShot ? !twoShotFits(view_.layout, bytes) : !oneShotFits(view_.layout, bytes)) return Status::Unsupported;

  const cudaError_t err = launchInCallOrder(send, recv, count, dtype, op, twoShot, stream);
  if (err != cudaSuccess) {
    SYMMEM_WARN("symmetric all-reduce: kernel launch failed on rank %d: %s", config_.rank, cudaGetErrorString(err));
    return Status::CudaError;
  }
  return Status::Ok;
}

// Calls of one communicator run in the order they are made, whatever stream each is on, as NCCL's
// do: two of them running at once would share round buffers. An eager call on another stream than
// the previous eager call waits for that call (an event recorded after every eager launch). Captured
// calls are left alone: they run when the graph is replayed, ordered by the graph and its stream.
cudaError_t SymmetricCommImpl::launchInCallOrder(const void* send, void* recv, size_t count, DataType dtype,
                                                 ReduceOp op, bool twoShot, cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusActive;
  if (config_.orderStreams && cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    cudaGetLastError();
    capture = cudaStreamCaptureStatusActive;  // cannot tell: touch no event
  }
  const bool ordered = capture == cudaStreamCaptureStatusNone;  // an eager call, ordering on

  const ScopedDevice onDevice(config_.device, ScopedDevice::Switch::WhenOther);
  cudaError_t err = cudaSuccess;
  if (ordered && haveLast_ && stream != lastStream_) err = cudaStreamWaitEvent(stream, lastDone_, 0);
  if (err == cudaSuccess)
    err = twoShot ? launchTwoShot(view_, send, recv, count, dtype, op, launch_, stream)
                  : launchOneShot(view_, send, recv, count, dtype, op, launch_, stream);
  if (err == cudaSuccess && ordered) {
    // The call is launched whatever happens here; without the event the next call on another stream
    // is ordered only by the application.
    haveLast_ = cudaEventRecord(lastDone_, stream) == cudaSuccess;
    if (!haveLast_) cudaGetLastError();
    lastStream_ = stream;
  }
  return err;
}

}  // namespace symmem::kernels

// SymmetricComm: the host object of one communicator's symmetric path. Setup (buffer, IPC exchange,
// peer mappings, P2P check) is in symmetric_setup.cpp; this file holds the per-call path.
#include "kernels/symmetric_comm.h"

#include "kernels/allreduce_launch.h"
#include "kernels/symmetric_comm_impl.h"
#include "core/log.h"

namespace symmem::kernels {

bool kernelsSupport(DataType dtype, ReduceOp op) {
  const bool typeOk = dtype == DataType::Float32 || dtype == DataType::Float16 || dtype == DataType::Bfloat16;
  const bool opOk = op == ReduceOp::Sum || op == ReduceOp::Prod || op == ReduceOp::Max || op == ReduceOp::Min;
  return typeOk && opOk;
}

size_t symmetricBufferBytes(const SymmetricConfig& config) {
  return makeLayout(config.nRanks, config.oneShotMaxBytes, config.twoShotMaxBytes).totalBytes;
}

const char* statusName(Status status) {
  switch (status) {
    case Status::Ok: return "ok";
    case Status::Unsupported: return "unsupported";
    case Status::PeerTimeout: return "peer timeout";
    case Status::CudaError: return "CUDA error";
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
      SYMMEM_WARN("symmetric all-reduce: rank %d timed out after %lld ms waiting for rank %u; this communicator's "
                  "symmetric path stays off",
                  config_.rank, static_cast<long long>(config_.timeoutMs), errorHost_[1]);
    }
    return Status::PeerTimeout;
  }
  const size_t elemBytes = dataTypeSize(dtype);
  if (count == 0 || !kernelsSupport(dtype, op)) return Status::Unsupported;
  const size_t bytes = count * elemBytes;
  const bool twoShot = algorithm == Algorithm::TwoShot;
  if (twoShot ? !twoShotFits(view_.layout, bytes) : !oneShotFits(view_.layout, bytes)) return Status::Unsupported;

  // Calls of one communicator run in the order they are made, whatever stream each is on, as NCCL's
  // do: two of them running at once would share round buffers. An eager call on another stream than
  // the previous eager call waits for that call (an event recorded after every eager launch). Captured
  // calls are left alone: they run when the graph is replayed, ordered by the graph and its stream.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusActive;
  if (config_.orderStreams && cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    cudaGetLastError();
    capture = cudaStreamCaptureStatusActive;  // cannot tell: touch no event
  }
  const bool ordered = capture == cudaStreamCaptureStatusNone;  // an eager call, ordering on

  int current = -1;
  cudaGetDevice(&current);
  if (current != config_.device) cudaSetDevice(config_.device);
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
  if (current != config_.device && current >= 0) cudaSetDevice(current);
  if (err != cudaSuccess) {
    SYMMEM_WARN("symmetric all-reduce: kernel launch failed on rank %d: %s", config_.rank, cudaGetErrorString(err));
    return Status::CudaError;
  }
  return Status::Ok;
}

}  // namespace symmem::kernels

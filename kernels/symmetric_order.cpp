// SPDX-License-Identifier: Apache-2.0
// Calls of one communicator run in the order they are made, whatever their streams, eager or
// captured, and whatever mix of graphs is replayed at once, as NCCL's do (NCCL_GRAPH_MIXING_SUPPORT):
// two calls running at once would share round buffers, and peers would pair them differently.
//
// One event, serial_, is recorded after every call: by the host after an eager launch; in a capture,
// by one event record node that follows the capture's last call of this communicator (each replay
// records it once, after that call; the calls of one capture are chained, so the last one to be
// captured is the last to complete). Every call waits for it first:
//  - eager: cudaStreamWaitEvent, when the stream differs from the last eager call's, and always once
//    a graph may have recorded it (a replay the host cannot see);
//  - the first call of this communicator in a capture: an external event wait node, so each replay
//    waits for whatever was launched before it, eager calls and other graphs' replays alike;
//  - a later call of the same capture: after the previous one (the stream orders it, or, on a
//    parallel branch, an added edge from the previous call's kernel).
// The record node hangs off the last kernel and stays off the application's stream: what the
// application captures after a call depends on the kernel only. When the next call is captured, the
// node's edge moves to that call's kernel. (A record node per call cost 0.16 us per call at 2 ranks
// sharing one H200 and grew with the number of ranks: docs/kernels.md, "Fixed cost".)
#include "core/log.h"
#include "kernels/scoped_device.h"
#include "kernels/symmetric_comm_impl.h"

namespace symmem::kernels {

namespace {
constexpr size_t kMaxChains = 16;  // captures of one communicator in progress at once
}

cudaError_t SymmetricCommImpl::launchKernel(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                                            KernelChoice kernel, cudaStream_t stream) {
  LaunchOptions options = launch_;
  if (statsPeriod_.load(std::memory_order_relaxed) != 0)
    options.clocked = clockThisCall(kernel, static_cast<uint64_t>(count) * dataTypeSize(dtype));
  return kernel.algorithm == Algorithm::TwoShot
             ? launchTwoShot(view_, send, recv, count, dtype, op, kernel.variant, options, stream)
             : launchOneShot(view_, send, recv, count, dtype, op, kernel.variant, options, stream);
}

cudaError_t SymmetricCommImpl::launchInCallOrder(const void* send, void* recv, size_t count, DataType dtype,
                                                 ReduceOp op, KernelChoice kernel, cudaStream_t stream,
                                                 bool* captured) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  unsigned long long captureId = 0;
  cudaGraph_t graph = nullptr;
  cudaError_t err = cudaStreamGetCaptureInfo(stream, &capture, &captureId, &graph);
  if (err != cudaSuccess) return err;
  if (capture == cudaStreamCaptureStatusInvalidated) return cudaErrorStreamCaptureInvalidated;
  if (captured != nullptr) *captured = capture != cudaStreamCaptureStatusNone;
  const ScopedDevice onDevice(config_.device, ScopedDevice::Switch::WhenOther);
  const std::lock_guard<std::mutex> lock(orderMutex_);
  if (capture == cudaStreamCaptureStatusNone) return launchEager(send, recv, count, dtype, op, kernel, stream);
  return launchCaptured(send, recv, count, dtype, op, kernel, stream, captureId, graph);
}

cudaError_t SymmetricCommImpl::launchEager(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                                           KernelChoice kernel, cudaStream_t stream) {
  cudaError_t err = cudaSuccess;
  if (config_.orderStreams && (everCaptured_ || (haveLast_ && stream != lastStream_)))
    err = cudaStreamWaitEvent(stream, serial_, 0);
  if (err == cudaSuccess) err = launchKernel(send, recv, count, dtype, op, kernel, stream);
  if (err != cudaSuccess) return err;
  // The call is launched whatever happens here. Without the record, the next call on another stream
  // is ordered only by the application, and teardown waits for the last call that recorded.
  if (cudaEventRecord(serial_, stream) == cudaSuccess) {
    haveLast_ = true;
    lastStream_ = stream;
  } else {
    cudaGetLastError();
    SYMMEM_WARN("symmetric all-reduce: rank %d could not record its call-order event", config_.rank);
  }
  return cudaSuccess;
}

SymmetricCommImpl::CaptureChain& SymmetricCommImpl::chainFor(unsigned long long captureId) {
  for (CaptureChain& c : chains_)
    if (c.id == captureId) return c;
  if (chains_.size() >= kMaxChains) chains_.erase(chains_.begin());  // the oldest capture has ended
  chains_.push_back(CaptureChain{captureId, nullptr, nullptr, nullptr});
  return chains_.back();
}

cudaError_t SymmetricCommImpl::launchCaptured(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                                              KernelChoice kernel, cudaStream_t stream, unsigned long long captureId,
                                              cudaGraph_t graph) {
  if (!config_.orderStreams) return launchKernel(send, recv, count, dtype, op, kernel, stream);
  everCaptured_ = true;
  CaptureChain& chain = chainFor(captureId);
  cudaError_t err = cudaSuccess;
  if (chain.lastKernel == nullptr) {
    // First call of this communicator in this capture: each replay waits for what came before it.
    err = cudaStreamWaitEvent(stream, serial_, cudaEventWaitExternal);
  } else if (stream != chain.lastStream) {
    // A parallel branch of the same capture: after the previous call's kernel.
    err = cudaStreamUpdateCaptureDependencies(stream, &chain.lastKernel, nullptr, 1, cudaStreamAddCaptureDependencies);
  }
  if (err == cudaSuccess) err = launchKernel(send, recv, count, dtype, op, kernel, stream);
  if (err != cudaSuccess) return err;

  // The kernel just captured is the stream's one dependency now. The capture's record node follows
  // it, off the stream: moved from the previous call's kernel (edges may change during a capture,
  // nodes may not be removed), or added at the capture's first call.
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaGraphNode_t* deps = nullptr;
  const cudaGraphEdgeData* edges = nullptr;
  size_t numDeps = 0;
  err = cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &deps, &edges, &numDeps);
  if (err != cudaSuccess || numDeps != 1) return err != cudaSuccess ? err : cudaErrorStreamCaptureUnsupported;
  const cudaGraphNode_t kernelNode = deps[0];
  cudaGraphNode_t record = chain.lastRecord;
  if (record != nullptr && (config_.costSwitches & kRecordEveryCall) == 0u) {
    // The new edge first: should taking the old one away fail, the record still follows the new
    // kernel (which runs after the old one anyway); the other order could leave it a root of the graph,
    // recorded at the start of every replay.
    err = cudaGraphAddDependencies(graph, &kernelNode, &record, nullptr, 1);
    if (err == cudaSuccess && cudaGraphRemoveDependencies(graph, &chain.lastKernel, &record, nullptr, 1) != cudaSuccess)
      cudaGetLastError();  // a redundant edge: correct, one dependency more
  } else {
    // The earlier form (benchmark only): a record node per call, each after the previous one.
    cudaGraphNode_t after[2] = {kernelNode, chain.lastRecord};
    err = cudaGraphAddEventRecordNode(&record, graph, after, chain.lastRecord ? 2 : 1, serial_);
  }
  if (err != cudaSuccess) return err;
  chain.lastKernel = kernelNode;
  chain.lastRecord = record;
  chain.lastStream = stream;
  return cudaSuccess;
}

}  // namespace symmem::kernels

// SPDX-License-Identifier: Apache-2.0
// The kernels' statistics on the host: which calls run the clocked kernel instances, and the copies
// of their running entries (DeviceControl::stats, kernel_clock.cuh) and of each algorithm's round
// (block 0's record: its executions on this rank) out of device memory.
//
// Which calls are timed is the host's choice, per call, not the kernels': a clocked instance costs
// even when its clock does not run (the two-shot kernels +0.1 us per call on one H200: code
// placement), so the calls not timed run the plain instances, unchanged. One call in the period of
// each kernel kind and size bucket is timed, the first always, so every size that runs has a time. A
// captured call is chosen once, at capture: each replay of a graph times the same calls.
//
// A copy runs on a stream of this communicator's own (non-blocking: nothing of the application's is
// ordered with it) into pinned memory, in relaxed capture mode (the application may be capturing a
// graph on another thread), and is waited for by polling, bounded. Copies and teardown take one lock,
// so teardown never frees what a copy reads; a copy that never finished keeps that memory for good.
#include <chrono>
#include <thread>

#include "core/call_stats_segment.h"
#include "kernels/capture_mode.h"
#include "kernels/scoped_device.h"
#include "kernels/symmetric_comm_impl.h"

namespace symmem::kernels {

namespace {
constexpr int64_t kTeardownCopyMs = 2000;  // the kernels have ended: the copy is one small transfer
}  // namespace

bool SymmetricCommImpl::publishKernelStats(stats::GpuCounts* host, uint32_t samplePeriod) {
  if (host == nullptr || control_ == nullptr) return false;
  if (samplePeriod == 0 || samplePeriod > (1u << 16) || (samplePeriod & (samplePeriod - 1)) != 0) return false;
  std::lock_guard<std::mutex> lock(statsMutex_);
  if (statsHost_ != nullptr) return false;  // once
  const RelaxedCaptureScope relaxed;
  const ScopedDevice onDevice(config_.device, ScopedDevice::Switch::WhenOther);
  void* staging = nullptr;
  if (cudaMallocHost(&staging, sizeof(StatsStaging)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    cudaGetLastError();
    cudaFreeHost(staging);
    return false;
  }
  statsStaging_ = static_cast<StatsStaging*>(staging);
  statsStream_ = stream;
  statsHost_ = host;
  statsPeriod_.store(samplePeriod, std::memory_order_relaxed);
  return true;
}

bool SymmetricCommImpl::clockThisCall(KernelChoice kernel, uint64_t bytes) {
  const int kind = stats::kernelKind(kernel.algorithm == Algorithm::TwoShot, static_cast<int>(kernel.variant));
  uint32_t& calls = statsCalls_[kind][stats::sizeBucket(bytes)];
  const bool clocked = (calls & (statsPeriod_.load(std::memory_order_relaxed) - 1)) == 0;  // a power of two
  ++calls;
  return clocked;
}

bool SymmetricCommImpl::copyKernelStats(stats::GpuCounts* to, int64_t boundMs) {
  std::lock_guard<std::mutex> lock(statsMutex_);
  return copyLocked(to, boundMs);
}

bool SymmetricCommImpl::copyLocked(stats::GpuCounts* to, int64_t boundMs) {
  if (to == nullptr || statsStaging_ == nullptr || control_ == nullptr || statsStuck_) return false;
  const RelaxedCaptureScope relaxed;
  const ScopedDevice onDevice(config_.device, ScopedDevice::Switch::WhenOther);
  StatsStaging* s = statsStaging_;
  // Rounds first: a copy then never shows more timed executions than executions.
  if (cudaMemcpyAsync(&s->rounds[0], &control_->oneShot[0].round, sizeof(uint64_t), cudaMemcpyDeviceToHost,
                      statsStream_) != cudaSuccess ||
      cudaMemcpyAsync(&s->rounds[1], &control_->twoShot[0].round, sizeof(uint64_t), cudaMemcpyDeviceToHost,
                      statsStream_) != cudaSuccess ||
      cudaMemcpyAsync(s->entries, control_->stats, sizeof(s->entries), cudaMemcpyDeviceToHost, statsStream_) !=
          cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(boundMs);
  for (;;) {
    const cudaError_t q = cudaStreamQuery(statsStream_);
    if (q == cudaSuccess) break;
    if (q != cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      statsStuck_ = true;  // the transfer may still land: its memory stays
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  for (int a = 0; a < stats::kAlgorithms; ++a) to->runs[a] = s->rounds[a];
  for (int k = 0; k < stats::kKernelKinds; ++k)
    for (int b = 0; b < stats::kBuckets; ++b) to->timed[k][b] = toKernelEntry(s->entries[k][b]);
  return true;
}

bool SymmetricCommImpl::finishKernelStats() {
  std::lock_guard<std::mutex> lock(statsMutex_);
  if (statsStaging_ == nullptr) return true;
  if (statsStuck_) return false;
  stats::GpuCounts last;
  if (copyLocked(&last, kTeardownCopyMs)) stats::storeGpuCounts(statsHost_, last);
  if (statsStuck_) return false;
  const RelaxedCaptureScope relaxed;
  cudaStreamDestroy(statsStream_);
  cudaFreeHost(statsStaging_);
  cudaGetLastError();
  statsStream_ = nullptr;
  statsStaging_ = nullptr;
  return true;
}

}  // namespace symmem::kernels

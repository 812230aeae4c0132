// SPDX-License-Identifier: Apache-2.0
// The kernels' statistics on the host: the switch that launches the clocked kernel instances, and
// the copies of their running entries (DeviceControl::stats, kernel_clock.cuh) out of device memory.
//
// A copy runs on a stream of this communicator's own (non-blocking: nothing of the application's is
// ordered with it) into pinned memory, in relaxed capture mode (the application may be capturing a
// graph on another thread), and is waited for by polling, bounded. Copies and teardown take one lock,
// so teardown never frees what a copy reads; a copy that never finished keeps that memory for good.
#include <chrono>
#include <thread>

#include "kernels/capture_mode.h"
#include "kernels/scoped_device.h"
#include "kernels/symmetric_comm_impl.h"

namespace symmem::kernels {

namespace {
constexpr int64_t kTeardownCopyMs = 2000;  // the kernels have ended: the copy is one small transfer
}  // namespace

bool SymmetricCommImpl::publishKernelStats(stats::KernelEntry* host, bool timed) {
  if (host == nullptr || control_ == nullptr) return false;
  std::lock_guard<std::mutex> lock(statsMutex_);
  if (statsHost_ != nullptr) return false;  // once
  const RelaxedCaptureScope relaxed;
  const ScopedDevice onDevice(config_.device, ScopedDevice::Switch::WhenOther);
  void* staging = nullptr;
  if (cudaMallocHost(&staging, sizeof(control_->stats)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    cudaGetLastError();
    cudaFreeHost(staging);
    return false;
  }
  statsStaging_ = static_cast<RunningEntry*>(staging);
  statsStream_ = stream;
  statsHost_ = host;
  view_.statsTimed = timed ? 1u : 0u;
  view_.statsOn = 1u;
  return true;
}

bool SymmetricCommImpl::copyKernelStats(stats::KernelEntry* to, int64_t boundMs) {
  std::lock_guard<std::mutex> lock(statsMutex_);
  return copyLocked(to, boundMs);
}

bool SymmetricCommImpl::copyLocked(stats::KernelEntry* to, int64_t boundMs) {
  if (to == nullptr || statsStaging_ == nullptr || control_ == nullptr || statsStuck_) return false;
  const RelaxedCaptureScope relaxed;
  const ScopedDevice onDevice(config_.device, ScopedDevice::Switch::WhenOther);
  if (cudaMemcpyAsync(statsStaging_, control_->stats, sizeof(control_->stats), cudaMemcpyDeviceToHost, statsStream_) !=
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
  constexpr int kEntries = stats::kKernelKinds * stats::kBuckets;
  for (int i = 0; i < kEntries; ++i) to[i] = toKernelEntry(statsStaging_[i]);
  return true;
}

bool SymmetricCommImpl::finishKernelStats() {
  std::lock_guard<std::mutex> lock(statsMutex_);
  if (statsStaging_ == nullptr) return true;
  if (statsStuck_) return false;
  constexpr int kEntries = stats::kKernelKinds * stats::kBuckets;
  stats::KernelEntry last[kEntries];
  if (copyLocked(last, kTeardownCopyMs)) {
    // Entry by entry, count first (a reader checks the count before and after its copy and that the
    // values fit together: core/call_stats_segment.cpp).
    for (int i = 0; i < kEntries; ++i) {
      stats::KernelEntry* e = statsHost_ + i;
      __atomic_store_n(&e->count, last[i].count, __ATOMIC_RELAXED);
      __atomic_store_n(&e->sumNs, last[i].sumNs, __ATOMIC_RELAXED);
      __atomic_store_n(&e->minNs, last[i].minNs, __ATOMIC_RELAXED);
      __atomic_store_n(&e->maxNs, last[i].maxNs, __ATOMIC_RELAXED);
    }
  }
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

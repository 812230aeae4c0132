// SPDX-License-Identifier: Apache-2.0
// Teardown of a communicator's symmetric path: wait for its own work only, then free.
//
// Every call of the communicator, eager or replayed from a graph, ends by recording serial_
// (symmetric_order.cpp) and calls run in call order, so serial_ completing means all of them have
// ended. The wait polls that event, in relaxed capture mode, bounded: by the kernels' own timeout
// (they end by then whatever their peers do), or, after abort(), by a short bound (they stop within
// about a millisecond). Nothing here waits for the device as a whole, and nothing is freed while
// this communicator's kernels may still run: past the bound the memory is left allocated, with a
// WARN.
#include <chrono>
#include <thread>

#include "core/log.h"
#include "kernels/capture_mode.h"
#include "kernels/scoped_device.h"
#include "kernels/symmetric_comm_impl.h"

namespace symmem::kernels {

namespace {
constexpr int64_t kSlackMs = 2000;       // past the kernels' own timeout
constexpr int64_t kAfterAbortMs = 2000;  // kernels stop within about a millisecond of abort()
}  // namespace

SymmetricCommImpl::~SymmetricCommImpl() { release(); }

bool SymmetricCommImpl::waitForOwnWork(int64_t boundMs) {
  if (serial_ == nullptr) return true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(boundMs);
  for (;;) {
    const cudaError_t q = cudaEventQuery(serial_);
    if (q == cudaSuccess) return true;
    if (q != cudaErrorNotReady) {
      // The context is broken (a sticky error): no kernel of it runs any more.
      cudaGetLastError();
      return true;
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void SymmetricCommImpl::release() {
  const RelaxedCaptureScope relaxed;  // first: the device switch below runs relaxed too
  const ScopedDevice onDevice(config_.device);
  const bool aborted = errorHost_ != nullptr && errorHost_[kHostAbort] != 0;
  const int64_t boundMs = aborted ? kAfterAbortMs : config_.timeoutMs + kSlackMs;
  if (!waitForOwnWork(boundMs)) {
    SYMMEM_WARN(
        "symmetric teardown: rank %d's all-reduces were still running %lld ms after %s; their buffers (%zu bytes "
        "on device %d) are left allocated",
        config_.rank, static_cast<long long>(boundMs), aborted ? "the abort" : "teardown began",
        view_.layout.totalBytes, config_.device);
  } else {
    // The entries hold still now: their last copy, then the copy's own stream and memory. A copy that
    // never finished (copyKernelStats) keeps the device memory it reads allocated.
    const bool statsCopyable = finishKernelStats();
    for (char* p : ipcOpened_) cudaIpcCloseMemHandle(p);
    if (localBuffer_ != nullptr) cudaFree(localBuffer_);
    if (control_ != nullptr && statsCopyable) cudaFree(control_);
    if (errorHost_ != nullptr) cudaFreeHost(const_cast<uint32_t*>(errorHost_));
    if (serial_ != nullptr) cudaEventDestroy(serial_);
  }
  ipcOpened_.clear();
  serial_ = nullptr;
  haveLast_ = false;
  localBuffer_ = nullptr;
  control_ = nullptr;
  errorHost_ = nullptr;
  cudaGetLastError();
}

}  // namespace symmem::kernels

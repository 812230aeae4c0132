// SPDX-License-Identifier: Apache-2.0
#pragma once
// The relaxed stream-capture mode for the calling thread, for as long as the scope lives: setup and
// teardown allocate, free and wait on their own work while the application may be capturing a graph
// on another thread, and in relaxed mode those calls neither fail nor invalidate that capture.
#include <cuda_runtime_api.h>

namespace symmem::kernels {

class RelaxedCaptureScope {
 public:
  RelaxedCaptureScope() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCaptureScope() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCaptureScope(const RelaxedCaptureScope&) = delete;
  RelaxedCaptureScope& operator=(const RelaxedCaptureScope&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

}  // namespace symmem::kernels

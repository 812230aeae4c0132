// SPDX-License-Identifier: Apache-2.0
#pragma once
// Makes a CUDA device current for a scope and gives the calling thread its previous device back.
#include <cuda_runtime_api.h>

namespace symmem::kernels {

class ScopedDevice {
 public:
  enum class Switch {
    Always,     // cudaSetDevice even when `device` is already current (cold paths: it also makes the
                // device's primary context the thread's current one)
    WhenOther,  // no CUDA call when `device` is already current (the per-call path)
  };

  explicit ScopedDevice(int device, Switch when = Switch::Always) {
    cudaGetDevice(&previous_);
    switched_ = when == Switch::Always || previous_ != device;
    if (switched_) status_ = cudaSetDevice(device);
  }
  ~ScopedDevice() {
    if (switched_ && previous_ >= 0) cudaSetDevice(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

  // What cudaSetDevice returned (cudaSuccess when it was not called).
  cudaError_t status() const { return status_; }

 private:
  int previous_ = -1;  // -1: cudaGetDevice failed, nothing to give back
  bool switched_ = false;
  cudaError_t status_ = cudaSuccess;
};

}  // namespace symmem::kernels

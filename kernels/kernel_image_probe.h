// SPDX-License-Identifier: Apache-2.0
#pragma once
// The runtime's side of kernel_image.h, in C++17 for the .cu files (programmatic_launch.h): the
// probe kernel, and what its code on a device says about the programmatic-launch handshake.
#include <cuda_runtime_api.h>

namespace symmem::kernels {

// Whether the kernels' code for `device`, the current device, was compiled for compute_90 or later
// (loaded as SASS or JIT-compiled from PTX), so has the programmatic-launch handshake
// (programmatic_launch.h): never below 9.0, nor on a newer GPU running older PTX. Asked of the
// runtime once per device, kernelImageProblem asks at setup (out of any stream capture); a lookup
// after that.
bool kernelCodeTakesProgrammaticLaunch(int device);

// The probe (kernel_image_probe.cu): cudaFuncGetAttributes, on the current device, of a kernel
// built with the same architectures and flags as the all-reduce kernels.
cudaError_t probeKernelImage(cudaFuncAttributes* attributes);

}  // namespace symmem::kernels

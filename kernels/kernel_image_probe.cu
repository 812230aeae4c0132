// SPDX-License-Identifier: Apache-2.0
// The kernel kernelImageProblem asks the runtime about (kernel_image.h).
#include "kernels/kernel_image_probe.h"

namespace symmem::kernels {
namespace device {

// Purpose: none of its own. It is compiled for the same architectures, with the same flags, as every
// other kernel of this library, so whether the runtime finds code for it on a GPU says whether the
// all-reduce kernels would launch there. Requires: nothing. Never launched.
__global__ void imageProbeKernel() {}

}  // namespace device

cudaError_t probeKernelImage(cudaFuncAttributes* attributes) {
  return cudaFuncGetAttributes(attributes, device::imageProbeKernel);
}

}  // namespace symmem::kernels

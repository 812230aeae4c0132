// SPDX-License-Identifier: Apache-2.0
#pragma once
// Host entry points of the kernels setup runs (setup_kernels.cu; callable from plain C++).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace symmem::kernels {

// Arms `bytes` (a multiple of 4) at `dst` with kArmedWord.
cudaError_t launchArm(char* dst, size_t bytes, cudaStream_t stream);

// Writes the P2P check pattern from `writer` into `reader`'s check area through the mapping `dst`.
cudaError_t launchCheckPattern(char* dst, int writer, int reader, uint32_t nonce, cudaStream_t stream);

}  // namespace symmem::kernels

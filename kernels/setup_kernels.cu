// SPDX-License-Identifier: Apache-2.0
// The kernels of the collective setup (symmetric_setup.cpp): arming the whole buffer, and the P2P
// check pattern written through a peer mapping.
#include "kernels/setup_kernels.h"

#include <algorithm>

#include "kernels/flag_protocol.cuh"
#include "kernels/symmetric_layout.h"

namespace symmem::kernels {
namespace device {

// Purpose: arm a whole buffer before first use (32-bit stores: pending is decided per 32-bit word,
// flag_protocol.cuh). Requires: nothing. Launch shape: grid-stride, any shape. Size range: any.
__global__ void armKernel(uint32_t* dst, size_t words) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride)
    dst[i] = kArmedWord;
}

// Purpose: write the P2P check pattern (kCheckBytes) through a peer mapping with the stores the
// all-reduce kernels make. Requires: dst is a 16-byte aligned check area. Launch shape: one block,
// any width. Size range: kCheckBytes.
__global__ void checkPatternKernel(char* dst, int writer, int reader, uint32_t nonce) {
  for (uint32_t i = threadIdx.x; i < kCheckBytes / kVecBytes; i += blockDim.x) {
    const uint32_t w = i * 4;
    const uint4 x =
        make_uint4(checkPatternWord(writer, reader, w, nonce), checkPatternWord(writer, reader, w + 1, nonce),
                   checkPatternWord(writer, reader, w + 2, nonce), checkPatternWord(writer, reader, w + 3, nonce));
    storeRelaxedSys(dst + static_cast<size_t>(i) * kVecBytes, x);
  }
}

}  // namespace device

cudaError_t launchArm(char* dst, size_t bytes, cudaStream_t stream) {
  const size_t words = bytes / sizeof(uint32_t);
  if (words == 0) return cudaSuccess;
  const int threads = 256;
  const size_t blocks = std::min<size_t>(1024, divUp(words, threads));
  device::armKernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(reinterpret_cast<uint32_t*>(dst), words);
  return cudaGetLastError();
}

cudaError_t launchCheckPattern(char* dst, int writer, int reader, uint32_t nonce, cudaStream_t stream) {
  device::checkPatternKernel<<<1, 256, 0, stream>>>(dst, writer, reader, nonce);
  return cudaGetLastError();
}

}  // namespace symmem::kernels

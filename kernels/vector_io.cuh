// SPDX-License-Identifier: Apache-2.0
#pragma once
// A message as whole 16-byte vectors: the kernels move every message vector by vector, whatever
// the alignment and length of the caller's buffers. A vector that is whole and 16-byte aligned is
// one 16-byte access; any other (an unaligned buffer, the tail of a message) is assembled element
// by element, and elements past the end read as +0.0 (the padding the flag protocol needs).
#include <cstddef>
#include <cstdint>

#include "kernels/symmetric_layout.h"

namespace symmem::kernels::device {

template <typename T>
inline constexpr int kElemsPerVec = static_cast<int>(kVecBytes / sizeof(T));

__device__ __forceinline__ bool isVecAligned(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Elements [begin, begin + kElemsPerVec<T>) of `src` as one vector; elements at or past `end` are
// +0.0. `aligned`: src is 16-byte aligned (begin is always a multiple of kElemsPerVec<T>).
template <typename T>
__device__ __forceinline__ uint4 loadVector(const T* src, size_t begin, size_t end, bool aligned) {
  if (aligned && begin + kElemsPerVec<T> <= end) return *reinterpret_cast<const uint4*>(src + begin);
  uint32_t w[4] = {0u, 0u, 0u, 0u};
  if constexpr (sizeof(T) == 4) {
    const uint32_t* s = reinterpret_cast<const uint32_t*>(src);
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (begin + i < end) w[i] = s[begin + i];
  } else {
    const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      if (begin + i < end) w[i / 2] |= static_cast<uint32_t>(s[begin + i]) << (16 * (i % 2));
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Stores the elements of `v` that fall before `end` at dst[begin...].
template <typename T>
__device__ __forceinline__ void storeVector(T* dst, size_t begin, size_t end, const uint4& v, bool aligned) {
  if (aligned && begin + kElemsPerVec<T> <= end) {
    *reinterpret_cast<uint4*>(dst + begin) = v;
    return;
  }
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  if constexpr (sizeof(T) == 4) {
    uint32_t* d = reinterpret_cast<uint32_t*>(dst);
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (begin + i < end) d[begin + i] = w[i];
  } else {
    uint16_t* d = reinterpret_cast<uint16_t*>(dst);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      if (begin + i < end) d[begin + i] = static_cast<uint16_t>(w[i / 2] >> (16 * (i % 2)));
  }
}

// The grid-stride walk over vectors: this thread's first vector and the step to its next.
__device__ __forceinline__ size_t firstVector() { return static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ size_t vectorStride() { return static_cast<size_t>(gridDim.x) * blockDim.x; }

}  // namespace symmem::kernels::device

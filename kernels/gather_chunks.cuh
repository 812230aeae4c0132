// SPDX-License-Identifier: Apache-2.0
#pragma once
// The two-shot's last step: wait for the reduced vector i of each chunk whose owner is in `owners` (in
// this rank's gather slots, slot q from owner q) and copy it into the output. The halves variant calls
// it (its spills: bf16 max 192 -> 40 bytes of stack, sm_90). The push variant writes the same steps out:
// called there, it moved that kernel's spills (fewer for max and min, more for 16-bit sums and
// products), and the push variant's timings were measured as it is.
#include <cstddef>
#include <cstdint>

#include "kernels/bounded_wait.cuh"
#include "kernels/symmetric_layout.h"
#include "kernels/vector_io.cuh"

namespace symmem::kernels::device {

// False when the wait failed (d.failed). Chunks too short to have vector i are not awaited.
template <typename T>
__device__ __forceinline__ bool copyGatheredChunks(const WaitContext& w, const char* gatherBase, size_t slotBytes,
                                                   uint32_t owners, T* recv, size_t count, int n, size_t i,
                                                   bool outAligned, Deadline& d) {
  constexpr int kPer = kElemsPerVec<T>;
  uint32_t expect = 0;
#pragma unroll
  for (int q = 0; q < kMaxRanks; ++q)
    if ((owners & (1u << q)) && i * kPer < chunkCount(count, sizeof(T), n, q)) expect |= 1u << q;
  uint4 in[kMaxRanks];
  receiveFromPeers<T>(w, gatherBase + i * kVecBytes, slotBytes, expect, in, d);
  if (d.failed) return false;
#pragma unroll
  for (int q = 0; q < kMaxRanks; ++q)
    if (expect & (1u << q))
      storeVector<T>(recv + chunkBegin(count, sizeof(T), n, q), i * kPer, chunkCount(count, sizeof(T), n, q), in[q],
                     outAligned);
  return true;
}

}  // namespace symmem::kernels::device

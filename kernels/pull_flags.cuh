// SPDX-License-Identifier: Apache-2.0
#pragma once
// The pull variants' announcement: a tile's data is published in its owner's own buffer with plain
// stores, then one thread of the block, after a block barrier and a system-scope acq_rel fence, stores
// the round number into the tile's flag in every peer's buffer (8 bytes each: posted writes, but few
// and small). In the PTX memory model the fence and the relaxed flag store are a release pattern, and
// release is cumulative over what the barrier made the thread observe: the block's data stores. The
// reader's acquire load of the flag, then its barrier, pairs with it. A sequentially consistent fence
// (__threadfence_system, fence.sc.sys) orders more than that and is not needed (kSeqCstAnnounce
// keeps it for the benchmark). A reader polls its own copy of the flag (a local read) until it has
// reached its round, then reads the data over P2P (non-posted reads, relaxed at system scope so that
// no stale cached copy of an earlier round is ever used).
//
// Flags only grow (the round number of the algorithm, counted on the device, + 1), so one flag per
// (region, source, tile) serves every round: an owner may already have announced round r+1 while a
// reader still waits for round r, and r+1 >= r+1 still means "round r is there" (the owner writes
// round r+1's data into another round buffer). Setup zeroes the flags.
#include <cstdint>

#include "kernels/bounded_wait.cuh"
#include "kernels/device_view.h"

namespace symmem::kernels::device {

__device__ __forceinline__ void storeFlagRelaxedSys(char* p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ uint64_t loadFlagAcquireSys(const char* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// After every thread of the block has stored its part of tile `tile`: announce it to every peer.
__device__ __forceinline__ void announceTile(const DeviceView& v, int region, size_t tile, uint64_t flag) {
  __syncthreads();
  if (threadIdx.x == 0) {
    // The block's stores (seen through the barrier) before the flags.
    if ((v.costSwitches & kSeqCstAnnounce) != 0u)
      __threadfence_system();
    else
      asm volatile("fence.acq_rel.sys;" ::: "memory");
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q)
      if (q < v.nRanks && q != v.rank)
        storeFlagRelaxedSys(v.peer[q] + pullFlagOffset(v.layout, region, v.rank, tile), flag);
  }
}

// Waits until every peer in `peers` has announced tile `tile` of `region` for `flag`: thread q polls
// peer q's flag in this rank's own buffer, then the block meets. Stops early on timeout or abort (d).
__device__ __forceinline__ void awaitTile(const DeviceView& v, int region, size_t tile, uint64_t flag, uint32_t peers,
                                          Deadline& d) {
  const int q = static_cast<int>(threadIdx.x);
  if (q < v.nRanks && (peers & (1u << q)) != 0u) {
    const char* at = v.local + pullFlagOffset(v.layout, region, q, tile);
    while (!d.failed && loadFlagAcquireSys(at) < flag)
      if (!keepWaiting(d, v, q)) break;
  }
  __syncthreads();
}

}  // namespace symmem::kernels::device

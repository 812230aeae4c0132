// SPDX-License-Identifier: Apache-2.0
#pragma once
// Rounds: which round buffer a launch writes, which one it re-arms, and the per-block round records
// that carry this from one launch to the next on the device (so captured calls replay correctly).
//
// ---- Rotation: why re-arming round r-1's buffer during round r is safe ---------------------------
// Round r (the r-th call of an algorithm on this communicator, counted on the device) uses round
// buffer r % 3 of every slot region; during round r each rank re-arms, in its OWN buffer, the slots of
// round buffer (r-1) % 3, for the bytes round r-1 used. Writers into that buffer of rank p are:
//  (a) peers' round r-1 stores: p finished round r-1 only after it had seen every word of every peer's
//      round r-1 data in that buffer, so none of those stores is still in flight;
//  (b) peers' round r+2 stores (same buffer, (r+2) % 3 == (r-1) % 3): a peer q starts round r+2 only
//      after finishing round r+1, which needs p's round r+1 data (one-shot; for two-shot, p's round
//      r+2 scatter data or round r+1 gather data). p sends those in a later launch than round r's,
//      so p's re-arm stores precede them in stream order: a kernel's stores are performed before the
//      next kernel on the stream starts, hence before q can observe p's next data and answer with its
//      own stores. No fence is needed between re-arm stores and the next round's remote stores; the
//      kernel boundary is the fence.
// Two buffers would not do: during round r a fast peer that has seen p's round r data may already
// write round r+1 into buffer (r+1) % 2 == (r-1) % 2 while p is re-arming it.
// The round buffer r % 3 itself was re-armed during round r-2, in an earlier launch.
//
// ---- Round records --------------------------------------------------------------------------------
// Each block reads its own BlockControl record (device_view.h) once at start (one thread, then a
// block barrier, so no warp can see the record after another warp advanced it) and at its end writes
// its own record and those of the block indices its launch does not have (up to the comm's grid cap).
// Graph replay re-runs the same kernels and they pick up the state on the device.
#include <cstddef>
#include <cstdint>

#include "kernels/device_view.h"
#include "kernels/flag_protocol.cuh"
#include "kernels/vector_io.cuh"

namespace symmem::kernels::device {

// What a block knows about its launch's round.
struct RoundState {
  uint64_t round;
  uint64_t rearmBytes;  // bytes per slot to re-arm in round buffer rearmBuffer(round)
  bool aborted;
};

// Block b's record is read by one thread and shared through shared memory, behind a barrier: a warp
// may finish the whole call (its peers' data already there) and write the record's next round in
// endLaunch while a slower warp of the same block has not read it yet; every warp must see the round
// of this launch. The barrier also gives every thread of the block the same `aborted`.
// `aborted` is &v.control->aborted (a launch that read its parameters before the programmatic wait
// passes it in a register).
__device__ __forceinline__ RoundState beginLaunch(const BlockControl* ctl, const uint32_t* aborted) {
  __shared__ RoundState shared;
  if (threadIdx.x == 0) {
    const BlockControl& mine = ctl[blockIdx.x];
    RoundState s;
    s.round = mine.round;
    const uint64_t d0 = mine.dirtyBytes[0], d1 = mine.dirtyBytes[1], d2 = mine.dirtyBytes[2];
    const int rb = rearmBuffer(s.round);
    s.rearmBytes = rb == 0 ? d0 : rb == 1 ? d1 : d2;
    s.aborted = *reinterpret_cast<volatile const uint32_t*>(aborted) != 0;
    shared = s;
  }
  __syncthreads();
  return shared;
}
__device__ __forceinline__ RoundState beginLaunch(const DeviceView& v, const BlockControl* ctl) {
  return beginLaunch(ctl, &v.control->aborted);
}

// Records b, b + G, ... below gridCap (the largest grid any launch of this comm uses): round + 1,
// `usedBytes` dirty in this round's buffer, nothing left to re-arm in the buffer this launch re-armed.
__device__ __forceinline__ void endLaunch(int gridCap, BlockControl* ctl, uint64_t round, uint64_t usedBytes) {
  const int buf = roundBuffer(round), rb = rearmBuffer(round);
  for (unsigned j = blockIdx.x + threadIdx.x * gridDim.x; j < static_cast<unsigned>(gridCap);
       j += blockDim.x * gridDim.x) {
    ctl[j].dirtyBytes[rb] = 0;
    ctl[j].dirtyBytes[buf] = usedBytes;
    ctl[j].round = round + 1;
  }
}
__device__ __forceinline__ void endLaunch(const DeviceView& v, BlockControl* ctl, uint64_t round, uint64_t usedBytes) {
  endLaunch(v.gridCap, ctl, round, usedBytes);
}

// Re-arms, in this rank's own buffer, the first `bytes` of each slot of one round buffer (slots of
// stride slotBytes from bufBase), except this rank's own slot, which no one writes.
__device__ __forceinline__ void rearmSlots(char* local, int rank, int nRanks, size_t bufBase, size_t slotBytes,
                                           uint64_t bytes) {
  if (bytes == 0) return;
  const size_t vecs = bytes / kVecBytes;
  const size_t first = firstVector(), stride = vectorStride();
  for (int q = 0; q < nRanks; ++q) {
    if (q == rank) continue;
    char* slot = local + bufBase + static_cast<size_t>(q) * slotBytes;
    for (size_t i = first; i < vecs; i += stride) packetAt(slot + i * kVecBytes)->arm();
  }
}
__device__ __forceinline__ void rearmSlots(const DeviceView& v, size_t bufBase, size_t slotBytes, uint64_t bytes) {
  rearmSlots(v.local, v.rank, v.nRanks, bufBase, slotBytes, bytes);
}

}  // namespace symmem::kernels::device

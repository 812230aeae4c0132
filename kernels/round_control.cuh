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
// Each block reads its own BlockControl record (device_view.h) once at start and at its end writes
// its own record and those of the block indices its launch does not have (up to the comm's grid cap).
// No warp may see the record after another warp of its block advanced it: either one thread reads it
// and shares it behind a block barrier (beginLaunch, the pull and two-shot kernels), or every thread
// reads it and the block meets at the end, before the record advances (loadRound / closeRound, the
// one-shot push and staged kernels: no barrier between the programmatic wait and the first store).
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
  int buffer;           // roundBuffer(round): the round buffer this launch writes
  int rearm;            // rearmBuffer(round): the one it re-arms
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
    s.buffer = roundBuffer(s.round);
    s.rearm = rearmBuffer(s.round);
    s.rearmBytes = s.rearm == 0 ? d0 : s.rearm == 1 ? d1 : d2;
    s.aborted = *reinterpret_cast<volatile const uint32_t*>(aborted) != 0;
    shared = s;
  }
  __syncthreads();
  return shared;
}
__device__ __forceinline__ RoundState beginLaunch(const DeviceView& v, const BlockControl* ctl) {
  return beginLaunch(ctl, &v.control->aborted);
}

// Every thread reads its block's record itself (the same 32 bytes for a whole warp: one request) and
// the abort word. The block must call closeRound, every thread of it, before any of them returns.
// Threads may disagree on `aborted` only when the communicator was aborted during this launch (the
// word never goes back to 0), and an aborted communicator's records are never read again for data.
// Two steps, so that the caller can issue its own first loads between them: loadRound issues the
// loads, RoundRecord::state() is the first use of what they return. (A GPU issues a warp's
// instructions in order: a use placed before another load holds that load back by a whole latency.)
struct RoundRecord {
  uint4 lo, hi;  // round, then the three dirty counts
  uint32_t abortWord;

  __device__ __forceinline__ RoundState state() const {
    RoundState s;
    s.round = (static_cast<uint64_t>(lo.y) << 32) | lo.x;
    const uint64_t d0 = (static_cast<uint64_t>(lo.w) << 32) | lo.z;
    const uint64_t d1 = (static_cast<uint64_t>(hi.y) << 32) | hi.x;
    const uint64_t d2 = (static_cast<uint64_t>(hi.w) << 32) | hi.z;
    s.buffer = roundBuffer(s.round);
    s.rearm = rearmBuffer(s.round);
    s.rearmBytes = s.rearm == 0 ? d0 : s.rearm == 1 ? d1 : d2;
    s.aborted = abortWord != 0u;
    return s;
  }
};
__device__ __forceinline__ RoundRecord loadRound(const BlockControl* record, const uint32_t* aborted) {
  RoundRecord r;
  r.lo = *reinterpret_cast<const uint4*>(record);
  r.hi = *reinterpret_cast<const uint4*>(reinterpret_cast<const char*>(record) + 16);
  r.abortWord = *reinterpret_cast<volatile const uint32_t*>(aborted);
  return r;
}
static_assert(sizeof(BlockControl) == 32 && offsetof(BlockControl, dirtyBytes) == 8,
              "loadRound reads a record as two 16-byte vectors: round, then the three dirty counts");

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

// The end of a launch that read its round with loadRound: the block meets (every thread has read the
// record), then the records advance as endLaunch's do. `grid` is gridDim.x and `step` the grid's
// threads (vectorStride()), passed in registers.
__device__ __forceinline__ void closeRound(const RoundState& st, BlockControl* records, int gridCap, unsigned grid,
                                           size_t step, uint64_t usedBytes) {
  __syncthreads();
  if (st.aborted) return;
  const int buf = st.buffer, rb = st.rearm;
  for (size_t j = blockIdx.x + threadIdx.x * grid; j < static_cast<size_t>(gridCap); j += step) {
    records[j].dirtyBytes[rb] = 0;
    records[j].dirtyBytes[buf] = usedBytes;
    records[j].round = st.round + 1;
  }
}

// Re-arms, in this rank's own buffer, the first `bytes` of each slot of one round buffer (slots of
// stride slotBytes from slot0), except this rank's own slot, which no one writes; vectors first,
// first + stride, ... of each (the caller's place in the grid-stride walk).
__device__ __forceinline__ void rearmSlots(char* slot0, int rank, int nRanks, size_t slotBytes, uint64_t bytes,
                                           size_t first, size_t stride) {
  if (bytes == 0) return;
  const size_t vecs = bytes / kVecBytes;
  for (int q = 0; q < nRanks; ++q) {
    if (q == rank) continue;
    char* slot = slot0 + static_cast<size_t>(q) * slotBytes;
    for (size_t i = first; i < vecs; i += stride) packetAt(slot + i * kVecBytes)->arm();
  }
}
__device__ __forceinline__ void rearmSlots(const DeviceView& v, size_t bufBase, size_t slotBytes, uint64_t bytes) {
  rearmSlots(v.local + bufBase, v.rank, v.nRanks, slotBytes, bytes, firstVector(), vectorStride());
}

}  // namespace symmem::kernels::device

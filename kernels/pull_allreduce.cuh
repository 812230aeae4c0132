// SPDX-License-Identifier: Apache-2.0
#pragma once
// The pull variants of the one-shot and two-shot all-reduce (included by allreduce_kernels.cuh).
// Every rank stores what its peers need into its OWN buffer and announces each tile with a small
// flag write (pull_flags.cuh); peers read it over P2P. Writes across the fabric are only the flags:
// on PCIe switches where many concurrent posted writers collapse, the data moves as reads.
//
// Tiles: a block handles tile t = (one step of the grid-stride walk) = blockDim.x vectors, the same
// tiles in every phase and on every rank (same count, same launch shape), so thread k of the block
// that publishes vector i is also the thread that reads it back, reduces it and writes the output
// (in place is safe). Every thread of a block walks the same tiles, so the block barriers inside
// announceTile/awaitTile are uniform. Inputs and results are sealed (-0.0 becomes +0.0) as in the
// push variants, so every variant delivers the same bits.
#include <cstddef>
#include <cstdint>

#include "kernels/bounded_wait.cuh"
#include "kernels/device_view.h"
#include "kernels/flag_protocol.cuh"
#include "kernels/pull_flags.cuh"
#include "kernels/reduce_ops.cuh"
#include "kernels/round_control.cuh"
#include "kernels/vector_io.cuh"

namespace symmem::kernels::device {

__device__ __forceinline__ void storeLocalVector(char* p, const uint4& x) { *reinterpret_cast<uint4*>(p) = x; }
__device__ __forceinline__ uint4 loadLocalVector(const char* p) { return *reinterpret_cast<const uint4*>(p); }

// One-shot pull: publish my input, announce; read every peer's input, reduce in rank order.
template <typename T, int OP, class Clock>
__device__ __forceinline__ void oneShotPull(const DeviceView& v, const T* send, T* recv, size_t count, Clock& clock) {
  constexpr int kPer = kElemsPerVec<T>;
  BlockControl* ctl = v.control->oneShot;
  const RoundState st = beginLaunch(v, ctl);
  if (st.aborted) return;
  const int buf = roundBuffer(st.round);
  const uint64_t flag = st.round + 1;
  const size_t nVec = vectorCount(count * sizeof(T));
  const size_t tileVecs = blockDim.x, nTiles = divUp(nVec, tileVecs);
  const bool inAligned = isVecAligned(send), outAligned = isVecAligned(recv);
  char* mine = v.local + oneShotSlotOffset(v.layout, buf, v.rank);

  // 1. Publish: my input, sealed, into my own slot; announce each tile to every peer.
  for (size_t tile = blockIdx.x; tile < nTiles; tile += gridDim.x) {
    const size_t i = tile * tileVecs + threadIdx.x;
    if (i < nVec)
      storeLocalVector(mine + i * kVecBytes, SentinelPacket::seal<T>(loadVector<T>(send, i * kPer, count, inAligned)));
    announceTile(v, kPullOneShot, tile, flag);
  }

  // 2. Re-arm the previous round's push slots (a push call may have used them).
  rearmSlots(v, oneShotSlotOffset(v.layout, rearmBuffer(st.round), 0), v.layout.oneShotSlotBytes, st.rearmBytes);

  // 3. Read every peer's tile once announced, reduce in rank order, write the output.
  Deadline d;
  const uint32_t peers = peerMask(v.rank, v.nRanks);
  for (size_t tile = blockIdx.x; tile < nTiles; tile += gridDim.x) {
    awaitTile(v, kPullOneShot, tile, flag, peers, d);
    const size_t i = tile * tileVecs + threadIdx.x;
    if (i >= nVec) continue;
    uint4 in[kMaxRanks];
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q)
      if (q < v.nRanks && q != v.rank)
        in[q] = loadRelaxedSys(v.peer[q] + oneShotSlotOffset(v.layout, buf, q) + i * kVecBytes);
    const uint4 own = loadLocalVector(mine + i * kVecBytes);
    storeVector<T>(recv, i * kPer, count, SentinelPacket::seal<T>(reduceInRankOrder<T, OP>(in, own, v.rank, v.nRanks)),
                   outAligned);
  }
  clock.stop();
  endLaunch(v, ctl, st.round, 0);  // only this rank's own slot was written, which no one polls
}

// Two-shot pull: publish my copy of every chunk; the owner of each chunk reads the copies, reduces,
// publishes the result; everyone reads the results.
template <typename T, int OP, class Clock>
__device__ __forceinline__ void twoShotPull(const DeviceView& v, const T* send, T* recv, size_t count, Clock& clock) {
  constexpr int kPer = kElemsPerVec<T>;
  BlockControl* ctl = v.control->twoShot;
  const RoundState st = beginLaunch(v, ctl);
  if (st.aborted) return;
  const int n = v.nRanks, rank = v.rank;
  const int buf = roundBuffer(st.round), rb = rearmBuffer(st.round);
  const uint64_t flag = st.round + 1;
  const size_t chunk = chunkElems(count, sizeof(T), n);
  const size_t maxVec = vectorCount(chunk * sizeof(T));
  const size_t tileVecs = blockDim.x, nTiles = divUp(maxVec, tileVecs);
  const bool inAligned = isVecAligned(send), outAligned = isVecAligned(recv);
  const size_t myBegin = chunkBegin(count, sizeof(T), n, rank);
  const size_t myCount = chunkCount(count, sizeof(T), n, rank);
  const uint32_t peers = peerMask(rank, n);

  // 1. Publish my copy of chunk q in my scatter slot (buf, q), for rank q to read.
  for (size_t tile = blockIdx.x; tile < nTiles; tile += gridDim.x) {
    const size_t i = tile * tileVecs + threadIdx.x;
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q) {
      if (q >= n || q == rank) continue;
      const size_t qCount = chunkCount(count, sizeof(T), n, q);
      if (i * kPer >= qCount) continue;
      const T* qChunk = send + chunkBegin(count, sizeof(T), n, q);
      storeLocalVector(v.local + scatterSlotOffset(v.layout, buf, q) + i * kVecBytes,
                       SentinelPacket::seal<T>(loadVector<T>(qChunk, i * kPer, qCount, inAligned)));
    }
    announceTile(v, kPullScatter, tile, flag);
  }

  // 2. Re-arm the previous round's push slots.
  rearmSlots(v, scatterSlotOffset(v.layout, rb, 0), v.layout.chunkSlotBytes, st.rearmBytes);
  rearmSlots(v, gatherSlotOffset(v.layout, rb, 0), v.layout.chunkSlotBytes, st.rearmBytes);

  // 3. My chunk: read every peer's copy, reduce in rank order, keep, publish in my gather slot.
  Deadline d;
  char* myGather = v.local + gatherSlotOffset(v.layout, buf, rank);
  for (size_t tile = blockIdx.x; tile < nTiles; tile += gridDim.x) {
    awaitTile(v, kPullScatter, tile, flag, peers, d);
    const size_t i = tile * tileVecs + threadIdx.x;
    if (i * kPer < myCount) {
      uint4 in[kMaxRanks];
#pragma unroll
      for (int q = 0; q < kMaxRanks; ++q)
        if (q < n && q != rank)
          in[q] = loadRelaxedSys(v.peer[q] + scatterSlotOffset(v.layout, buf, rank) + i * kVecBytes);
      const uint4 own = SentinelPacket::seal<T>(loadVector<T>(send + myBegin, i * kPer, myCount, inAligned));
      const uint4 r = SentinelPacket::seal<T>(reduceInRankOrder<T, OP>(in, own, rank, n));
      storeLocalVector(myGather + i * kVecBytes, r);
      storeVector<T>(recv + myBegin, i * kPer, myCount, r, outAligned);
    }
    announceTile(v, kPullGather, tile, flag);
  }

  // 4. The other chunks: read each owner's reduced tile once announced.
  for (size_t tile = blockIdx.x; tile < nTiles; tile += gridDim.x) {
    awaitTile(v, kPullGather, tile, flag, peers, d);
    const size_t i = tile * tileVecs + threadIdx.x;
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q) {
      if (q >= n || q == rank) continue;
      const size_t qCount = chunkCount(count, sizeof(T), n, q);
      if (i * kPer >= qCount) continue;
      storeVector<T>(recv + chunkBegin(count, sizeof(T), n, q), i * kPer, qCount,
                     loadRelaxedSys(v.peer[q] + gatherSlotOffset(v.layout, buf, q) + i * kVecBytes), outAligned);
    }
  }
  // Step 1 left data in this rank's scatter slots q != rank, where a push or staged call of a later
  // round polls for rank q's copy: they are re-armed like a push round's (the next call re-arms this
  // round buffer; every peer has read them by then, since this call ended only after every peer's
  // gather announcement, which each peer makes after reading the tile from every rank).
  clock.stop();
  endLaunch(v, ctl, st.round, paddedBytes(chunk * sizeof(T)));
}

}  // namespace symmem::kernels::device

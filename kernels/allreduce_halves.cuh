// SPDX-License-Identifier: Apache-2.0
#pragma once
// The halves variant of the one-shot and two-shot all-reduce (included by allreduce_kernels.cuh), for
// communicators whose GPUs form two halves (topology/halves.h: two sockets, two root complexes, two
// switches): reduce inside each half, cross the middle once per GPU, finish inside the half.
//
// Every rank r has a partner, the rank at r's position in the other half (DeviceView::partnerOf).
// Within a half the data moves as in the push variant (flag in the data, flag_protocol.cuh); across
// the middle only partial results move, each rank sending one stream to its partner and receiving one
// from it: n flows cross the middle per call, against 2 (n/2)^2 for the flat push (16 at 4+4 ranks
// for the one-shot, 16 in each phase of the two-shot).
//
// Order of the arithmetic: each half reduces its ranks in rank order (its "partial"), and the result is
// half 0's partial combined with half 1's, on every rank: every rank gets the same bits. 16-bit sums and
// products keep their partials in fp32 (two fp32 packets per vector cross the middle, twice the bytes)
// and round once at the end, as the flat kernels do (reduce_ops.cuh). fp32 sums and products associate
// differently from the flat kernels' single rank-order chain, so they may differ from the flat
// variants' results in the last bit (integer-valued data, as the tests use, is exact in both).
//
// Cross slots (symmetric_layout.h) are re-armed by their receiver as soon as it has read them: the
// partner writes a rank's cross slot of round buffer b only in rounds r and r+3, and its round r+3
// starts only after this rank's round r+2 data reached its half, so after this launch ended. The
// one-shot, scatter and gather slots follow the round records' rotation like every other variant's.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/bounded_wait.cuh"
#include "kernels/device_view.h"
#include "kernels/flag_protocol.cuh"
#include "kernels/gather_chunks.cuh"
#include "kernels/reduce_ops.cuh"
#include "kernels/round_control.cuh"
#include "kernels/vector_io.cuh"

namespace symmem::kernels::device {

// One half's reduction of one vector of the message. Narrow (T's own arithmetic): `lo` as a vector of
// T. Wide (16-bit sums and products): the 8 elements in fp32, elements 0-3 in `lo`, 4-7 in `hi`.
struct Partial {
  uint4 lo, hi;
};
template <typename T, int OP>
inline constexpr int kPartialParts = kWideAccumulation<T, OP> ? 2 : 1;

// The contributions of the ranks in `members` (a mask, `self` included) in rank order: in[q] for
// q != self, `own` for self. Sealed (no -0.0 element), as it is sent: the sender combines the very
// bits its partner receives.
template <typename T, int OP>
__device__ __forceinline__ Partial reduceMembers(const uint4 (&in)[kMaxRanks], const uint4& own, int self,
                                                 uint32_t members) {
  Partial p{};
  bool started = false;
  if constexpr (kWideAccumulation<T, OP>) {
    float acc[8] = {};
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q) {
      if ((members & (1u << q)) == 0u) continue;
      float x[8];
      widenVector<T>(q == self ? own : in[q], x);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] = started ? applyOp<OP>(acc[e], x[e]) : x[e];
      started = true;
    }
    p.lo = SentinelPacket::seal<float>(
        make_uint4(__float_as_uint(acc[0]), __float_as_uint(acc[1]), __float_as_uint(acc[2]), __float_as_uint(acc[3])));
    p.hi = SentinelPacket::seal<float>(
        make_uint4(__float_as_uint(acc[4]), __float_as_uint(acc[5]), __float_as_uint(acc[6]), __float_as_uint(acc[7])));
  } else {
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q) {
      if ((members & (1u << q)) == 0u) continue;
      const uint4 x = q == self ? own : in[q];
      p.lo = started ? combineVector<T, OP>(p.lo, x) : x;
      started = true;
    }
    p.lo = SentinelPacket::seal<T>(p.lo);
  }
  return p;
}

// Half 0's partial combined with half 1's: the result, sealed as every variant's results are.
template <typename T, int OP>
__device__ __forceinline__ uint4 combineHalves(const Partial& half0, const Partial& half1) {
  if constexpr (kWideAccumulation<T, OP>) {
    const uint32_t a[8] = {half0.lo.x, half0.lo.y, half0.lo.z, half0.lo.w,
                           half0.hi.x, half0.hi.y, half0.hi.z, half0.hi.w};
    const uint32_t b[8] = {half1.lo.x, half1.lo.y, half1.lo.z, half1.lo.w,
                           half1.hi.x, half1.hi.y, half1.hi.z, half1.hi.w};
    uint32_t r[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) r[e] = narrow<T>(applyOp<OP>(__uint_as_float(a[e]), __uint_as_float(b[e])));
    return SentinelPacket::seal<T>(
        make_uint4(r[0] | (r[1] << 16), r[2] | (r[3] << 16), r[4] | (r[5] << 16), r[6] | (r[7] << 16)));
  } else {
    return SentinelPacket::seal<T>(combineVector<T, OP>(half0.lo, half1.lo));
  }
}

// A partial into the partner's cross slot: part 0 at `at`, part 1 (wide) one slot further.
template <typename T, int OP>
__device__ __forceinline__ void sendPartial(char* at, size_t partStride, const Partial& p) {
  packetAt(at)->write(p.lo);
  if constexpr (kPartialParts<T, OP> == 2) packetAt(at + partStride)->write(p.hi);
}

// The partner's partial from this rank's cross slot (parts as sendPartial writes them), each part
// re-armed once read. False on timeout or abort (d.failed).
template <typename T, int OP>
__device__ __forceinline__ bool receivePartial(const WaitContext& w, char* at, size_t partStride, int partner,
                                               Partial& out, Deadline& d) {
  constexpr int kParts = kPartialParts<T, OP>;
  using Sealed = std::conditional_t<kWideAccumulation<T, OP>, float, T>;  // how the parts were sealed
  uint4 got[2] = {};
  uint32_t pending = (1u << kParts) - 1u;
  while (pending != 0u) {
#pragma unroll
    for (int k = 0; k < kParts; ++k)
      if (pending & (1u << k)) got[k] = packetAt(at + k * partStride)->poll();
#pragma unroll
    for (int k = 0; k < kParts; ++k)
      if ((pending & (1u << k)) && SentinelPacket::arrived<Sealed>(got[k])) pending &= ~(1u << k);
    if (pending != 0u && !keepWaiting(d, w, partner)) return false;
  }
#pragma unroll
  for (int k = 0; k < kParts; ++k) packetAt(at + k * partStride)->arm();
  out.lo = got[0];
  out.hi = got[1];
  return true;
}

// ==================================================================================================
// One-shot halves.
// Purpose:      the one-shot all-reduce in two hops: every rank pushes its input to the other ranks of
//               its half and reduces its half's partial; partners exchange partials across the middle
//               and combine them.
// Requires:     layout.halves; what the one-shot push requires (size, same call on every rank, blocks
//               co-resident). Shares the one-shot round records and slots with the other one-shot
//               variants (any order of calls).
// Launch shape: launchShape(vectors of the message), as the generic one-shot.
// Size range:   where the flat one-shot's (n-1) streams per GPU, half of them across the middle, cost
//               more than one more hop inside the half: the decision table's bands say where.
// ==================================================================================================
// One round of it, on a round record that was not aborted; every thread of the block then closes it.
template <typename T, int OP>
__device__ __forceinline__ void oneShotHalvesRound(const DeviceView& v, const RoundState& st, const T* send, T* recv,
                                                   size_t count, size_t nVec, size_t first, size_t stride) {
  constexpr int kPer = kElemsPerVec<T>;
  const bool inAligned = isVecAligned(send), outAligned = isVecAligned(recv);
  const size_t slotBytes = v.layout.oneShotSlotBytes;
  const int rank = v.rank, partner = v.partnerOf[v.rank];
  const uint32_t island = v.islandPeers, members = island | (1u << rank);
  const size_t mine = oneShotSlotOffset(v.layout, st.buffer, rank);  // my slot, in each peer's buffer
  const char* slots = v.local + oneShotSlotOffset(v.layout, st.buffer, 0);
  char* cross = v.local + oneShotCrossOffset(v.layout, st.buffer, 0);
  char* partnerCross = v.peer[partner] + oneShotCrossOffset(v.layout, st.buffer, 0);
  const WaitContext w = waitContextOf(v);

  // 1. My input into my slot in every other rank of my half.
  for (size_t i = first; i < nVec; i += stride) {
    const uint4 x = SentinelPacket::seal<T>(loadVector<T>(send, i * kPer, count, inAligned));
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q)
      if (island & (1u << q)) packetAt(v.peer[q] + mine + i * kVecBytes)->write(x);
  }

  // 2. Re-arm the previous round's slots while the data is on its way.
  rearmSlots(v, oneShotSlotOffset(v.layout, st.rearm, 0), slotBytes, st.rearmBytes);

  // 3. My half's partial of each vector, to my partner.
  Deadline d;
  auto ourPartial = [&](size_t i) {
    uint4 in[kMaxRanks];
    receiveFromPeers<T>(w, slots + i * kVecBytes, slotBytes, island, in, d);
    const uint4 own = SentinelPacket::seal<T>(loadVector<T>(send, i * kPer, count, inAligned));
    return reduceMembers<T, OP>(in, own, rank, members);
  };
  Partial firstOurs{};
  for (size_t i = first; i < nVec && !d.failed; i += stride) {
    const Partial p = ourPartial(i);
    if (d.failed) break;
    sendPartial<T, OP>(partnerCross + i * kVecBytes, slotBytes, p);
    if (i == first) firstOurs = p;
  }

  // 4. My partner's partial: half 0's combined with half 1's, into the output. A thread's later
  //    vectors reduce their half again (their inputs are still in the slots; no register holds them).
  for (size_t i = first; i < nVec && !d.failed; i += stride) {
    Partial theirs;
    if (!receivePartial<T, OP>(w, cross + i * kVecBytes, slotBytes, partner, theirs, d)) break;
    const Partial ours = i == first ? firstOurs : ourPartial(i);
    if (d.failed) break;
    storeVector<T>(recv, i * kPer, count,
                   v.half == 0 ? combineHalves<T, OP>(ours, theirs) : combineHalves<T, OP>(theirs, ours), outAligned);
  }
}

template <typename T, int OP, class Clock>
__device__ __forceinline__ void oneShotHalves(const DeviceView& v, const T* send, T* recv, size_t count, Clock& clock) {
  BlockControl* ctl = v.control->oneShot;
  // Every thread reads the round record (one sector per warp) and the block meets only at the end
  // (closeRound), as the one-shot push does: no barrier before the first store.
  const RoundState st = loadRound(ctl + blockIdx.x, &v.control->aborted).state();
  const size_t nVec = vectorCount(count * sizeof(T));
  const size_t first = firstVector(), stride = vectorStride();
  if (!st.aborted) oneShotHalvesRound<T, OP>(v, st, send, recv, count, nVec, first, stride);
  clock.stop();
  closeRound(st, ctl, v.gridCap, gridDim.x, stride, paddedBytes(count * sizeof(T)));
}

// ==================================================================================================
// Two-shot halves.
// Purpose:      the two-shot all-reduce over the halves. The message is cut into the two-shot's n
//               chunks (symmetric_layout.h); partners own the same two chunks, each's own and the
//               other's. 1. Reduce-scatter inside the half: every rank pushes to each other rank s of
//               its half the chunks s and partner(s) owns. 2. Each rank reduces its half's partials of
//               its two chunks and sends them to its partner. 3. Both partners combine half 0's and half
//               1's partials (the same bits on both) and push the two reduced chunks to the other ranks
//               of their half, which copy them out.
// Requires:     layout.halves; what the two-shot push requires. Shares the two-shot round records and
//               slots with the other two-shot variants: rank p's copy of chunk c lands in c's owner's
//               scatter slot p (as in the push variant) or, for the partner's chunk, in slot
//               partner(p); reduced chunk c lands in gather slot c. No rank writes another's slot
//               of its own index.
// Launch shape: launchShape(vectors of one chunk), thread t handling vector t of every chunk in all
//               phases, as the two-shot push: in place is safe without any grid-wide sync.
// ==================================================================================================
template <typename T, int OP, class Clock>
__device__ __forceinline__ void twoShotHalves(const DeviceView& v, const T* send, T* recv, size_t count, Clock& clock) {
  constexpr int kPer = kElemsPerVec<T>;
  BlockControl* ctl = v.control->twoShot;
  const RoundState st = beginLaunch(v, ctl);
  if (st.aborted) return;
  const int n = v.nRanks, rank = v.rank, partner = v.partnerOf[v.rank], half = v.half;
  const int buf = st.buffer;
  const size_t chunk = chunkElems(count, sizeof(T), n);
  const size_t maxVec = vectorCount(chunk * sizeof(T));
  const bool inAligned = isVecAligned(send), outAligned = isVecAligned(recv);
  const size_t first = firstVector(), stride = vectorStride();
  const size_t slotBytes = v.layout.chunkSlotBytes;
  const uint32_t island = v.islandPeers;
  uint32_t across = 0;  // the partners of the other ranks of my half
#pragma unroll
  for (int q = 0; q < kMaxRanks; ++q)
    if (island & (1u << q)) across |= 1u << v.partnerOf[q];
  const char* scatterBase = v.local + scatterSlotOffset(v.layout, buf, 0);
  const char* gatherBase = v.local + gatherSlotOffset(v.layout, buf, 0);
  char* cross = v.local + twoShotCrossOffset(v.layout, buf, 0);
  char* partnerCross = v.peer[partner] + twoShotCrossOffset(v.layout, buf, 0);
  const WaitContext w = waitContextOf(v);

  // One vector of chunk c of my input into `slot` (an offset) of rank q's buffer.
  auto scatter = [&](int q, int c, size_t slot, size_t i) {
    const size_t cCount = chunkCount(count, sizeof(T), n, c);
    if (i * kPer >= cCount) return;
    const uint4 x =
        SentinelPacket::seal<T>(loadVector<T>(send + chunkBegin(count, sizeof(T), n, c), i * kPer, cCount, inAligned));
    packetAt(v.peer[q] + slot + i * kVecBytes)->write(x);
  };
  // 1. Reduce-scatter inside my half: to each other rank s of it, chunk s into my scatter slot there
  //    and chunk partner(s) into my partner's.
  const size_t slotOfMine = scatterSlotOffset(v.layout, buf, rank);
  const size_t slotOfPartner = scatterSlotOffset(v.layout, buf, partner);
  for (size_t i = first; i < maxVec; i += stride) {
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q) {
      if ((island & (1u << q)) == 0u) continue;
      scatter(q, q, slotOfMine, i);
      scatter(q, v.partnerOf[q], slotOfPartner, i);
    }
  }

  // 2. Re-arm the previous round's scatter and gather slots.
  rearmSlots(v, scatterSlotOffset(v.layout, st.rearm, 0), slotBytes, st.rearmBytes);
  rearmSlots(v, gatherSlotOffset(v.layout, st.rearm, 0), slotBytes, st.rearmBytes);

  // My two chunks: c == rank, whose copies arrive in the slots of my half's ranks, and c == partner, in
  // the slots of their partners (ranks of a half in rank order have their partners in rank order, so
  // reducing the slots in index order reduces my half in rank order).
  Deadline d;
  auto partialOf = [&](int c, size_t i) {
    const bool own = c == rank;
    uint4 in[kMaxRanks];
    receiveFromPeers<T>(w, scatterBase + i * kVecBytes, slotBytes, own ? island : across, in, d);
    const size_t cCount = chunkCount(count, sizeof(T), n, c);
    const uint4 mine =
        SentinelPacket::seal<T>(loadVector<T>(send + chunkBegin(count, sizeof(T), n, c), i * kPer, cCount, inAligned));
    return reduceMembers<T, OP>(in, mine, c, (own ? island : across) | (1u << c));
  };
  // The chunk c all-reduced: my half's partial `ours` with my partner's, in half order (cHalf: the half
  // of c's owner, which names the cross slots); into the output and to the other ranks of my half
  // (gather slot c). False when the wait failed.
  auto finish = [&](int c, int cHalf, const Partial& ours, size_t i) {
    Partial theirs;
    if (!receivePartial<T, OP>(w, cross + 2 * cHalf * slotBytes + i * kVecBytes, slotBytes, partner, theirs, d))
      return false;
    const uint4 r = half == 0 ? combineHalves<T, OP>(ours, theirs) : combineHalves<T, OP>(theirs, ours);
    const size_t gather = gatherSlotOffset(v.layout, buf, c) + i * kVecBytes;
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q)
      if (island & (1u << q)) packetAt(v.peer[q] + gather)->write(r);
    storeVector<T>(recv + chunkBegin(count, sizeof(T), n, c), i * kPer, chunkCount(count, sizeof(T), n, c), r,
                   outAligned);
    return true;
  };

  const size_t mineCount = chunkCount(count, sizeof(T), n, rank);
  const size_t partnerCount = chunkCount(count, sizeof(T), n, partner);
  for (size_t i = first; i < maxVec && !d.failed; i += stride) {
    // 3. My half's partials of my two chunks, both sent before either answer is awaited (my partner
    //    sends its two in the same order and waits the same way).
    const bool hasMine = i * kPer < mineCount, hasPartner = i * kPer < partnerCount;
    Partial oursMine{}, oursPartner{};
    if (hasMine) {
      oursMine = partialOf(rank, i);
      if (d.failed) break;
      sendPartial<T, OP>(partnerCross + 2 * half * slotBytes + i * kVecBytes, slotBytes, oursMine);
    }
    if (hasPartner) {
      oursPartner = partialOf(partner, i);
      if (d.failed) break;
      sendPartial<T, OP>(partnerCross + 2 * (1 - half) * slotBytes + i * kVecBytes, slotBytes, oursPartner);
    }
    if (hasMine && !finish(rank, half, oursMine, i)) break;
    if (hasPartner && !finish(partner, 1 - half, oursPartner, i)) break;
    // 4. The chunks of the other pairs, from their owners in my half.
    if (!copyGatheredChunks<T>(w, gatherBase, slotBytes, island | across, recv, count, n, i, outAligned, d)) break;
  }
  clock.stop();
  endLaunch(v, ctl, st.round, paddedBytes(chunk * sizeof(T)));
}

}  // namespace symmem::kernels::device

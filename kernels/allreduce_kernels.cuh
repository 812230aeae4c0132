// SPDX-License-Identifier: Apache-2.0
#pragma once
// The two symmetric all-reduce kernels, one-shot and two-shot, each in three variants chosen at run
// time (a kernel argument, the same on every rank): push and staged with the flag in the data
// (below), pull with announced tiles (pull_allreduce.cuh). Included by allreduce_kernels.cu, which
// instantiates them for every (dtype, op) and launches them. What they are made of, one header each:
//   flag_protocol.cuh    the flag-in-data packet and its atomicity contract
//   vector_io.cuh        messages as 16-byte vectors, unaligned buffers and tails
//   reduce_ops.cuh       sum/prod/max/min of bf16/fp16/fp32, reduction in rank order
//   round_control.cuh    rotating round buffers, re-arming, per-block round records
//   bounded_wait.cuh     polling peers' data with a deadline and the abort word
//   programmatic_launch.h  the launch handshake with the previous and next kernel
//   param_staging.cuh    parameters kept in registers across the programmatic wait
//   pull_flags.cuh       the pull variants' tile announcements
//   allreduce_halves.cuh the halves variant (reduce inside each half, cross the middle once per GPU)
//   cost_trace.cuh       benchmark-only timestamps (one-shot push)
//   kernel_clock.cuh     the GPU's count and time of every execution, for symmem-stat
#include <cstddef>
#include <cstdint>

#include "kernels/allreduce_halves.cuh"
#include "kernels/bounded_wait.cuh"
#include "kernels/cost_trace.cuh"
#include "kernels/device_view.h"
#include "kernels/flag_protocol.cuh"
#include "kernels/kernel_clock.cuh"
#include "kernels/param_staging.cuh"
#include "kernels/programmatic_launch.h"
#include "kernels/pull_allreduce.cuh"
#include "kernels/reduce_ops.cuh"
#include "kernels/round_control.cuh"
#include "kernels/vector_io.cuh"

namespace symmem::kernels::device {

// ==================================================================================================
// One-shot all-reduce.
// Purpose:      all-reduce of a small message in one step: every rank pushes its whole input into its
//               slot in every peer's buffer, then reduces the n slots it received locally.
// Requires:     count * sizeof(T) <= layout.oneShotMaxBytes; every rank launches it with the same
//               count/dtype/op; all blocks of every rank's launch co-resident (grid <= kMaxGrid and the
//               multiprocessor count).
// Launch shape: launchShape(vectors of the message): one thread per 16-byte vector, one block up to
//               512 vectors (8 KiB), then more blocks, then several vectors per thread.
// Size range:   8 B to about 1 MiB (the built-in table's one-shot limit). Each rank sends (n-1) x the
//               message, against 2(n-1)/n x for two-shot, so the more ranks, the earlier two-shot wins.
// ==================================================================================================
// The variant a launch runs (the kernels' argument; core/sym_variant.h's values).
enum Variant : int { kPush = 0, kPull = 1, kStaged = 2, kHalves = 3 };

// What a one-shot push or staged launch takes from its parameters and its launch shape, read before
// the programmatic wait and staged through shared memory there (param_staging.cuh: otherwise the
// code generator reads them from the constant bank again where they are used, after the wait, each
// line a miss on the call's critical path). Everything that does not depend on the round is computed
// here too.
struct OneShotPlan {
  const char* send;
  char* recv;
  size_t count;
  size_t nVec;                // 16-byte vectors of the message
  char* peerSlot[kMaxRanks];  // my slot of round buffer 0 in rank q's buffer (q != rank)
  char* ownSlots;             // slot 0 of round buffer 0 in my own buffer
  size_t bufferBytes;         // one round buffer: nRanks slots
  size_t slotBytes;           // layout.oneShotSlotBytes
  BlockControl* records;      // every block index's round record
  WaitContext wait;           // the abort words and the timeout, for the polls
  uint64_t* trace;            // DeviceView::trace (benchmark only; cost_trace.cuh)
  int rank, nRanks, gridCap;
  unsigned block, grid;  // blockDim.x, gridDim.x
  bool inAligned, outAligned;

  __device__ __forceinline__ char* ownSlot(int buf, int src) const {
    return ownSlots + static_cast<size_t>(buf) * bufferBytes + static_cast<size_t>(src) * slotBytes;
  }
  // This thread's first vector and the grid's step (the grid-stride walk of vector_io.cuh).
  __device__ __forceinline__ size_t first() const { return static_cast<size_t>(blockIdx.x) * block + threadIdx.x; }
  __device__ __forceinline__ size_t stride() const { return static_cast<size_t>(grid) * block; }
};

// The plan as computed from the parameters (makeOneShotPlan), and the plan every launch uses: the
// same, handed through shared memory (planOneShot; param_staging.cuh says why). The unstaged form is
// for the fixed-cost probes, which measure what the staging is worth.
template <typename T>
__device__ __forceinline__ OneShotPlan makeOneShotPlan(const DeviceView& v, const T* send, T* recv, size_t count) {
  OneShotPlan p;
  p.send = reinterpret_cast<const char*>(send);
  p.recv = reinterpret_cast<char*>(recv);
  p.count = count;
  p.nVec = vectorCount(count * sizeof(T));
  const size_t mine = v.layout.oneShotOffset + static_cast<size_t>(v.rank) * v.layout.oneShotSlotBytes;
#pragma unroll
  for (int q = 0; q < kMaxRanks; ++q) p.peerSlot[q] = v.peer[q] + mine;
  p.ownSlots = v.local + v.layout.oneShotOffset;
  p.slotBytes = v.layout.oneShotSlotBytes;
  p.bufferBytes = static_cast<size_t>(v.nRanks) * p.slotBytes;
  p.records = v.control->oneShot;
  p.wait = waitContextOf(v);
  p.trace = v.trace;
  p.rank = v.rank;
  p.nRanks = v.nRanks;
  p.gridCap = v.gridCap;
  p.block = blockDim.x;
  p.grid = gridDim.x;
  p.inAligned = isVecAligned(send);
  p.outAligned = isVecAligned(recv);
  return p;
}
template <typename T>
__device__ __forceinline__ OneShotPlan planOneShot(const DeviceView& v, const T* send, T* recv, size_t count) {
  return stageThroughShared(makeOneShotPlan<T>(v, send, recv, count));
}

// Push and staged. Staged sends to one peer per step: at step k (1..n-1) peer rank+k, then waits for
// what peer rank-k sent it, so each rank has one outbound and one inbound stream at a time (per
// thread: threads move through the steps on their own, no barrier).
// The round record is read by every thread (one sector, one request per warp) and the block meets
// once, at the end, before its records advance (closeRound): no barrier between the wait and the
// stores to the peers. After the wait only registers are read until the first store (OneShotPlan).
template <typename T, int OP, class Clock>
__device__ __forceinline__ void oneShotPush(const DeviceView& v, const OneShotPlan& p, bool staged, CostTrace<>& trace,
                                            Clock& clock) {
  constexpr int kPer = kElemsPerVec<T>;
  const T* send = reinterpret_cast<const T*>(p.send);
  T* recv = reinterpret_cast<T*>(p.recv);
  const size_t count = p.count, nVec = p.nVec, first = p.first(), stride = p.stride();
  // The round record, then the first input vector: both loads in flight before either is used.
  const RoundRecord record = loadRound(p.records + blockIdx.x, p.wait.aborted);
  const uint4 firstRaw = first < nVec ? loadVector<T>(send, first * kPer, count, p.inAligned) : uint4{};
  const RoundState st = record.state();
  const uint4 firstIn = SentinelPacket::seal<T>(firstRaw);
  if (!st.aborted) {
    trace.mark(kMarkRound);
    const int buf = st.buffer;
    const size_t bufOffset = static_cast<size_t>(buf) * p.bufferBytes;
    const char* bufBase = p.ownSlot(buf, 0);

    Deadline d;
    if (!staged) {
      // 1. Push: my input into my slot of round buffer `buf` in every peer's buffer.
      for (size_t i = first; i < nVec; i += stride) {
        const uint4 x =
            i == first ? firstIn : SentinelPacket::seal<T>(loadVector<T>(send, i * kPer, count, p.inAligned));
#pragma unroll
        for (int q = 0; q < kMaxRanks; ++q)
          if (q < p.nRanks && q != p.rank) packetAt(p.peerSlot[q] + bufOffset + i * kVecBytes)->write(x);
      }
      trace.mark(kMarkSent);
    } else {
      // 1. Staged: step k pushes to rank+k, then waits for rank-k's data (kept in the slot for step 3).
      const size_t myOffset = v.layout.oneShotOffset + bufOffset + static_cast<size_t>(p.rank) * p.slotBytes;
      for (int k = 1; k < p.nRanks && !d.failed; ++k) {
        const int to = (p.rank + k) % p.nRanks, from = (p.rank + p.nRanks - k) % p.nRanks;
        for (size_t i = first; i < nVec; i += stride) {
          const uint4 x =
              i == first ? firstIn : SentinelPacket::seal<T>(loadVector<T>(send, i * kPer, count, p.inAligned));
          // v.peer, not p.peerSlot: a register array indexed at run time would live in local memory.
          packetAt(v.peer[to] + myOffset + i * kVecBytes)->write(x);
        }
        for (size_t i = first; i < nVec && !d.failed; i += stride) {
          uint4 seen[kMaxRanks];
          receiveFromPeers<T, true>(p.wait, bufBase + i * kVecBytes, p.slotBytes, 1u << from, seen, d);
        }
      }
    }

    // 2. Re-arm the previous round's slots while the peers' data is on its way.
    rearmSlots(p.ownSlot(st.rearm, 0), p.rank, p.nRanks, p.slotBytes, st.rearmBytes, first, stride);

    // 3. Wait for every peer's vector, reduce in rank order, write the output.
    const uint32_t peers = peerMask(p.rank, p.nRanks);
    for (size_t i = first; i < nVec && !d.failed; i += stride) {
      uint4 in[kMaxRanks];
      receiveFromPeers<T, true>(p.wait, bufBase + i * kVecBytes, p.slotBytes, peers, in, d);
      if (d.failed) break;
      if (i == first) {
        trace.mark(kMarkArrived);
        trace.notePolls(d.spins);
      }
      const uint4 own =
          i == first ? firstIn : SentinelPacket::seal<T>(loadVector<T>(send, i * kPer, count, p.inAligned));
      // Sealed like two-shot's reduced chunks: a -0.0 result is +0.0 in both algorithms.
      storeVector<T>(recv, i * kPer, count,
                     SentinelPacket::seal<T>(reduceInRankOrder<T, OP>(in, own, p.rank, p.nRanks)), p.outAligned);
    }
  }
  clock.stop();
  closeRound(st, p.records, p.gridCap, p.grid, stride, paddedBytes(count * sizeof(T)));
  if (st.aborted) return;
  trace.mark(kMarkEnd);
  trace.store(st.round);
}

// kClocked: KernelClock<true> compiled in (kernel_clock.cuh), for communicators that publish statistics.
template <typename T, int OP, bool kClocked>
__global__ void __launch_bounds__(kMaxThreads)
    oneShotAllReduce(const __grid_constant__ DeviceView v, const T* send, T* recv, size_t count, int variant) {
  const bool triggerFirst = (v.costSwitches & kTriggerBeforeWait) != 0u;
  KernelClock<kClocked> clock(v, clockKind(false, variant), count * sizeof(T));
  if (variant == kPull) {
    programmaticHandshake(triggerFirst);
    clock.start();
    oneShotPull<T, OP>(v, send, recv, count, clock);
    return;
  }
  const OneShotPlan plan = planOneShot<T>(v, send, recv, count);
  CostTrace<> trace(plan.trace);  // from the staged plan: no read of the parameters after the wait
  trace.mark(kMarkEntry);
  programmaticHandshake(triggerFirst);
  clock.start();
  trace.mark(kMarkPrevDone);
  oneShotPush<T, OP>(v, plan, variant == kStaged, trace, clock);
}

// ==================================================================================================
// One-shot push, small messages (what every one-block push runs: smallPushRanks, device_view.h).
// Purpose:      the one-shot push for a message one block holds, at one vector per thread, with the
//               number of ranks known at compile time (N = 2, 4, 8; N = 0: read at run time): no
//               grid-stride loops, no staged or pull code, no run-time peer loop bound, its wait
//               bounded at N. 1.21-1.25 us per call at 2 ranks sharing one H200 against the generic
//               kernel's 1.71-1.79 (docs/kernels.md, "The small-message kernel", "The ladder").
//               kTraced: the cost trace compiled in (the benchmark's instance; without it, no trace
//               code at all). kClocked: the kernel clock compiled in (kernel_clock.cuh).
// Requires:     what oneShotAllReduce requires, and one vector per thread of a single block
//               (vectors <= blockDim.x <= kMaxThreads), nRanks == N where N > 0. Shares the one-shot
//               round records, buffers and rotation with oneShotAllReduce, so calls of either follow
//               each other in any order.
// Launch shape: launchShape(vectors): one block of 32-512 threads.
// Size range:   8 B - 8 KiB.
// ==================================================================================================
template <typename T, int OP, int N, bool kTraced, bool kClocked>
__global__ void __launch_bounds__(kMaxThreads)
    oneShotSmallPush(const __grid_constant__ DeviceView v, const T* send, T* recv, size_t count) {
  static_assert(N == 0 || (N >= 2 && N <= kMaxRanks), "a communicator of 2 to kMaxRanks ranks, or 0: any");
  constexpr int kPer = kElemsPerVec<T>;
  constexpr int kPeers = N > 0 ? N : kMaxRanks;  // the unrolled peer loops' bound
  const OneShotPlan p = planOneShot<T>(v, send, recv, count);
  const int n = N > 0 ? N : p.nRanks;
  KernelClock<kClocked> clock(v, clockKind(false, kPush), count * sizeof(T));
  CostTrace<kTraced> trace(p.trace);
  trace.mark(kMarkEntry);
  programmaticHandshake(false);
  clock.start();
  trace.mark(kMarkPrevDone);
  const T* in = reinterpret_cast<const T*>(p.send);
  const size_t i = threadIdx.x;
  const bool mine = i < p.nVec;
  const RoundRecord record = loadRound(p.records, p.wait.aborted);
  const uint4 raw = mine ? loadVector<T>(in, i * kPer, p.count, p.inAligned) : uint4{};
  const RoundState st = record.state();
  const uint4 x = SentinelPacket::seal<T>(raw);
  if (!st.aborted) {
    trace.mark(kMarkRound);
    const size_t bufOffset = static_cast<size_t>(st.buffer) * p.bufferBytes;
    if (mine) {
#pragma unroll
      for (int q = 0; q < kPeers; ++q)
        if (q < n && q != p.rank) packetAt(p.peerSlot[q] + bufOffset + i * kVecBytes)->write(x);
    }
    trace.mark(kMarkSent);
    rearmSlots(p.ownSlot(st.rearm, 0), p.rank, n, p.slotBytes, st.rearmBytes, i, p.block);
    if (mine) {
      Deadline d;
      uint4 got[kMaxRanks];
      receiveFromPeers<T, true, kPeers>(p.wait, p.ownSlot(st.buffer, 0) + i * kVecBytes, p.slotBytes,
                                        peerMask(p.rank, n), got, d);
      if (!d.failed) {
        trace.mark(kMarkArrived);
        trace.notePolls(d.spins);
        storeVector<T>(reinterpret_cast<T*>(p.recv), i * kPer, p.count,
                       SentinelPacket::seal<T>(reduceInRankOrder<T, OP>(got, x, p.rank, n)), p.outAligned);
      }
    }
  }
  clock.stop();
  closeRound(st, p.records, p.gridCap, 1, p.block, paddedBytes(p.count * sizeof(T)));
  if (st.aborted) return;
  trace.mark(kMarkEnd);
  trace.store(st.round);
}

// ==================================================================================================
// Two-shot all-reduce.
// Purpose:      all-reduce of a mid-size message in two pushes: reduce-scatter (rank i pushes chunk j
//               of its input into its scatter slot in rank j's buffer; rank j reduces its chunk in rank
//               order), then all-gather (rank j pushes its reduced chunk into its gather slot in every
//               peer's buffer; everyone copies the chunks out).
// Requires:     count * sizeof(T) <= layout.twoShotMaxBytes; same count/dtype/op on every rank; all
//               blocks co-resident. Chunks: chunkBegin/chunkCount (symmetric_layout.h).
// Launch shape: launchShape(vectors of one chunk); thread t handles vector t of every chunk in all
//               phases, so in place is safe without any grid-wide sync.
// Size range:   from where one-shot's (n-1) x traffic stops paying, up to a few MiB (the built-in
//               table's two-shot limit is 8 MiB; above, NCCL is faster on 2x H200, docs/kernels.md).
// ==================================================================================================
template <typename T, int OP, class Clock>
__device__ __forceinline__ void twoShotPush(const DeviceView& v, const T* send, T* recv, size_t count, bool staged,
                                            Clock& clock) {
  BlockControl* ctl = v.control->twoShot;
  const RoundState st = beginLaunch(v, ctl);
  if (st.aborted) return;

  constexpr int kPer = kElemsPerVec<T>;
  const int n = v.nRanks, rank = v.rank;
  const int buf = roundBuffer(st.round), rb = rearmBuffer(st.round);
  const size_t chunk = chunkElems(count, sizeof(T), n);
  const size_t maxVec = vectorCount(chunk * sizeof(T));
  const bool inAligned = isVecAligned(send), outAligned = isVecAligned(recv);
  const size_t first = firstVector(), stride = vectorStride();
  const size_t slotBytes = v.layout.chunkSlotBytes;
  const size_t myScatter = scatterSlotOffset(v.layout, buf, rank);
  const size_t myGather = gatherSlotOffset(v.layout, buf, rank);
  const size_t myBegin = chunkBegin(count, sizeof(T), n, rank);
  const size_t myCount = chunkCount(count, sizeof(T), n, rank);

  Deadline d;
  const uint32_t peers = peerMask(rank, n);
  const char* scatterBase = v.local + scatterSlotOffset(v.layout, buf, 0);
  const char* gatherBase = v.local + gatherSlotOffset(v.layout, buf, 0);
  // One vector of chunk q of my input into my scatter slot in rank q's buffer.
  auto scatterTo = [&](int q, size_t i) {
    const size_t qCount = chunkCount(count, sizeof(T), n, q);
    if (i * kPer >= qCount) return;
    const T* qChunk = send + chunkBegin(count, sizeof(T), n, q);
    const uint4 x = SentinelPacket::seal<T>(loadVector<T>(qChunk, i * kPer, qCount, inAligned));
    packetAt(v.peer[q] + myScatter + i * kVecBytes)->write(x);
  };
  if (!staged) {
    // 1. Reduce-scatter push: chunk q of my input into my scatter slot in rank q's buffer.
    for (size_t i = first; i < maxVec; i += stride) {
#pragma unroll
      for (int q = 0; q < kMaxRanks; ++q)
        if (q < n && q != rank) scatterTo(q, i);
    }
  } else {
    // 1. Staged: step k sends chunk rank+k to its owner, then waits for rank-k's copy of my chunk.
    for (int k = 1; k < n && !d.failed; ++k) {
      const int to = (rank + k) % n, from = (rank + n - k) % n;
      for (size_t i = first; i < maxVec; i += stride) scatterTo(to, i);
      for (size_t i = first; i < maxVec && i * kPer < myCount && !d.failed; i += stride) {
        uint4 seen[kMaxRanks];
        receiveFromPeers<T>(v, scatterBase + i * kVecBytes, slotBytes, 1u << from, seen, d);
      }
    }
  }

  // 2. Re-arm the previous round's scatter and gather slots.
  rearmSlots(v, scatterSlotOffset(v.layout, rb, 0), slotBytes, st.rearmBytes);
  rearmSlots(v, gatherSlotOffset(v.layout, rb, 0), slotBytes, st.rearmBytes);

  for (size_t i = first; i < maxVec && !d.failed; i += stride) {
    // 3. My chunk: wait for every peer's copy, reduce in rank order, keep, push to every peer.
    //    The reduced value is sealed, so a -0.0 result (e.g. a product) becomes +0.0 here too and
    //    every rank holds the same bits (one-shot seals its results the same way).
    if (i * kPer < myCount) {
      uint4 in[kMaxRanks];
      receiveFromPeers<T>(v, scatterBase + i * kVecBytes, slotBytes, peers, in, d);
      if (d.failed) break;
      const uint4 own = SentinelPacket::seal<T>(loadVector<T>(send + myBegin, i * kPer, myCount, inAligned));
      const uint4 r = SentinelPacket::seal<T>(reduceInRankOrder<T, OP>(in, own, rank, n));
      if (!staged) {
#pragma unroll
        for (int q = 0; q < kMaxRanks; ++q)
          if (q < n && q != rank) packetAt(v.peer[q] + myGather + i * kVecBytes)->write(r);
      } else {
        // Staged: one peer per step (the waits are those of step 4 below, in any order).
        for (int k = 1; k < n; ++k) packetAt(v.peer[(rank + k) % n] + myGather + i * kVecBytes)->write(r);
      }
      storeVector<T>(recv + myBegin, i * kPer, myCount, r, outAligned);
    }
    // 4. The other chunks: wait for their owners' reduced vectors and copy them out.
    uint32_t expect = 0;
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q)
      if (q < n && q != rank && i * kPer < chunkCount(count, sizeof(T), n, q)) expect |= 1u << q;
    uint4 in[kMaxRanks];
    receiveFromPeers<T>(v, gatherBase + i * kVecBytes, slotBytes, expect, in, d);
    if (d.failed) break;
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q)
      if (expect & (1u << q))
        storeVector<T>(recv + chunkBegin(count, sizeof(T), n, q), i * kPer, chunkCount(count, sizeof(T), n, q), in[q],
                       outAligned);
  }

  clock.stop();
  endLaunch(v, ctl, st.round, paddedBytes(chunk * sizeof(T)));
}

template <typename T, int OP, bool kClocked>
__global__ void __launch_bounds__(kMaxThreads)
    twoShotAllReduce(const __grid_constant__ DeviceView v, const T* send, T* recv, size_t count, int variant) {
  KernelClock<kClocked> clock(v, clockKind(true, variant), count * sizeof(T));
  programmaticHandshake((v.costSwitches & kTriggerBeforeWait) != 0u);
  clock.start();
  if (variant == kPull)
    twoShotPull<T, OP>(v, send, recv, count, clock);
  else
    twoShotPush<T, OP>(v, send, recv, count, variant == kStaged, clock);
}

// The halves variant's kernels (allreduce_halves.cuh): kTwoShot picks the algorithm at compile time, so
// that neither instance carries the other's registers.
template <typename T, int OP, bool kClocked, bool kTwoShot>
__global__ void __launch_bounds__(kMaxThreads)
    halvesAllReduce(const __grid_constant__ DeviceView v, const T* send, T* recv, size_t count) {
  KernelClock<kClocked> clock(v, clockKind(kTwoShot, kHalves), count * sizeof(T));
  programmaticHandshake((v.costSwitches & kTriggerBeforeWait) != 0u);
  clock.start();
  if constexpr (kTwoShot)
    twoShotHalves<T, OP>(v, send, recv, count, clock);
  else
    oneShotHalves<T, OP>(v, send, recv, count, clock);
}

}  // namespace symmem::kernels::device

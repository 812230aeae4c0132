// SPDX-License-Identifier: Apache-2.0
#pragma once
// Waiting for peers, bounded: no kernel hangs on a peer that never comes.
//
// Every poll loop, every kSpinsPerCheck unsuccessful polls, reads %globaltimer and the two abort
// words: control->aborted (device memory, set by the first timeout or abort on this rank) and the
// host's abort word (mapped pinned memory, set by SymmetricComm::abort, i.e. ncclCommAbort). Past
// the deadline (DeviceView::timeoutNs after the first check) the thread stores the awaited rank and
// kDevicePeerTimeout into the mapped host error words. On a timeout or either abort it sets
// control->aborted (so later launches, graph replays too, exit at once) and stops waiting; the
// kernel then runs to its end without further waits. The host's word costs one read over the bus per
// kSpinsPerCheck polls, only while waiting, and ends a waiting kernel within about a millisecond.
#include <cstddef>
#include <cstdint>

#include "kernels/device_view.h"
#include "kernels/flag_protocol.cuh"

namespace symmem::kernels::device {

inline constexpr uint32_t kSpinsPerCheck = 256;

__device__ __forceinline__ uint64_t globalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One thread's wait state over a whole kernel: once failed, the thread waits no more.
struct Deadline {
  uint64_t limit = 0;
  uint32_t spins = 0;
  bool failed = false;
};

// What a wait needs in order to give up: the two abort words and the timeout. waitContextOf(v) takes
// them from the parameters; a launch that stages its plan before the programmatic wait carries them
// in the plan, so that its polls read no parameter after the wait (param_staging.cuh: the code
// generator would otherwise read them from the constant bank in the poll loop, on the call's path).
struct WaitContext {
  uint32_t* aborted;             // &DeviceControl::aborted
  volatile uint32_t* errorWord;  // DeviceView::errorWord (mapped host words)
  uint64_t timeoutNs;
};
__device__ __forceinline__ WaitContext waitContextOf(const DeviceView& v) {
  return WaitContext{&v.control->aborted, v.errorWord, v.timeoutNs};
}

// Called once per unsuccessful poll round; false once this thread must stop waiting.
__device__ __forceinline__ bool keepWaiting(Deadline& d, const WaitContext& w, int waitedRank) {
  if ((++d.spins % kSpinsPerCheck) != 0) return true;
  volatile uint32_t* aborted = w.aborted;
  if (*aborted != 0) {
    d.failed = true;
    return false;
  }
  if (w.errorWord[kHostAbort] == 0) {
    const uint64_t now = globalTimerNs();
    if (d.limit == 0) {
      d.limit = now + w.timeoutNs;
      return true;
    }
    if (now < d.limit) return true;
    w.errorWord[kHostWaitedRank] = static_cast<uint32_t>(waitedRank);
    __threadfence_system();
    w.errorWord[kHostError] = kDevicePeerTimeout;
  }
  *aborted = 1u;
  d.failed = true;
  return false;
}
__device__ __forceinline__ bool keepWaiting(Deadline& d, const DeviceView& v, int waitedRank) {
  return keepWaiting(d, waitContextOf(v), waitedRank);
}

// The ranks other than `rank` among 0..n-1, as a mask of ranks to wait for.
__device__ __forceinline__ uint32_t peerMask(int rank, int n) { return ((1u << n) - 1u) & ~(1u << rank); }

// Polls packet `at + q * slotStride` of this rank's own buffer for every rank q in `pending` until
// each has arrived; in[q] receives q's data. Stops early (d.failed) on timeout or abort. Each round
// issues the polls of every pending peer before looking at any of them, so that they are in flight
// together: one load latency per round whatever the number of peers (polled one after the other, each
// waiting for the previous one's answer, 8 ranks sharing one H200 spent 2.5 us per call waiting).
// kIntoResult: poll straight into in[q] (once q's packet has arrived q is polled no more, so in[q]
// keeps it): no second array of 8 vectors, 32 registers fewer, which keeps the one-shot kernels from
// spilling; the two-shot kernels, whose register allocation it changes for the worse (more spills,
// 0.3-1.2 us slower per call on 1x H200), poll into a separate array.
// kBound: no rank at or above it is pending (the rank count, where a kernel knows it at compile
// time). The unrolled loops then have kBound steps, not kMaxRanks: at 2 ranks the 8-step form issued
// 8 predicated polls and tested 8 mask bits in a chain of dependent instructions per round, 0.24 us
// per call of the small-message kernel on 1x H200 (docs/kernels.md, "The ladder").
// Tried and not kept: judging every pending peer on its own and clearing one mask at the end (no test
// waiting for the one before): the generic one-shot push 0.07-0.09 us faster per call at 2 and 4
// ranks sharing one H200 but 0.09 us slower at 8, two-shot push 0.15-0.46 us slower.
template <typename T, bool kIntoResult = false, int kBound = kMaxRanks>
__device__ __forceinline__ void receiveFromPeers(const WaitContext& w, const char* at, size_t slotStride,
                                                 uint32_t pending, uint4 (&in)[kMaxRanks], Deadline& d) {
  static_assert(kBound >= 1 && kBound <= kMaxRanks, "a bound on the ranks waited for");
  while (pending != 0u) {
    uint4 polled[kMaxRanks];
    uint4(&into)[kMaxRanks] = kIntoResult ? in : polled;
#pragma unroll
    for (int q = 0; q < kBound; ++q)
      if (pending & (1u << q)) into[q] = packetAt(at + static_cast<size_t>(q) * slotStride)->poll();
#pragma unroll
    for (int q = 0; q < kBound; ++q) {
      if ((pending & (1u << q)) && SentinelPacket::arrived<T>(into[q])) {
        if constexpr (!kIntoResult) in[q] = into[q];
        pending &= ~(1u << q);
      }
    }
    if (pending != 0u && !keepWaiting(d, w, __ffs(pending) - 1)) return;
  }
}
template <typename T, bool kIntoResult = false>
__device__ __forceinline__ void receiveFromPeers(const DeviceView& v, const char* at, size_t slotStride,
                                                 uint32_t pending, uint4 (&in)[kMaxRanks], Deadline& d) {
  receiveFromPeers<T, kIntoResult>(waitContextOf(v), at, slotStride, pending, in, d);
}

}  // namespace symmem::kernels::device

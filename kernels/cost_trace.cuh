// SPDX-License-Identifier: Apache-2.0
#pragma once
// Benchmark-only timestamps of one launch (DeviceView::trace, SymmetricConfig::costTrace): thread 0
// of block 0 notes %globaltimer (comparable across multiprocessors and ranks) and clock64 (this
// multiprocessor's cycles, finer) at each mark, and stores them at the end of the launch for call
// round % kTraceCalls, with the number of poll rounds that found the peers' data not there yet.
// Outside the benchmark `trace` is null and every mark is one uniform branch, or nothing at all in a
// kernel instance compiled without it (CostTrace<false>).
#include <cstdint>

#include "kernels/device_view.h"

namespace symmem::kernels::device {

enum TraceMark : int {
  kMarkEntry = 0,     // the parameters staged, before the programmatic handshake
  kMarkPrevDone = 1,  // the previous kernel on the stream has completed
  kMarkRound = 2,     // the round record has been read (loadRound)
  kMarkSent = 3,      // this thread's stores to every peer are issued
  kMarkArrived = 4,   // every peer's data for this thread's vector has been seen
  kMarkEnd = 5,       // output and round records stored
};
static_assert(kMarkEnd + 1 == kTraceMarks, "one word pair per mark");

// kCompiledIn = false: a trace that is never on, so every mark compiles to nothing (the small-message
// kernel users run: allreduce_kernels.cu launches its traced instance only for the benchmark).
template <bool kCompiledIn = true>
struct CostTrace {
  bool on;
  uint64_t* trace;
  uint64_t ns[kTraceMarks] = {};    // marks a launch does not pass (the staged variant's kMarkSent, a
  long long clk[kTraceMarks] = {};  // wait that timed out) are stored as 0
  uint32_t missedPolls = 0;         // poll rounds that found the first vector not yet arrived

  // `buffer` is DeviceView::trace, taken from the launch's staged plan (allreduce_kernels.cuh).
  __device__ __forceinline__ explicit CostTrace(uint64_t* buffer)
      : on(kCompiledIn && buffer != nullptr && blockIdx.x == 0 && threadIdx.x == 0), trace(buffer) {}

  __device__ __forceinline__ void mark(int k) {
    if (!on) return;
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    ns[k] = t;
    clk[k] = clock64();
  }

  // With kMarkArrived: how many poll rounds found the peers' data not there yet (Deadline::spins).
  __device__ __forceinline__ void notePolls(uint32_t spins) {
    if (on) missedPolls = spins;
  }

  __device__ __forceinline__ void store(uint64_t round) const {
    if (!on) return;
    uint64_t* at = trace + (round % kTraceCalls) * kTraceWords;
#pragma unroll
    for (int k = 0; k < kTraceMarks; ++k) {
      at[k] = ns[k];
      at[kTraceMarks + k] = static_cast<uint64_t>(clk[k]);
    }
    at[2 * kTraceMarks] = missedPolls;
  }
};

}  // namespace symmem::kernels::device

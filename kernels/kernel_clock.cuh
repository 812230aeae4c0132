// SPDX-License-Identifier: Apache-2.0
#pragma once
// The GPU's own count (and, when asked, time) of every symmetric kernel execution
// (docs/live-stats.md): what a graph replay never tells the host. Compiled only into the kernels'
// clocked instances (KernelClock<true>, launched when a communicator keeps statistics,
// allreduce_kernels_clocked.cu); KernelClock<false>, what every other launch runs, has no code and no
// register.
//
// Thread 0 of block 0 notes %globaltimer once the previous kernel on the stream has completed (after
// the programmatic wait; timed only) and again after its last data store, and adds the execution to
// its communicator's entry for (kernel kind, size bucket) in device memory (DeviceControl::stats):
// count, sum, min, max, each by a fire-and-forget atomic (RED) issued before the launch's records
// advance (closeRound, endLaunch). The kernel reads nothing for it and waits for nothing; the records'
// stores and the launch's end overlap the atomics. Where else this was tried, one H200, 2 ranks
// (docs/live-stats.md, "Cost"): atomics after the records' stores, +0.12-0.26 us per call; an atomic
// whose result is used, +0.2; the entry read after the wait and stored at the end, +0.15.
//
// The host copies the entries out (SymmetricComm::refreshKernelStats, from the plugin's statistics
// thread and at teardown): the kernels never touch host memory.
#include <cstdint>

#include "core/call_stats_layout.h"
#include "kernels/device_view.h"

namespace symmem::kernels::device {

__device__ __forceinline__ int statsBucket(uint64_t bytes) {
  if (bytes <= 1) return 0;
  const int b = 64 - __clzll(static_cast<long long>(bytes - 1));
  return b < stats::kBuckets ? b : stats::kBuckets - 1;
}

// stats::kernelKind, for device code: one-shot kinds first, each algorithm in core/sym_variant.h's order.
__device__ __forceinline__ int clockKind(bool twoShot, int variant) { return (twoShot ? 4 : 0) + variant; }
static_assert(stats::kKernelKinds == 8, "four variants of each algorithm");

template <bool kOn>
class KernelClock {
 public:
  // Before the programmatic wait: parameters only, no memory access.
  __device__ __forceinline__ KernelClock(const DeviceView& v, int kind, uint64_t bytes)
      : v_(v), on_(blockIdx.x == 0 && threadIdx.x == 0), at_(kind * stats::kBuckets + statsBucket(bytes)) {}

  // After the programmatic wait: a register read.
  __device__ __forceinline__ void start() {
    if (on_ && v_.statsTimed != 0) t0_ = now();
  }

  // After this thread's last data store, before the launch's records advance. Once per launch.
  __device__ __forceinline__ void stop() {
    if (!on_) return;
    RunningEntry* e = &v_.control->stats[0][0] + at_;
    atomicAdd(&e->count, 1ull);
    if (v_.statsTimed == 0) return;
    const unsigned long long dt = now() - t0_;
    atomicAdd(&e->sumNs, dt);
    atomicMax(&e->minNsComplement, ~dt);
    atomicMax(&e->maxNs, dt);
  }

 private:
  static __device__ __forceinline__ uint64_t now() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }

  const DeviceView& v_;
  bool on_;
  int at_;  // kind * kBuckets + size bucket
  uint64_t t0_ = 0;
};

template <>
class KernelClock<false> {
 public:
  __device__ __forceinline__ KernelClock(const DeviceView&, int, uint64_t) {}
  __device__ __forceinline__ void start() {}
  __device__ __forceinline__ void stop() {}
};

}  // namespace symmem::kernels::device

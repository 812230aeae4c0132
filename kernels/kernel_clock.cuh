// SPDX-License-Identifier: Apache-2.0
#pragma once
// The GPU's own count and time of a symmetric kernel execution (docs/live-stats.md): what a graph
// replay never tells the host. Compiled only into the kernels' clocked instances (KernelClock<true>,
// allreduce_kernels_clocked.cu), which run only for the calls the host picks to time
// (LaunchOptions::clocked: one in 64 of each kernel kind and size bucket, the first always, or every
// call); KernelClock<false>, what every other launch runs, has no code and no register. Every
// execution is counted anyway, at no cost to any kernel: each launch advances its algorithm's round
// record (round_control.cuh), which the host copies with these entries (symmetric_stats.cpp).
//
// Thread 0 of block 0 adds the execution to its communicator's entry for (kernel kind, size bucket)
// in device memory (DeviceControl::stats) with fire-and-forget atomics (RED) whose results nothing
// reads: the count at the kernel's entry, before the programmatic wait; the time from the end of that
// wait to its last data store (%globaltimer) as sum, min and max, issued before the launch's records
// advance (closeRound, endLaunch), so that the records' stores and the launch's end overlap them. The
// entry's address and the start time wait in shared memory: registers are what the two-shot kernels
// run short of. Nothing here makes the kernel wait for memory.
//
// What the forms tried cost a clocked execution, 2 ranks on one H200 (docs/live-stats.md, "Cost"):
// every atomic after the records' stores, +0.12-0.26 us per call; an atomic at the entry whose result
// the end reads, +0.2; the entry read after the wait and stored at the end (the first form),
// +0.15-0.19; this form, +0.11-0.18. A clocked instance whose clock never runs still costs the
// two-shot kernels +0.1 us (code placement), which is why the calls not timed run the plain instances.
//
// The host copies the entries out (SymmetricComm::copyKernelStats, from the plugin's publisher thread
// every 0.1 s, and at teardown): the kernels never touch host memory.
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
  // At the kernel's entry, before the programmatic wait: the count, by an atomic whose result is
  // never read. What stop() needs waits in shared memory, not in registers the kernel needs.
  __device__ __forceinline__ KernelClock(const DeviceView& v, int kind, uint64_t bytes)
      : on_(blockIdx.x == 0 && threadIdx.x == 0) {
    if (!on_) return;
    RunningEntry* e = &v.control->stats[kind][statsBucket(bytes)];
    atomicAdd(&e->count, 1ull);
    state().entry = e;
  }

  // After the programmatic wait: the time, to shared memory.
  __device__ __forceinline__ void start() {
    if (on_) state().t0 = now();
  }

  // After this thread's last data store, before the launch's records advance. Once per launch.
  __device__ __forceinline__ void stop() {
    if (!on_) return;
    RunningEntry* e = state().entry;
    const unsigned long long dt = now() - state().t0;
    atomicAdd(&e->sumNs, dt);
    atomicMax(&e->minNsComplement, ~dt);
    atomicMax(&e->maxNs, dt);
  }

 private:
  struct State {
    RunningEntry* entry;
    uint64_t t0;
  };
  static __device__ __forceinline__ State& state() {
    __shared__ State s;
    return s;
  }
  static __device__ __forceinline__ uint64_t now() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }

  bool on_;
};

template <>
class KernelClock<false> {
 public:
  __device__ __forceinline__ KernelClock(const DeviceView&, int, uint64_t) {}
  __device__ __forceinline__ void start() {}
  __device__ __forceinline__ void stop() {}
};

}  // namespace symmem::kernels::device

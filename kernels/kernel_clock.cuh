// SPDX-License-Identifier: Apache-2.0
#pragma once
// The GPU's own count (and, when asked, time) of every symmetric kernel execution
// (docs/live-stats.md): what a graph replay never tells the host. Off unless asked
// (SYMMEM_STATS_GPU=count: +0.11 us per call at 2 ranks on one H200; =time, DeviceView::statsTimed:
// +0.24 us). Compiled only into the kernels' clocked instances (KernelClock<true>, launched when a
// communicator publishes its statistics, allreduce_kernels_clocked.cu): compiled into every kernel
// and switched off at run time, it cost 0.04-0.06 us per one-shot call and 0.15-0.22 us per two-shot
// call on one H200 (docs/live-stats.md, "Cost"). Thread 0 of block 0 notes %globaltimer once the
// previous kernel on the stream has completed (after the programmatic wait) and again after its last
// store, and adds the execution to its communicator's entry for (kernel kind, size bucket): count,
// sum, min, max.
//
// Where: the running entry lives in device memory (DeviceControl::stats), read at the start, so its
// load is in flight while the kernel works and nothing waits for it at the end; the updated entry is
// stored there and, every 64th execution of the entry, mirrored into the process's statistics file
// (mapped pinned host memory, DeviceView::statsMirror), where symmem-stat reads it; teardown copies
// the running entries there whole. (A store to host memory in every execution cost 0.19-0.22 us per
// call: the kernel's completion waits for it; docs/live-stats.md, "Cost".) Executions of
// one communicator follow each other (symmetric_order.cpp), so one entry has one writer at a time.
// KernelClock<false>, what every launch without statistics runs: no code, no register.
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
  // Before the programmatic wait: parameters only (the constant bank), no memory read.
  __device__ __forceinline__ KernelClock(const DeviceView& v, int kind, uint64_t bytes)
      : on_(blockIdx.x == 0 && threadIdx.x == 0) {
    if (!on_) return;
    const int at = kind * stats::kBuckets + statsBucket(bytes);
    running_ = &v.control->stats[0][0] + at;
    mirror_ = v.statsMirror + at;
    mirrorMask_ = v.statsMirrorMask;
    timed_ = v.statsTimed != 0;
  }

  // After the programmatic wait: the previous execution's entry is complete and visible.
  __device__ __forceinline__ void start() {
    if (!on_) return;
    const uint4* from = reinterpret_cast<const uint4*>(running_);
    lo_ = from[0];  // count, sum
    if (!timed_) return;
    hi_ = from[1];  // min, max
    t0_ = now();
  }

  // After the launch's last store of this thread.
  __device__ __forceinline__ void stop() {
    if (!on_) return;
    const uint64_t count = word(lo_, 0);
    if (!timed_) {
      // The count alone: one load at the start, one store here, a host store every 64th time.
      const uint4 a = pack(count + 1, 0);
      *reinterpret_cast<uint4*>(running_) = a;
      if (((count + 1) & mirrorMask_) == 0) store16(reinterpret_cast<volatile uint4*>(mirror_), a);
      return;
    }
    const uint64_t dt = now() - t0_;
    const uint64_t sum = word(lo_, 1), lo = word(hi_, 0), hi = word(hi_, 1);
    const uint4 a = pack(count + 1, sum + dt);
    const uint4 b = pack(count == 0 || dt < lo ? dt : lo, dt > hi ? dt : hi);
    uint4* run = reinterpret_cast<uint4*>(running_);
    run[0] = a;
    run[1] = b;
    // Every 64th execution only (DeviceView::statsMirrorMask): a store to host memory makes the
    // kernel's completion wait for it. Count and sum in one 16-byte store, min and max in the next: a
    // reader that sees the same count before and after its copy has one execution's values
    // (core/call_stats_segment.cpp).
    if (((count + 1) & mirrorMask_) != 0) return;
    volatile uint4* mirror = reinterpret_cast<volatile uint4*>(mirror_);
    store16(mirror, a);
    store16(mirror + 1, b);
  }

 private:
  static __device__ __forceinline__ uint64_t now() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }
  static __device__ __forceinline__ uint64_t word(const uint4& v, int i) {
    return i == 0 ? (static_cast<uint64_t>(v.y) << 32 | v.x) : (static_cast<uint64_t>(v.w) << 32 | v.z);
  }
  static __device__ __forceinline__ uint4 pack(uint64_t a, uint64_t b) {
    return make_uint4(static_cast<uint32_t>(a), static_cast<uint32_t>(a >> 32), static_cast<uint32_t>(b),
                      static_cast<uint32_t>(b >> 32));
  }
  static __device__ __forceinline__ void store16(volatile uint4* to, const uint4& v) {
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(to), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
  }

  bool on_;
  stats::KernelEntry* running_ = nullptr;
  stats::KernelEntry* mirror_ = nullptr;
  uint64_t mirrorMask_ = 0;
  bool timed_ = false;
  uint4 lo_{}, hi_{};
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

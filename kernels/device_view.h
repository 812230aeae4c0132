// SPDX-License-Identifier: Apache-2.0
#pragma once
// Plain handles the kernels get by value: what the host object (SymmetricCommImpl) knows about the
// mapped buffers, flattened into a POD. No host object ever crosses into device code.
#include <cstddef>
#include <cstdint>

#include "core/call_stats_layout.h"
#include "kernels/symmetric_layout.h"

namespace symmem::kernels {

// Error codes a kernel leaves in the host-visible error word.
enum DeviceError : uint32_t { kDeviceOk = 0, kDevicePeerTimeout = 1 };

// The words of the mapped pinned host block DeviceView::errorWord points at.
enum HostWord : int {
  kHostError = 0,       // DeviceError, written by a kernel
  kHostWaitedRank = 1,  // the rank a timed-out kernel waited for
  kHostAbort = 2,       // written by the host (SymmetricComm::abort): every wait stops
  kHostWords = 4,
};

// Progress of one algorithm as seen by block b of its launches, in device memory, changed only by
// the kernels (graph replay safe). Each block reads only its own entry; at its end block b writes
// entries b, b + G, b + 2G, ... (G = its launch's grid), i.e. its own and those of block indices this
// launch does not have, so every entry holds the same values after every launch, whatever grid the
// next launch picks, and no block ever reads an entry another block of its launch may have advanced.
// One entry per block index, 32 bytes: a block's start reads one sector. (Arrays indexed by block,
// which coalesce the end-of-launch stores, are 0.15-0.2 us slower per call at 8 B - 16 KiB on 2x
// H200, docs/kernels.md: four sectors to read on the critical path instead of one.)
// Aligned to its size: the one-shot kernels read a record as two 16-byte vectors (loadRound).
struct alignas(32) BlockControl {
  uint64_t round;                // calls of this algorithm completed on this rank
  uint64_t dirtyBytes[kRounds];  // bytes per slot written in each round buffer, not re-armed yet
};
static_assert(sizeof(BlockControl) == 32 && alignof(BlockControl) == 32, "one 32-byte sector per record");

// One kernel kind and size bucket as the kernels keep it (kernel_clock.cuh): added to by atomics whose
// results no kernel reads. The minimum is kept complemented, so that memory set to zero is an empty
// entry and an atomic maximum keeps it. The statistics file's form is stats::KernelEntry
// (toKernelEntry).
struct alignas(32) RunningEntry {
  unsigned long long count;
  unsigned long long sumNs;
  unsigned long long minNsComplement;  // ~min: 0 while empty
  unsigned long long maxNs;
};
static_assert(sizeof(RunningEntry) == 32, "one sector per entry");

inline stats::KernelEntry toKernelEntry(const RunningEntry& e) {
  return stats::KernelEntry{e.count, e.sumNs, e.count == 0 ? 0 : ~e.minNsComplement, e.maxNs};
}

struct DeviceControl {
  BlockControl oneShot[kMaxGrid];
  BlockControl twoShot[kMaxGrid];
  // The running count and GPU time of this rank's executions per kernel kind and size bucket
  // (kernel_clock.cuh); copied into the process's statistics file by the host (symmetric_stats.cpp).
  RunningEntry stats[stats::kKernelKinds][stats::kBuckets];
  uint32_t aborted;  // set by the first timeout or abort: every later launch exits at once
  uint32_t pad;
};

// Benchmark-only forms of the per-call path (SymmetricConfig::costSwitches), each the earlier form of
// something that was changed to cut the fixed cost, or a candidate form not yet measured, kept so that
// one binary measures both (tests/bench/shared_gpu_floor.cu, docs/kernels.md "Fixed cost"). Every
// switch keeps results exact.
enum CostSwitch : uint32_t {
  kTriggerBeforeWait = 1u << 0,  // admit the next kernel before waiting for the previous one (programmatic_launch.h)
  kRecordEveryCall = 1u << 1,    // one call-order record node per captured call (symmetric_order.cpp)
  kSeqCstAnnounce = 1u << 2,     // pull: a sequentially consistent system fence before a tile's flags (pull_flags.cuh)
  kGenericOneBlock = 1u << 3,    // one-block pushes through the generic oneShotAllReduce, not oneShotSmallPush
  kSmallPushAnyRanks = 1u << 4,  // oneShotSmallPush with the rank count known only at run time, on every rank count
                                 // (what the compile-time instances for 2, 4 and 8 ranks are worth)
};
inline constexpr uint32_t kKnownCostSwitches =
    kTriggerBeforeWait | kRecordEveryCall | kSeqCstAnnounce | kGenericOneBlock | kSmallPushAnyRanks;

// Which one-shot push kernel a launch runs (allreduce_kernels.cu): the small-message kernel
// oneShotSmallPush<.., N> when one block holds the message at one vector per thread (8 B - 8 KiB),
// with N the rank count where an instance for it exists (2, 4, 8) and N = 0 (the rank count read at
// run time) otherwise; kGenericOneShot: the generic oneShotAllReduce (several blocks or several vectors
// per thread, the pull and staged variants).
inline constexpr int kGenericOneShot = -1;
constexpr int smallPushRanks(bool push, const LaunchShape& shape, size_t vectors, int nRanks, uint32_t costSwitches) {
  if (!push || shape.blocks != 1 || vectors > static_cast<size_t>(shape.threads) ||
      (costSwitches & kGenericOneBlock) != 0u)
    return kGenericOneShot;
  if ((costSwitches & kSmallPushAnyRanks) != 0u) return 0;
  return nRanks == 2 || nRanks == 4 || nRanks == 8 ? nRanks : 0;
}

// Benchmark-only timestamps (SymmetricConfig::costTrace): thread 0 of block 0 of every one-shot push
// launch stores, for call `round % kTraceCalls`, kTraceMarks %globaltimer values and as many clock64
// values (cost_trace.cuh names the marks).
inline constexpr int kTraceCalls = 64;
inline constexpr int kTraceMarks = 6;
inline constexpr int kTraceWords = 2 * kTraceMarks + 1;  // + the unsuccessful poll rounds before kMarkArrived

struct DeviceView {
  int rank;
  int nRanks;
  char* local;            // this rank's buffer
  char* peer[kMaxRanks];  // peer[r]: rank r's buffer as mapped on this device (peer[rank] == local)
  SymmetricLayout layout;
  DeviceControl* control;        // device memory
  volatile uint32_t* errorWord;  // mapped pinned host memory, HostWord entries
  uint64_t timeoutNs;
  int gridCap;            // no launch of this comm has more blocks (<= kMaxGrid)
  uint32_t costSwitches;  // CostSwitch bits, 0 outside the benchmark
  uint64_t* trace;        // kTraceCalls x kTraceWords, nullptr outside the benchmark
  // The halves (SymmetricConfig::halves; layout.halves says whether there are any): this rank's half
  // (0 or 1), the other ranks of its half, and each rank's partner, the rank at its position in the
  // other half.
  int half;
  uint32_t islandPeers;
  uint8_t partnerOf[kMaxRanks];
};

}  // namespace symmem::kernels

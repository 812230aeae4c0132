// SPDX-License-Identifier: Apache-2.0
#pragma once
// The layout of a process's live all-reduce statistics (docs/live-stats.md): one file per process,
// written by the plugin (plugin/stats/call_stats.h) and by its kernels (kernels/kernel_clock.cuh), read by
// symmem-stat and symmem-report from other processes (core/call_stats_segment.h). Plain data only: the
// same bytes mean the same on both sides, whatever compiler built each.
//
// A header page, then kSlots communicator slots of kSlotBytes each. Every counter is a naturally
// aligned 64-bit word, written whole (a reader never sees half of one). A slot's identity (its
// communicator, rank, path) is guarded by `seq`: odd while the writer changes it; a reader copies the
// identity and the counters between two reads of an even, equal `seq`.
//
// Layout version 3 (version 1 had no halves routes; version 2 no sampling and no runs per algorithm). Any change to
// these structs or constants is a new version: readers refuse a layout they do not know (core/call_stats_segment.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace symmem::stats {

inline constexpr char kMagic[8] = {'S', 'Y', 'M', 'M', 'S', 'T', 'A', 'T'};
inline constexpr uint32_t kLayoutVersion = 3;

// Size buckets, powers of two: bucket b holds calls of (2^(b-1), 2^b] bytes (bucket 0: 0 and 1 B);
// the last one everything above 1 GiB.
inline constexpr int kBuckets = 32;
constexpr int sizeBucket(uint64_t bytes) {
  if (bytes <= 1) return 0;
  int b = 64 - __builtin_clzll(bytes - 1);  // ceil(log2(bytes))
  return b < kBuckets ? b : kBuckets - 1;
}
// The largest size bucket `b` holds (its upper bound), 0 for the open-ended last one.
constexpr uint64_t bucketUpperBytes(int b) { return b >= kBuckets - 1 ? 0 : uint64_t{1} << b; }

// Where an all-reduce went. The first kKernelKinds are the symmetric kernels (algorithm x variant, in
// core/sym_variant.h's order), and also index the GPU's own entries; the rest went to NCCL.
enum class Route : uint32_t {
  OneShotPush,
  OneShotPull,
  OneShotStaged,
  OneShotHalves,
  TwoShotPush,
  TwoShotPull,
  TwoShotStaged,
  TwoShotHalves,
  NcclTuned,           // NCCL, with the algorithm/protocol/channels of a decision table band
  NcclTable,           // NCCL untouched: the table leaves this size and type to NCCL
  NcclTypeOrOp,        // a type or operation the symmetric kernels do not take, or an empty call
  NcclPathOff,         // this communicator's symmetric path is off (the slot's `path` says why)
  NcclBeforeSetup,     // before the communicator was set up: captured, or first met inside a group
  NcclConfig,          // ncclAllReduceConfig asking something of the execution
  NcclKernelDeclined,  // the kernels could not take it (larger than their buffers)
  Failed,              // the symmetric call returned an error (a peer's timeout, a CUDA error)
  kCount
};
inline constexpr int kRoutes = static_cast<int>(Route::kCount);
inline constexpr int kKernelKinds = 8;
constexpr int kernelKind(bool twoShot, int variant) { return (twoShot ? 4 : 0) + variant; }
// The kernels' algorithms, one-shot then two-shot; kind k is one of algorithm k / 4.
inline constexpr int kAlgorithms = 2;
constexpr int algorithmOf(int kind) { return kind / 4; }
constexpr bool isSymmetric(Route r) { return static_cast<int>(r) < kKernelKinds; }

// Short names, as symmem-stat and the summary lines print them ("one-shot push", "NCCL (table band)").
std::string_view routeName(Route r);
// Names for labels and JSON keys ("one_shot_push", "nccl_tuned").
std::string_view routeKey(Route r);

enum Mode : int { kEager = 0, kCaptured = 1, kModes = 2 };

// What the GPU measured of the timed executions of one kernel kind and size bucket: how many, and
// block 0's time from the end of its wait for the previous kernel on the stream to its last store
// (%globaltimer, ns).
struct alignas(32) KernelEntry {
  uint64_t count;
  uint64_t sumNs;
  uint64_t minNs;
  uint64_t maxNs;
};
static_assert(sizeof(KernelEntry) == 32);

// One call in kDefaultSamplePeriod of each kernel kind and size bucket, the first always, is timed
// unless SYMMEM_STATS_GPU=every (period 1).
inline constexpr uint32_t kDefaultSamplePeriod = 64;

// What a communicator's kernels counted on one rank (kernels/kernel_clock.cuh), copied here by the
// plugin every 0.1 s under the slot's sequence word and once more at the communicator's teardown:
// every execution of each algorithm (its round records: graph replays included, at no cost to the
// kernels), and the timed executions by kernel kind and size bucket.
// Its own sequence word (odd while a writer changes it) because teardown writes it from the kernels'
// side, which knows nothing of the slot's: a reader copies it between two equal, even reads of both.
struct GpuCounts {
  uint64_t runs[kAlgorithms];
  uint64_t seq;
  uint64_t reserved;
  KernelEntry timed[kKernelKinds][kBuckets];
};
static_assert(offsetof(GpuCounts, timed) == 32);

enum class SlotState : uint32_t { Free = 0, Live = 1, Ended = 2 };

inline constexpr size_t kPathBytes = 160;
inline constexpr size_t kSlotBytes = 20480;  // the counters need 16672 bytes
inline constexpr int kSlots = 64;
inline constexpr size_t kHeaderBytes = 4096;

struct CommSlot {
  uint64_t seq;                               // even: identity stable; odd: being changed
  SlotState state;                            // Free, Live, or Ended (kept for readers until the slot is reused)
  int32_t rank;                               // in its communicator
  int32_t nRanks;                             //
  int32_t device;                             // CUDA device ordinal in the writing process
  uint64_t comm;                              // the ncclComm_t, as the process sees it
  uint64_t openedNs;                          // CLOCK_REALTIME when the plugin first met it
  uint64_t closedNs;                          // when it was destroyed (Ended)
  uint32_t symmetric;                         // 1: the symmetric path is on for this communicator
  uint32_t gpuSampling;                       // 0: no `gpu` below; N: one call in N timed (1: all)
  char path[kPathBytes];                      // "symmetric (cc 12.0, link pcie-switch)" or the reason it stays on NCCL
  uint8_t reserved[40];                       //
  uint64_t calls[kRoutes][kBuckets][kModes];  // host: calls by route, size bucket, eager/captured
  GpuCounts gpu;                              // the GPU's
};
static_assert(offsetof(CommSlot, calls) == 256, "identity in the first 256 bytes");
static_assert(sizeof(CommSlot) <= kSlotBytes, "a slot fits its room");
static_assert(offsetof(CommSlot, gpu) % 32 == 0, "the GPU's counts aligned for 16-byte stores");

struct Header {
  char magic[8];            // kMagic, written last: a reader waits for it
  uint32_t version;         // kLayoutVersion
  uint32_t headerBytes;     // kHeaderBytes
  uint32_t slotBytes;       // kSlotBytes
  uint32_t slots;           // kSlots
  uint32_t routes;          // kRoutes
  uint32_t buckets;         // kBuckets
  uint32_t kernelKinds;     // kKernelKinds
  uint32_t modes;           // kModes
  int64_t pid;              // the writing process
  uint64_t startTicks;      // its start time (field 22 of /proc/PID/stat): a reused PID is another process
  uint64_t createdNs;       // CLOCK_REALTIME at creation
  uint64_t untrackedComms;  // communicators that found every slot live (counted in-process only)
  char program[64];         // the writing program's name (/proc/self/comm)
  char pluginVersion[32];   //
};
static_assert(sizeof(Header) <= kHeaderBytes);

inline constexpr size_t kSegmentBytes = kHeaderBytes + static_cast<size_t>(kSlots) * kSlotBytes;

}  // namespace symmem::stats

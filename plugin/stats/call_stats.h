// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the plugin did with each communicator's all-reduces, counted as they happen and published in
// the process's statistics file (core/call_stats_layout.h; read by symmem-stat, docs/live-stats.md).
//
// CallStats owns the file and hands out its slots, one per communicator; CommCounters is one
// communicator's lease on a slot: the interposer counts each call there (route, size bucket, eager or
// captured; a relaxed load and store of one word), and the communicator's kernels count their own
// executions and GPU times on the device (kernels/kernel_clock.cuh), which CallStats's publisher
// thread copies into the slot every 0.1 s (stats_publisher.h) and teardown once more. When the lease
// ends (the communicator is destroyed, aborted or finalized) it logs the communicator's summary at
// INFO and leaves the slot for readers, marked ended, until a new communicator needs it.
//
// Nothing here is agreed with peers, and nothing here changes what a call does: a file that cannot be
// made, a slot that cannot be had, memory the GPU cannot map only make the counts less visible.
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/call_stats_layout.h"
#include "core/call_stats_segment.h"
#include "plugin/stats/stats_publisher.h"

namespace symmem {

class CallStats;

class CommCounters {
 public:
  CommCounters(CallStats& owner, stats::CommSlot* slot, ncclComm_t comm);
  ~CommCounters();  // the summary line, then the slot is left to readers, ended
  CommCounters(const CommCounters&) = delete;
  CommCounters& operator=(const CommCounters&) = delete;

  void count(stats::Route route, uint64_t bytes, bool captured) noexcept {
    uint64_t* c = &slot_->calls[static_cast<int>(route)][stats::sizeBucket(bytes)][captured ? 1 : 0];
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
  }
  // What setup found (rank, ranks, device, the path and why), shown with the counts.
  void describe(int rank, int nRanks, int device, bool symmetric, const std::string& path);
  // This communicator's GPU counts in its slot, where teardown leaves the kernels' last counts
  // (kernels::SymmetricComm::publishKernelStats).
  stats::GpuCounts* gpuMirror() const { return &slot_->gpu; }
  // The kernels time one call in `period` of each kernel kind and size bucket (1: every call).
  void markGpuSampling(uint32_t period);
  // The kernels' counts as just copied from the device, written under the slot's sequence word.
  void writeGpu(const stats::GpuCounts& counts);
  // "1234 all-reduces: one-shot push 1200 (8B - 16KiB, 1100 captured; GPU 55000 runs, 860 timed: mean
  // 4.10 us, max 9.80 us); NCCL (type/op) 34 (8B)": the captured calls are counted once, at capture;
  // the GPU's runs count every replay, its times are those of the timed calls.
  std::string summary() const;
  ncclComm_t comm() const { return comm_; }
  const stats::CommSlot& slot() const { return *slot_; }

 private:
  CallStats& owner_;
  stats::CommSlot* slot_;  // in the file, or this lease's own when every slot of the file is live
  std::unique_ptr<stats::CommSlot> own_;
  ncclComm_t comm_;
};

class CallStats {
 public:
  // A file in `dir` (empty: /dev/shm); where it cannot be made, counters in this process only (for
  // the summary lines), said once at INFO.
  static std::unique_ptr<CallStats> open(const std::string& dir);
  // Over a segment made elsewhere (tests).
  explicit CallStats(std::unique_ptr<stats::WrittenSegment> segment);
  ~CallStats();

  // A lease on a free slot, else on the slot that ended longest ago; when all are live, a slot of the
  // lease's own (counted in the header as untracked; said once).
  std::unique_ptr<CommCounters> lease(ncclComm_t comm);
  const stats::WrittenSegment& segment() const { return *segment_; }
  // What the kernels keep themselves (SYMMEM_STATS_GPU): 0, nothing; else every execution counted and
  // one call in this many of each kernel kind and size bucket timed (1: every call).
  void setGpuSampling(uint32_t period) { gpuSampling_ = period; }
  uint32_t gpuSampling() const { return gpuSampling_; }

  // From now on, every kPublishPeriod, `copy` fills the kernels' entries from the device and they are
  // written into `counters`' slot; until the registration is destroyed (before the communicator's
  // kernels are freed). Null when no thread can be had: the counts then reach the slot at teardown.
  static constexpr std::chrono::milliseconds kPublishPeriod{100};
  using CopyGpu = std::function<bool(stats::GpuCounts* to)>;
  std::unique_ptr<StatsPublisher::Registration> publishGpu(CommCounters& counters, CopyGpu copy);
  // At exit, before the CUDA runtime goes: no copy after this returns.
  void stopPublishing() { publisher_.stop(); }

  // At exit: removes the file (readers would find a process that is gone).
  void removeFile();
  // In a forked child: the file and its mapping are the parent's. The child keeps counting into
  // private memory at the same addresses and removes nothing.
  void detachInForkedChild();
  // Around fork (pthread_atfork, through the interposer): the slots' lock and the publisher's held by
  // the forking thread, so that the child inherits neither in the middle of a change.
  void lockForFork();
  void unlockAfterFork();
  bool inForkedChild() const { return forkedChild_; }

 private:
  friend class CommCounters;
  void end(stats::CommSlot* slot);

  std::unique_ptr<stats::WrittenSegment> segment_;
  std::mutex mutex_;  // slots: leases, ends, the publisher's writes
  uint32_t gpuSampling_ = 0;
  bool forkedChild_ = false;
  StatsPublisher publisher_{kPublishPeriod};
};

// Writes a slot's identity under its sequence word (odd while it changes).
void writeSlotIdentity(stats::CommSlot* slot, stats::SlotState state, int rank, int nRanks, int device, uint64_t comm,
                       bool symmetric, const std::string& path);

}  // namespace symmem

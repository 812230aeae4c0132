// SPDX-License-Identifier: Apache-2.0
#pragma once
// A forked process that keeps a statistics file as the plugin does (core/call_stats_segment.h), with
// known counts, for the tests of the tools that read them (symmem-stat, symmem-report).
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/call_stats_segment.h"
#include "tests/unit/call_stats_writer.h"

namespace symmem::testing {

inline uint64_t realtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// A process with the plugin's statistics file: by default slot 0 a symmetric communicator opened 10 s
// ago with one-shot push calls (7 eager at 8 B, 5 captured at 4 KiB) and their GPU entries, and NCCL
// calls; slot 1 a communicator whose path is off, ended (`fill` writes other slots instead). It keeps
// the file until destroyed.
class StatsWritingProcess {
 public:
  using Fill = std::function<void(stats::WrittenSegment& seg)>;

  explicit StatsWritingProcess(const std::string& dir, const Fill& fill = nullptr) {
    int ready[2], hold[2];
    if (pipe(ready) != 0 || pipe(hold) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(ready[0]);
      close(hold[1]);
      std::string why;
      auto seg = stats::WrittenSegment::createShared(dir, "stat-child", "0.1.0", &why);
      if (seg == nullptr) _exit(3);
      if (fill) {
        fill(*seg);
      } else {
        defaultFill(*seg);
      }
      if (write(ready[1], "r", 1) != 1) _exit(4);
      char c;
      while (read(hold[0], &c, 1) > 0) {
      }
      seg.reset();
      _exit(0);
    }
    close(ready[1]);
    close(hold[0]);
    hold_ = hold[1];
    char c;
    ready_ = read(ready[0], &c, 1) == 1;
    close(ready[0]);
  }
  ~StatsWritingProcess() {
    if (hold_ >= 0) close(hold_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  bool ready() const { return ready_; }
  pid_t pid() const { return pid_; }

  static void defaultFill(stats::WrittenSegment& segment) {
    auto* seg = &segment;
    SlotIdentity a;
    a.comm = 0xa1;
    a.rank = 0;
    a.nRanks = 2;
    a.openedNs = realtimeNs() - 10 * 1000000000ull;
    claimSlot(seg->slot(0), a);
    countCalls(seg->slot(0), stats::Route::OneShotPush, 8, false, 7);
    countCalls(seg->slot(0), stats::Route::OneShotPush, 4096, true, 5);
    countCalls(seg->slot(0), stats::Route::NcclTuned, 1 << 20, false, 3);
    storeKernelEntry(&seg->slot(0)->gpu.timed[0][3], 7, 7 * 2000, 1500, 2500);
    storeKernelEntry(&seg->slot(0)->gpu.timed[0][12], 5, 5 * 6000, 5000, 7000);
    storeWord(&seg->slot(0)->gpu.runs[0], 12);
    SlotIdentity b;
    b.comm = 0xb2;
    b.rank = 1;
    b.nRanks = 4;
    b.symmetric = false;
    b.gpuSampling = 0;
    b.path = "NCCL: a peer has no P2P access";
    b.openedNs = a.openedNs;
    claimSlot(seg->slot(1), b);
    countCalls(seg->slot(1), stats::Route::NcclPathOff, 100, false, 4);
    endSlot(seg->slot(1), a.openedNs + 2 * 1000000000ull);
    seg->header()->untrackedComms = 1;
  }

 private:
  pid_t pid_ = -1;
  int hold_ = -1;
  bool ready_ = false;
};

}  // namespace symmem::testing

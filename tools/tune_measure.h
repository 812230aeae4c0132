// SPDX-License-Identifier: Apache-2.0
#pragma once
// One rank of one symmem-tune world: set up NCCL and the symmetric path on its GPU, then for every
// size check each path's result once and time the three paths under CUDA graphs (tools/bench_timing.h),
// taking them in turn for a few rounds so that drift hits all three alike. Rank 0 writes the medians
// into a report in memory shared with the parent.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "tools/bench_ranks.h"
#include "tools/nccl_library.h"
#include "tools/tune_crossover.h"
#include "tools/tune_options.h"
#include "tools/tune_plan.h"

namespace symmem {

inline constexpr int kTuneMaxSizes = 64;

// The paths timed, in the order of the report's columns: the three a table entry chooses between.
inline constexpr int kTunePaths = 3;
inline constexpr TunedChoice kTunePathOrder[kTunePaths] = {TunedChoice::Nccl, TunedChoice::OneShot,
                                                           TunedChoice::TwoShot};
inline const char* tunePathName(int column) { return tunedChoiceName(kTunePathOrder[column]); }

// Lives in an anonymous shared mapping; the parent reads it after the ranks have exited.
struct TuneRankReport {
  double medianUs[kTuneMaxSizes][kTunePaths];
  double minUs[kTuneMaxSizes][kTunePaths];
  double maxUs[kTuneMaxSizes][kTunePaths];
  long long wrong[kTuneMaxSizes][kTunePaths];  // elements that differed from the exact sum in the check
  int sizesDone;
  int ccMajor[bench::kMaxForkedRanks];
  int ccMinor[bench::kMaxForkedRanks];
  int cudaRuntimeVersion;
  int cudaDriverVersion;
  char deviceName[256];
  std::atomic<int> errorClaimed;
  char error[512];  // the first problem a rank reported, for the parent's message
};

struct TuneRankJob {
  const TuneWorld* world = nullptr;
  const TuneOptions* options = nullptr;
  const std::vector<uint64_t>* sizes = nullptr;
  const NcclLibrary* nccl = nullptr;
  bench::RankRendezvous* rendezvous = nullptr;
  TuneRankReport* report = nullptr;
  int stepsBefore = 0;  // progress: timed steps of earlier worlds
  int stepsTotal = 0;
  std::chrono::steady_clock::time_point start;  // CLOCK_MONOTONIC: the same clock in every process
};

// The body of one forked rank; returns its exit code (0: measured every size).
int measureTuneRank(const TuneRankJob& job, int rank);

}  // namespace symmem

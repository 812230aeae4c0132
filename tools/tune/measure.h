// SPDX-License-Identifier: Apache-2.0
#pragma once
// One rank of one set of symmem-tune ranks. A world size is measured by several sets of forked ranks,
// one after the other: first stock NCCL (no NCCL_ALGO / NCCL_PROTO) together with the symmetric paths,
// then one set per NCCL configuration, which sets NCCL_ALGO and NCCL_PROTO in the fresh rank process
// before ncclCommInitRank (NCCL 2.28 reads them at each communicator's init, and again at enqueue time
// in places, so a process keeps one configuration for its life). Each set checks every one of its
// paths once per size and times them under CUDA graphs (tools/common/graph_timing.h), taking them in turn for
// a few rounds so that drift hits them alike. Rank 0 writes the medians into a report in memory shared
// with the parent. A configuration NCCL refuses at some size ends its set there, every rank agreeing:
// the sizes from it on are "not available" for that configuration, not a failure.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "tools/common/nccl_library.h"
#include "tools/common/rank_rendezvous.h"
#include "tools/tune/crossover.h"
#include "tools/tune/options.h"
#include "tools/tune/plan.h"

namespace symmem {

inline constexpr int kTuneMaxSizes = 64;

// Lives in an anonymous shared mapping; the parent reads it after the ranks have exited. Columns are
// indexed by TunePath; a set fills only the columns of the paths it times.
struct TuneRankReport {
  double medianUs[kTuneMaxSizes][kNumTunePaths];
  double minUs[kTuneMaxSizes][kNumTunePaths];
  double maxUs[kTuneMaxSizes][kNumTunePaths];
  long long wrong[kTuneMaxSizes][kNumTunePaths];  // elements that differed from the exact sum in the check
  int sizesDone;                                  // sizes measured, from the smallest
  // Ranks whose NCCL refused the set's configuration at a size: in the check [0] or under capture [1].
  std::atomic<int> refusals[kTuneMaxSizes][2];
  char refusal[256];  // NCCL's answer at the first refusal
  int ccMajor[harness::kMaxForkedRanks];
  int ccMinor[harness::kMaxForkedRanks];
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
  harness::RankRendezvous* rendezvous = nullptr;
  TuneRankReport* report = nullptr;
  TunePath ncclPath = TunePath::Nccl;    // stock NCCL, or the configuration this set forces
  std::vector<TunePath> symmetricPaths;  // timed beside stock NCCL (the first set of a world only)
  int stepsBefore = 0;                   // progress: timed steps of earlier sets
  int stepsTotal = 0;
  std::chrono::steady_clock::time_point start;  // CLOCK_MONOTONIC: the same clock in every process

  // The paths this set times: ncclPath, then symmetricPaths.
  std::vector<TunePath> paths() const;
};

// The body of one forked rank; returns its exit code (0: measured every size, or stopped where NCCL
// refused the set's configuration: then report->sizesDone says where).
int measureTuneRank(const TuneRankJob& job, int rank);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// What symmem-tune will measure on this machine, and every reason it cannot, decided from the
// topology (NVML, or SYMMEM_TOPO_FILE) before any process is forked and without initialising CUDA.
#include <cstdint>
#include <string>
#include <vector>

#include "core/capability.h"
#include "core/link_class.h"
#include "tools/common/rank_halves.h"
#include "tools/tune/options.h"
#include "topology/model.h"

namespace symmem {

// One world size to measure: ranks 0..n-1 run on the first n chosen GPUs.
struct TuneWorld {
  int nRanks = 0;
  std::vector<int> gpus;                // topology indices, rank order
  std::vector<std::string> busIds;      // PCI bus ids of `gpus` (how a rank finds its CUDA device)
  LinkClass link = LinkClass::Unknown;  // worst link among `gpus`: the table key the entry gets
  // What is timed, in the candidates' order (tools/tune/crossover.h): stock NCCL, the NCCL configs
  // (--nccl-configs, LL128 by default only on NVLink), the symmetric paths (--variants).
  std::vector<TunePath> ncclConfigs;
  std::vector<TunePath> symmetricPaths;  // without the halves paths when the ranks have no halves
  // The halves the halves variant runs over (--halves, else the topology's), or why there are none.
  RankHalves halves;
  std::vector<TunePath> paths() const;  // all of them: stock NCCL, the configs, the symmetric paths
  // Sets of forked ranks: one for stock NCCL with the symmetric paths, one per NCCL config.
  int rankSets() const { return 1 + static_cast<int>(ncclConfigs.size()); }
};

struct TunePlan {
  std::vector<int> gpus;              // chosen GPUs, topology indices
  ComputeCapability capability;       // as the topology knows it (unknown: the ranks report it)
  std::string gpuName;                // model of the first chosen GPU, when known
  std::vector<TuneWorld> worlds;      // ascending world size
  std::vector<uint64_t> sizes;        // message sizes, ascending
  std::vector<std::string> warnings;  // things that do not stop the run (P2P not known, GPUs left out, halves
                                      // skipped)
  std::string error;                  // "symmem-tune: ..." when the run cannot happen
  bool ok() const { return error.empty(); }

  // Timed (size, path, round) steps over all worlds: the progress counter's total.
  int steps(int rounds) const;
};

// `topology` is the node as the plugin sees it (plugin/process/process.h). Checks, in order: GPUs present, --gpus
// valid, at least two GPUs, one capability, P2P between every chosen pair, world sizes, link classes known. A world
// whose ranks have no halves (rankHalves) drops the halves paths, with one warning line saying why.
TunePlan planTuning(const Topology& topology, const TuneOptions& options);

// Default world sizes for `gpuCount` GPUs: 2, 4, 8 up to the count (at most 8), plus the count when
// it is not a power of two (and at most 8).
std::vector<int> defaultWorldSizes(int gpuCount);

// How long the measurement may take, in seconds: a rough model, good to a factor of two or so, for the
// "about 4m10s of measuring" line (docs/tuning.md, "How long it takes"):
//   - every set of forked ranks (each world's stock run, and one per NCCL config) costs kRankSetStartSec
//     (process start, CUDA context, NCCL init), the stock run kSymmetricSetupSec more (the kernels' setup);
//   - every (size, path) costs kStepOverheadSec (the exact check, graph capture and instantiation) plus
//     (1 warm-up + rounds x reps) graph replays of callsForSize() calls at guessedCallUs() each.
inline constexpr double kRankSetStartSec = 3.0;
inline constexpr double kSymmetricSetupSec = 1.0;
inline constexpr double kStepOverheadSec = 0.02;
double estimateTuneSeconds(const TunePlan& plan, const TuneOptions& options);

// The guess for one all-reduce of `bytes` at `nRanks` ranks on `link`, in microseconds: a fixed cost
// plus the bytes at a bandwidth (NVLink: 6 us + bytes / 150 GB/s; PCIe: 15 us + bytes / 20 GB/s), the
// order of what NCCL and the kernels measure (docs/tuning.md). Not a prediction of any one path.
double guessedCallUs(uint64_t bytes, LinkClass link);

// The plan as a few lines for the terminal (GPUs, capability, each world with its link class and paths,
// sizes, the estimate).
std::string describePlan(const TunePlan& plan, const Topology& topology, const TuneOptions& options);

}  // namespace symmem

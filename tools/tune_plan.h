// SPDX-License-Identifier: Apache-2.0
#pragma once
// What symmem-tune will measure on this machine, and every reason it cannot, decided from the
// topology (NVML, or SYMMEM_TOPO_FILE) before any process is forked and without initialising CUDA.
#include <cstdint>
#include <string>
#include <vector>

#include "core/capability.h"
#include "core/link_class.h"
#include "tools/tune_options.h"
#include "topology/model.h"

namespace symmem {

// One world size to measure: ranks 0..n-1 run on the first n chosen GPUs.
struct TuneWorld {
  int nRanks = 0;
  std::vector<int> gpus;                // topology indices, rank order
  std::vector<std::string> busIds;      // PCI bus ids of `gpus` (how a rank finds its CUDA device)
  LinkClass link = LinkClass::Unknown;  // worst link among `gpus`: the table key the entry gets
};

struct TunePlan {
  std::vector<int> gpus;              // chosen GPUs, topology indices
  ComputeCapability capability;       // as the topology knows it (unknown: the ranks report it)
  std::string gpuName;                // model of the first chosen GPU, when known
  std::vector<TuneWorld> worlds;      // ascending world size
  std::vector<uint64_t> sizes;        // message sizes, ascending
  std::vector<std::string> warnings;  // things that do not stop the run (P2P not known, GPUs left out)
  std::string error;                  // "symmem-tune: ..." when the run cannot happen
  bool ok() const { return error.empty(); }

  // Timed (size, path, round) steps over all worlds: the progress counter's total.
  int steps(int rounds) const { return static_cast<int>(worlds.size() * sizes.size()) * 3 * rounds; }
};

// `topology` is the node as the plugin sees it (plugin/process.h). Checks, in order: GPUs present, --gpus valid,
// at least two GPUs, one capability, P2P between every chosen pair, world sizes, link classes known.
TunePlan planTuning(const Topology& topology, const TuneOptions& options);

// Default world sizes for `gpuCount` GPUs: 2, 4, 8 up to the count (at most 8), plus the count when
// it is not a power of two (and at most 8).
std::vector<int> defaultWorldSizes(int gpuCount);

// The plan as a few lines for the terminal (GPUs, capability, each world with its link class, sizes).
std::string describePlan(const TunePlan& plan, const Topology& topology, const TuneOptions& options);

}  // namespace symmem

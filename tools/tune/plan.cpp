// SPDX-License-Identifier: Apache-2.0
#include "tools/tune/plan.h"

#include <algorithm>
#include <cstdio>
#include <span>
#include <utility>

#include "core/table_file.h"
#include "kernels/symmetric_layout.h"
#include "tools/common/duration_text.h"
#include "tools/common/gpu_choice.h"
#include "topology/classify.h"

namespace symmem {

namespace {

std::string gpuLabel(const Topology& topo, int i) {
  const GpuInfo& g = topo.gpu(i);
  std::string label = "GPU" + std::to_string(i);
  if (!g.pciBusId.empty()) label += " (" + g.pciBusId + ")";
  return label;
}

std::string joined(const std::vector<int>& values) {
  std::string text;
  for (int v : values) {
    if (!text.empty()) text += ',';
    text += std::to_string(v);
  }
  return text;
}

}  // namespace

std::vector<TunePath> TuneWorld::paths() const {
  std::vector<TunePath> all = {TunePath::Nccl};
  all.insert(all.end(), ncclConfigs.begin(), ncclConfigs.end());
  all.insert(all.end(), symmetricPaths.begin(), symmetricPaths.end());
  return all;
}

int TunePlan::steps(int rounds) const {
  int total = 0;
  for (const TuneWorld& w : worlds) total += static_cast<int>(w.paths().size() * sizes.size()) * rounds;
  return total;
}

double guessedCallUs(uint64_t bytes, LinkClass link) {
  const bool nvlink = link == LinkClass::NvLink;
  const double fixedUs = nvlink ? 6.0 : 15.0;
  const double bytesPerUs = (nvlink ? 150.0 : 20.0) * 1e3;  // GB/s = 1e3 bytes per us
  return fixedUs + static_cast<double>(bytes) / bytesPerUs;
}

double estimateTuneSeconds(const TunePlan& plan, const TuneOptions& options) {
  double seconds = 0;
  const int replays = 1 + options.rounds * options.batchesPerRound;
  for (const TuneWorld& w : plan.worlds) {
    seconds += w.rankSets() * kRankSetStartSec + (w.symmetricPaths.empty() ? 0.0 : kSymmetricSetupSec);
    const double paths = static_cast<double>(w.paths().size());
    for (uint64_t bytes : plan.sizes) {
      const int calls = callsForSize(bytes, options.callsPerBatch);
      const double callUs = guessedCallUs(bytes, w.link);
      seconds += paths * (kStepOverheadSec + (replays * calls + 1) * callUs * 1e-6);  // and the one checked call
    }
  }
  return seconds;
}

std::vector<int> defaultWorldSizes(int gpuCount) {
  const int usable = std::min(gpuCount, kernels::kMaxRanks);
  std::vector<int> sizes;
  for (int n = 2; n <= usable; n *= 2) sizes.push_back(n);
  if (usable >= 2 && sizes.back() != usable) sizes.push_back(usable);
  return sizes;
}

TunePlan planTuning(const Topology& topology, const TuneOptions& options) {
  TunePlan plan;
  plan.sizes = tuneSizes(options);
  GpuChoice choice = chooseGpus("symmem-tune", topology, options.gpus);
  if (!choice.ok()) {
    plan.error = choice.error;
    if (choice.noGpu)
      plan.error += ". It needs a machine with at least 2 NVIDIA GPUs and the NVIDIA driver (libnvidia-ml.so.1).";
    return plan;
  }
  plan.gpus = std::move(choice.gpus);
  if (plan.gpus.size() < 2) {
    plan.error = "symmem-tune: needs at least 2 GPUs; " +
                 std::string(options.gpus.empty() ? "this machine has " : "--gpus chose ") +
                 std::to_string(plan.gpus.size()) + " (" + gpuLabel(topology, plan.gpus[0]) + ")";
    return plan;
  }

  // One capability: a table entry is keyed by it, and a mixed set would measure the slowest GPU's.
  const GpuInfo& first = topology.gpu(plan.gpus[0]);
  plan.capability = first.capability;
  plan.gpuName = first.name;
  for (int g : plan.gpus) {
    const ComputeCapability cc = topology.gpu(g).capability;
    if (cc.known() && plan.capability.known() && cc != plan.capability) {
      plan.error = "symmem-tune: the chosen GPUs differ in compute capability (" + gpuLabel(topology, plan.gpus[0]) +
                   " is " + plan.capability.str() + ", " + gpuLabel(topology, g) + " is " + cc.str() +
                   "); choose GPUs of one kind with --gpus";
      return plan;
    }
  }

  std::vector<std::string> p2pUnknown;
  for (size_t a = 0; a < plan.gpus.size(); ++a)
    for (size_t b = a + 1; b < plan.gpus.size(); ++b) {
      const Support p2p = pairP2p(topology, plan.gpus[a], plan.gpus[b]);
      if (p2p == Support::No) {
        plan.error = "symmem-tune: no P2P between " + gpuLabel(topology, plan.gpus[a]) + " and " +
                     gpuLabel(topology, plan.gpus[b]) +
                     " (the driver reports peer reads or writes as not supported; `nvidia-smi topo -p2p rw` shows "
                     "it). The symmetric kernels need P2P between every pair: choose GPUs that have it with --gpus";
        return plan;
      }
      if (p2p == Support::Unknown)
        p2pUnknown.push_back(std::to_string(plan.gpus[a]) + "-" + std::to_string(plan.gpus[b]));
    }
  if (!p2pUnknown.empty()) {
    std::string pairs;
    for (size_t i = 0; i < p2pUnknown.size() && i < 4; ++i) pairs += (i ? ", " : "") + p2pUnknown[i];
    if (p2pUnknown.size() > 4) pairs += ", ...";
    plan.warnings.push_back("P2P is not known from the topology for " + std::to_string(p2pUnknown.size()) +
                            " pair(s) (GPUs " + pairs + "); the kernels' setup checks it");
  }

  const int chosen = static_cast<int>(plan.gpus.size());
  std::vector<int> worldSizes = options.worldSizes.empty() ? defaultWorldSizes(chosen) : options.worldSizes;
  for (int n : worldSizes)
    if (n > chosen) {
      plan.error = "symmem-tune: --ranks " + std::to_string(n) + " needs " + std::to_string(n) + " GPUs; " +
                   std::to_string(chosen) + " are chosen";
      return plan;
    }
  if (chosen > kernels::kMaxRanks && options.worldSizes.empty())
    plan.warnings.push_back("the symmetric kernels take at most " + std::to_string(kernels::kMaxRanks) +
                            " ranks: world sizes above that are not measured (their table rule stays built-in)");

  for (int n : worldSizes) {
    TuneWorld world;
    world.nRanks = n;
    world.gpus.assign(plan.gpus.begin(), plan.gpus.begin() + n);
    for (int g : world.gpus) world.busIds.push_back(topology.gpu(g).pciBusId);
    world.link = linkClassOf(topology, std::span<const int>(world.gpus));
    world.ncclConfigs = ncclConfigsFor(options, world.link);
    world.symmetricPaths = symmetricPathsFor(options);
    world.halves = rankHalves(topology, world.gpus, options.halves);
    const auto halvesPath = [](TunePath p) { return isSymmetricPath(p) && symVariantOf(p) == SymVariant::Halves; };
    if (!world.halves.ok && std::any_of(world.symmetricPaths.begin(), world.symmetricPaths.end(), halvesPath)) {
      std::erase_if(world.symmetricPaths, halvesPath);
      plan.warnings.push_back(halvesSkippedLine(n, world.halves));
    }
    if (world.link == LinkClass::Unknown) {
      plan.error = "symmem-tune: the link class of GPUs " + joined(world.gpus) + " is unknown (the topology from " +
                   topology.source() +
                   " does not say how every pair is connected), so no table key can be given to their measurement";
      return plan;
    }
    plan.worlds.push_back(std::move(world));
  }
  return plan;
}

std::string describePlan(const TunePlan& plan, const Topology& topology, const TuneOptions& options) {
  char marginPercent[32];
  std::snprintf(marginPercent, sizeof marginPercent, "%g%%", options.margin * 100.0);
  std::string text = "symmem-tune: GPUs " + joined(plan.gpus) + " of " + std::to_string(topology.gpuCount());
  if (!plan.gpuName.empty()) text += ", " + plan.gpuName;
  text += ", capability " +
          (plan.capability.known() ? plan.capability.str()
           : options.planOnly      ? std::string("unknown (--cc X.Y gives it)")
                                   : std::string("(from CUDA)")) +
          ", topology from " + topology.source() + "\n";
  for (const TuneWorld& w : plan.worlds) {
    std::string paths;
    for (TunePath p : w.paths()) {
      if (!paths.empty()) paths += ' ';
      paths += tunePathHeading(p);
    }
    text += "  ranks=" + std::to_string(w.nRanks) + " on GPUs " + joined(w.gpus) + ": link " +
            std::string(linkClassName(w.link)) + "; paths " + paths + "\n";
  }
  int rankSets = 0;
  for (const TuneWorld& w : plan.worlds) rankSets += w.rankSets();
  text += "  sizes " + formatBytes(plan.sizes.front()) + " to " + formatBytes(plan.sizes.back()) + ", x" +
          std::to_string(options.sizeStep) + " steps (" + std::to_string(plan.sizes.size()) + " sizes); " +
          std::to_string(options.rounds) + " round(s) x " + std::to_string(options.batchesPerRound) +
          " graph replays of up to " + std::to_string(options.callsPerBatch) + " calls; margin " + marginPercent + "\n";
  text += "  estimate: about " + durationText(estimateTuneSeconds(plan, options)) + " of measuring (" +
          std::to_string(rankSets) + " set(s) of ranks, " + std::to_string(plan.steps(options.rounds)) +
          " timed steps; a rough model, docs/tuning.md)\n";
  for (const std::string& w : plan.warnings) text += "  note: " + w + "\n";
  return text;
}

}  // namespace symmem

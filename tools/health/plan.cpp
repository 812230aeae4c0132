// SPDX-License-Identifier: Apache-2.0
#include "tools/health/plan.h"

#include <utility>

#include "tools/common/cli_values.h"
#include "tools/common/gpu_choice.h"
#include "topology/classify.h"

namespace symmem {

std::string healthUsage() {
  return "usage: symmem-health [--gpus 0,1,...] [--timeout-s S] [--quick] [--csv FILE] [--judge FILE]\n"
         "Checks that peer-to-peer (P2P) access between this node's GPUs works and how fast it is: for every\n"
         "ordered pair a written and read-back pattern, write and read latency, write and read bandwidth\n"
         "with one writer, then every GPU at once. Each probe runs in a child process with a time limit.\n"
         "Names the known bad states (broken P2P, traffic staged through system memory, posted-write\n"
         "collapse, no P2P) with their fixes.\n"
         "  --gpus      GPUs to check, as nvidia-smi numbers them (default: all)\n"
         "  --timeout-s limit of one probe step in seconds (default 20)\n"
         "  --quick     smaller buffers and fewer repeats (a few seconds per pair)\n"
         "  --csv       also write the measurements to FILE (symmem-health --judge FILE reads them)\n"
         "  --judge     judge measurements recorded with --csv instead of measuring (no GPU needed)\n"
         "Exit: 0 safe and useful, 1 P2P broken: not safe, 3 the plugin gains nothing here, 2 bad arguments,\n"
         "4 the check could not run. docs/machine-check.md has the details.\n";
}

HealthArgsResult parseHealthArgs(const std::vector<std::string>& args) {
  HealthArgsResult r;
  HealthOptions& o = r.options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= args.size()) {
        r.error = a + " needs a value";
        return false;
      }
      out = args[++i];
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      o.help = true;
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--gpus") {
      if (!value(v)) return r;
      r.error = parseIndexListArg(a, v, 63, o.gpus);
    } else if (a == "--timeout-s") {
      if (!value(v)) return r;
      int64_t s = 0;
      r.error = parseCountArg(a, v, 1, 3600, s);
      o.timeoutSec = static_cast<int>(s);
    } else if (a == "--csv") {
      if (!value(o.csv)) return r;
      if (o.csv.empty()) r.error = "--csv needs a file name";
    } else if (a == "--judge") {
      if (!value(o.judge)) return r;
      if (o.judge.empty()) r.error = "--judge needs a file name (an empty one would start a measurement)";
    } else {
      r.error = unknownOptionMessage("symmem-health", a);
    }
    if (!r.ok()) return r;
  }
  if (!o.judge.empty() && (!o.gpus.empty() || o.quick))
    r.error = "--judge reads recorded measurements: --gpus and --quick do not apply to it";
  return r;
}

namespace {

HealthPair pairFromTopology(const Topology& topo, int a, int b, int posA, int posB) {
  HealthPair p;
  p.a = posA;
  p.b = posB;
  if (a == b) return p;  // loopback: no link
  const PairLink& link = topo.link(a, b);
  p.path = link.path;
  p.nvlinks = link.nvlinks;
  p.nvmlRead = link.p2pRead;
  p.nvmlWrite = link.p2pWrite;
  return p;
}

}  // namespace

void explainNoGpu(HealthPlan* plan, int gpuDeviceNodes) {
  if (plan->ok() || plan->exitCode != 3 || gpuDeviceNodes <= 0) return;
  const std::string nodes = std::to_string(gpuDeviceNodes) + " NVIDIA device node" + (gpuDeviceNodes == 1 ? "" : "s");
  plan->error = "symmem-health: this machine has " + nodes +
                " (/dev/nvidiaN), but NVML lists no GPU: the check could " +
                "not run (is the driver's libnvidia-ml.so.1 on the loader's path, and does nvidia-smi work?)\n" +
                plan->error.substr(0, plan->error.find(": nothing to check"));
  plan->exitCode = 4;
}

HealthPlan planHealth(const Topology& topology, const HealthOptions& options) {
  HealthPlan plan;
  GpuChoice choice = chooseGpus("symmem-health", topology, options.gpus);
  if (!choice.ok()) {
    plan.error = choice.error + (choice.noGpu ? ": nothing to check, and the plugin has nothing to do here" : "");
    plan.exitCode = choice.noGpu ? 3 : 2;
    return plan;
  }
  plan.gpus = std::move(choice.gpus);
  HealthMeasurements& m = plan.skeleton;
  m.topologySource = topology.source();
  for (size_t pos = 0; pos < plan.gpus.size(); ++pos) {
    const GpuInfo& info = topology.gpu(plan.gpus[pos]);
    HealthGpu g;
    g.index = info.index;
    g.busId = info.pciBusId;
    g.name = info.name;
    g.cc = info.capability;
    m.gpus.push_back(g);
  }
  const int n = static_cast<int>(plan.gpus.size());
  if (n == 1) {
    m.loopback = true;
    m.pairs.push_back(pairFromTopology(topology, plan.gpus[0], plan.gpus[0], 0, 0));
    return plan;
  }
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b) m.pairs.push_back(pairFromTopology(topology, plan.gpus[a], plan.gpus[b], a, b));
  m.link = linkClassOf(topology, plan.gpus);
  return plan;
}

int healthWorstCaseSec(const HealthPlan& plan, const HealthOptions& options) {
  // Bounded waits: one per GPU for its own link; kHealthPairWaits per unordered pair; then all at once.
  const int n = static_cast<int>(plan.gpus.size());
  const int pairs = n == 1 ? 1 : n * (n - 1) / 2;
  const int children = 1 + pairs + (n > 1 ? 1 : 0);
  const int steps = n + pairs * kHealthPairWaits + (n > 1 ? healthAllAtOnceWaits(n) : 0);
  return children * kHealthChildStartSec + steps * options.timeoutSec;
}

}  // namespace symmem

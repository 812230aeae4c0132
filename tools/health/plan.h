// SPDX-License-Identifier: Apache-2.0
#pragma once
// symmem-health's command line and what it will check, decided from the topology without CUDA (so the
// tests can run it on CPU): the GPUs, every ordered pair with what the topology knows of it, and the
// steps the probe will run with their time limits.
#include <string>
#include <vector>

#include "tools/common/cli_values.h"
#include "tools/health/data.h"
#include "topology/model.h"

namespace symmem {

struct HealthOptions {
  std::vector<int> gpus;  // --gpus: NVML / nvidia-smi indices; empty: every GPU of the node
  int timeoutSec = 20;    // --timeout-s: limit of one probe step
  bool quick = false;     // --quick: smaller buffers, fewer repeats
  std::string csv;        // --csv FILE: the measurements, for symmem-report and --judge
  std::string judge;      // --judge FILE: judge recorded measurements instead of measuring
  bool help = false;
};

using HealthArgsResult = ArgsResult<HealthOptions>;

HealthArgsResult parseHealthArgs(const std::vector<std::string>& args);  // args without the program name
std::string healthUsage();

struct HealthPlan {
  HealthMeasurements skeleton;  // gpus and pairs filled from the topology; nothing measured yet
  std::vector<int> gpus;        // topology indices, in skeleton.gpus order
  std::string error;            // "symmem-health: ..." when nothing can be checked
  int exitCode = 0;             // for error: 3 (nothing to gain here: no GPU) or 2 (bad --gpus)
  bool ok() const { return error.empty(); }
};

// Every ordered pair of the chosen GPUs (a != b), or the one loopback pair (0, 0) for one GPU.
HealthPlan planHealth(const Topology& topology, const HealthOptions& options);

// A plan that found no GPU on a machine with `gpuDeviceNodes` NVIDIA device nodes (/dev/nvidiaN):
// NVML could not see them (not loadable, or failing), so the check could not run (exit 4), where a
// machine without device nodes has nothing to gain (exit 3). Leaves any other plan as it is.
void explainNoGpu(HealthPlan* plan, int gpuDeviceNodes);

// The bounded waits of one pair's probe (per direction: 2 checks x 2, the chain, 2 x 2 speeds; the
// ping-pong's 4): each may take up to the step limit, and the child's limit allows for all of them.
inline constexpr int kHealthPairWaits = 22;
// The bounded waits of the all-at-once probe of n GPUs: the write pass and the read pass wait for each
// GPU, the check for each (writer, receiver).
constexpr int healthAllAtOnceWaits(int n) { return 2 * n + n * (n - 1); }
// Start-up allowed to each probe child (CUDA's initialisation) on top of its steps.
inline constexpr int kHealthChildStartSec = 15;

// How long the probe may take at most: every step at its limit, plus CUDA start-up per child. For the
// line printed before it starts; the checks on a healthy node take a few seconds.
int healthWorstCaseSec(const HealthPlan& plan, const HealthOptions& options);

}  // namespace symmem

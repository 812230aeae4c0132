// SPDX-License-Identifier: Apache-2.0
#pragma once
// symmem-health's command line and what it will check, decided from the topology without CUDA (so the
// tests can run it on CPU): the GPUs, every ordered pair with what the topology knows of it, and the
// steps the probe will run with their time limits.
#include <string>
#include <vector>

#include "tools/health_data.h"
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

struct HealthArgsResult {
  HealthOptions options;
  std::string error;  // empty when the command line is valid
  bool ok() const { return error.empty(); }
};

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

// How long the probe may take at most: every step at its limit, plus CUDA start-up per child. For the
// line printed before it starts; the checks on a healthy node take a few seconds.
int healthWorstCaseSec(const HealthPlan& plan, const HealthOptions& options);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// symmem-health's measurements on the GPUs. The calling process never initialises CUDA: every probe
// runs in a forked child (tools/common/forked_ranks.h) that writes its results into shared memory step by
// step, so a hang or a fault ends that child, not the tool, and the parent knows which step it was.
// Inside a child every wait polls with a deadline of --timeout-s; the parent's own limit (all of the
// child's steps at their limit, plus start-up) is the backstop for a CUDA call that never returns.
//
// Children, in order: the GPUs (name, capability, host-copy bandwidth); one per unordered pair (for
// each direction: write check, read check, load latency, write and read bandwidth; the ping-pong
// for write latency covers both directions); then every GPU at once, only when every pair passed
// its checks (a broken pair could hang it).
#include <functional>
#include <string>

#include "tools/health/data.h"
#include "tools/health/plan.h"

namespace symmem {

// One line per step started ("[3/8] GPU0<->GPU1 ..."); on stderr in symmem-health.
using HealthProgress = std::function<void(const std::string&)>;

struct HealthProbeResult {
  HealthMeasurements measurements;  // plan.skeleton with the measured fields filled in
  std::string error;                // the probe could not run at all (no CUDA device for a GPU): "" otherwise
};

// The skeleton's GPUs are found by PCI bus id (by index when unknown). When the first child cannot
// open every GPU, nothing else runs: a pair cannot be judged on a GPU CUDA does not give us.
HealthProbeResult runHealthProbe(const HealthPlan& plan, const HealthOptions& options, const HealthProgress& progress);

}  // namespace symmem

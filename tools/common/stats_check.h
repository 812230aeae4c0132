// SPDX-License-Identifier: Apache-2.0
#pragma once
// symmem-stat --check: are the all-reduces the processes captured into CUDA graphs (an inference
// server's decode steps) on the symmetric path? Judged from one snapshot of their statistics files
// (core/call_stats_segment.h), per communicator of two or more ranks: captured calls the table puts
// on a symmetric kernel, or leaves to NCCL by design (sizes above its symmetric limits, a type or
// operation the kernels do not take), pass; captured calls on NCCL because the communicator was not set
// up when the graph was captured, or because its symmetric path is off, fail, each with why and what to
// do (docs/live-stats.md, "Checking a server").
#include <string>
#include <vector>

#include "core/call_stats_segment.h"

namespace symmem {

enum class CheckVerdict {
  Pass,     // every captured all-reduce took the path the table gives it
  Fail,     // some captured all-reduces are on NCCL for a reason the user can change
  Nothing,  // no communicator of two or more ranks has captured an all-reduce yet
};

struct StatsCheck {
  CheckVerdict verdict = CheckVerdict::Nothing;
  std::vector<std::string> lines;  // one per communicator judged, then the verdict's line
};

StatsCheck checkCapturedPaths(const std::vector<stats::ProcessSnapshot>& processes);

// The exit status symmem-stat --check gives each verdict: 0, 3, 4.
int checkExitCode(CheckVerdict verdict);

}  // namespace symmem

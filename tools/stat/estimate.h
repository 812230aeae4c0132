// SPDX-License-Identifier: Apache-2.0
#pragma once
// symmem-stat --estimate FILE: the all-reduce time the plugin saves a live job each second, from what
// its communicators ran (two snapshots of their statistics files, core/call_stats_segment.h) and what
// each path costs at each size (a symmem-tune or nccl-tests CSV, tools/stat/latency_csv.h).
//
// For each communicator of two or more ranks, per size bucket: the executions per second of each
// symmetric kernel (the GPU's count of every execution, graph replays included, shared among the
// buckets as its timed executions are) x (stock NCCL's time - that kernel's time), the time at the
// bucket's upper bound, interpolated between the sizes the file measured. Calls NCCL ran with the
// table's configuration and calls on NCCL that the symmetric path could take (the communicator not set
// up, or its path off) are counted from the host's eager calls: a graph's replays of NCCL's kernels are
// seen by no counter, which the lines say. docs/live-stats.md, "Estimating the time saved".
#include <string>
#include <vector>

#include "core/call_stats_segment.h"
#include "tools/stat/latency_csv.h"

namespace symmem {

struct StatsEstimate {
  int communicators = 0;        // communicators estimated (with calls in the time measured)
  double savedUsPerSecond = 0;  // summed over them
  std::vector<std::string> lines;
};

// Rates over the time between `before` and `now` for a communicator found in both, else since it was
// opened.
StatsEstimate estimateSavings(const std::vector<stats::ProcessSnapshot>& now,
                              const std::vector<stats::ProcessSnapshot>& before, const LatencyTable& table);

// The exit status of symmem-stat --estimate: 0 with an estimate, 4 with nothing to estimate yet.
int estimateExitCode(const StatsEstimate& e);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// What symmem-tune prints: a progress line on stderr while it measures, and per world size a
// summary table on stdout (the median of every path timed, the path the written bands choose and why).
#include <cstdint>
#include <string>

#include "core/capability.h"
#include "tools/tune/table.h"

namespace symmem {

// "[12/216] ranks=2 NCCL ring/ll 64KiB (round 1/3), 0m41s elapsed, about 3m20s left": `path` names the
// path and, for NCCL, the configuration (tunePathLabel). The estimate assumes the remaining steps take
// as long as the finished ones did on average.
std::string progressLine(int done, int total, double elapsedSec, int nRanks, const std::string& path, uint64_t bytes,
                         int round, int rounds);

// Header line, then one row per size: size, one column per path timed (its median in us; "-" for NaN,
// headed as tunePathHeading says), the path the bands choose and why; then the bands.
std::string summaryTable(const TunedWorld& world, ComputeCapability cc);

}  // namespace symmem

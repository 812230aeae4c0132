// SPDX-License-Identifier: Apache-2.0
#pragma once
// What symmem-tune prints: a progress line on stderr while it measures, and per world size a
// summary table on stdout (the medians of each path and the path the written limits choose).
#include <cstdint>
#include <string>
#include <vector>

#include "tools/tune_crossover.h"
#include "tools/tune_table.h"

namespace symmem {

// "42s", "3m05s", "1h02m".
std::string durationText(double seconds);

// "[12/216] ranks=2 two-shot 64KiB (round 1/3), 0m41s elapsed, about 3m20s left". The estimate
// assumes the remaining steps take as long as the finished ones did on average.
std::string progressLine(int done, int total, double elapsedSec, int nRanks, const char* path, uint64_t bytes,
                         int round, int rounds);

// Header line, then one row per size: size, NCCL / one-shot / two-shot median (us), chosen path, why;
// then the limits found. NaN prints as "-".
std::string summaryTable(const TunedWorld& world, ComputeCapability cc, const std::vector<SizeMedians>& medians);

}  // namespace symmem

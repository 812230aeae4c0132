// SPDX-License-Identifier: Apache-2.0
#pragma once
// symmem-health's measurements as CSV, one value per row, so the format can grow without breaking
// old files: `symmem-health --csv FILE` writes it, `symmem-health --judge FILE` reads it back and
// judges recorded numbers without a GPU, and the unit tests' fixtures (tests/data/tools/health/) use it.
//
//   record,gpu_a,gpu_b,field,value
//   node,,,link,pcie-switch
//   gpu,0,,busId,0000:01:00.0
//   pair,0,1,writeGBs,53.9
//   all,,,check,ok
//   all,0,,writeGBsPerGpu,34.6
//
// record: node (gpu_a, gpu_b empty), gpu (gpu_a = HealthGpu::index), pair (gpu_a, gpu_b = the
// HealthGpu::index of a and b; in memory HealthPair holds their positions in `gpus`), all (gpu_a =
// position in HealthMeasurements::gpus for the per-GPU values, empty for check and detail). field: the member's name in
// tools/health/data.h. value: numbers in the shortest form that reads back to the same double, NaN as empty; Support as
// supportName ("yes", "no", "unknown"); PathKind as NV, PIX, PXB, PHB, NODE, SYS, unknown (the NVLink count is its own
// field); LinkClass as linkClassName; PatternResult as patternResultName; cc as "9.0", empty when unknown; loopback as
// true / false; text quoted CSV-style when it holds a comma, a quote or edge spaces. Text is one line:
// a line break in it is written as a space.
//
// Reading: blank lines and lines starting with '#' are skipped (fixtures say where their numbers come
// from there); the first other line must be the header. GPUs and pairs keep the order of their first
// row. Errors name the line: "line 7: unknown field 'writeGB' for a pair record".
#include <string>
#include <string_view>

#include "tools/health/data.h"

namespace symmem {

inline constexpr std::string_view kHealthCsvHeader = "record,gpu_a,gpu_b,field,value";

std::string healthCsv(const HealthMeasurements& m);

// Fills *out (replacing what it held) and returns true; on the first problem returns false with
// *error = "line N: ..." and leaves *out unspecified.
bool parseHealthCsv(std::string_view text, HealthMeasurements* out, std::string* error);

}  // namespace symmem

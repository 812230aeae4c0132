// SPDX-License-Identifier: Apache-2.0
#pragma once
// symmem-tune --csv FILE: every median it measured, one row per (world, size, path), for the report
// tool and its plot script. The columns, exactly:
//   ranks,link,cc,bytes,path,median_us,min_us,max_us,chosen
// ranks: the world size; link: linkClassName ("nvlink", "pcie-switch", ...); cc: "9.0"; bytes: the
// message size; path: tunePathName ("nccl", "nccl-ring-ll", ..., "oneshot-push", ..., "twoshot-staged");
// median_us, min_us, max_us: per-call microseconds (median and extremes of the timed batches), empty
// where the path has no number at that size (not available, failed, or wrong results); chosen: 1 on
// the row of the path the written table routes that size to, else 0. Rows come only for the paths the
// world timed, in the worlds' order, ascending size, then the candidates' order.
#include <string>
#include <vector>

#include "core/capability.h"
#include "tools/tune/table.h"

namespace symmem {

// The header line, with its newline.
std::string tuneCsvHeader();

// The rows of one world, each with its newline.
std::string tuneCsvRows(const TunedWorld& world, ComputeCapability cc);

// The whole file: the header, then every world's rows.
std::string tuneCsvText(const std::vector<TunedWorld>& worlds, ComputeCapability cc);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// From the medians of every candidate at every measured size (tools/tune/crossover.h) to the bands of
// one table entry: symmetric bands for the small sizes, NCCL bands above them. docs/tuning.md
// ("Choosing the bands") explains the rules:
//
//  1. Per size, the rule of crossover.h over every candidate: the simplest one within the margin
//     of the fastest.
//  2. No holes: the sizes from the smallest up to the first size where an NCCL candidate (stock or a
//     config) is chosen are symmetric; from that size on everything is NCCL, even where a symmetric
//     path would win again (one symmetric range is what the symmetric buffers are sized for, and a
//     win above a loss is as likely noise as not).
//  3. Symmetric bands: consecutive sizes with the same (algorithm, variant) make one band, up to its
//     largest size. More than kMaxSymBands runs: the shortest run is merged into the neighbour where
//     the sizes lose least (the sum over its sizes of t_neighbour / t_own - 1), until they fit. The
//     range is then cut, one measured size at a time from the top, until core/symmetric_limits.h takes
//     the entry's limits (a win up to 1 GiB at 8 ranks would need 24 GiB of buffer per GPU).
//  4. NCCL bands, above the symmetric range, from the rule among the NCCL candidates only: runs of the
//     same config make one band; a run of stock NCCL is written (algo=any proto=any) only below a tuned
//     band, where it keeps the sizes in it on NCCL's own choice; at most kMaxBands, merged like the
//     symmetric ones (a config a size did not measure counts there as stock: the tuner then keeps
//     NCCL's choice). The symmetric range counts as stock for the NCCL bands: calls the kernels do not
//     take (another dtype, an op they lack) stay on NCCL's own choice there. Above the largest measured
//     size there is no band: NCCL is left untouched.
// Sizes below the smallest measured one follow it (every first band starts at 1 byte). Pure: no CUDA,
// no I/O; symmem-tune and the unit tests call it.
#include <cstdint>
#include <string>
#include <vector>

#include "core/decision.h"
#include "tools/tune/crossover.h"

namespace symmem {

// What the written bands do with one measured size, and why.
struct SizeVerdict {
  uint64_t bytes = 0;
  // The path the written table routes this size to (for an NCCL band whose config was not measured
  // here: stock NCCL, which the tuner then leaves in charge).
  TunePath chosen = TunePath::Nccl;
  TunePath best = TunePath::Nccl;  // the rule's choice at this size alone, among every candidate
  std::string why;                 // one line
};

struct TuneBands {
  std::vector<SymBand> symBands;    // ascending maxBytes, at most kMaxSymBands, within symmetric_limits.h
  std::vector<NcclBand> ncclBands;  // all-reduce, ascending maxBytes, at most kMaxBands
  std::vector<SizeVerdict> sizes;   // one per measured size, ascending
  bool measured = false;            // some size has a number; false: the world gets no table entry

  uint64_t oneShotMaxBytes() const;  // the largest one-shot band (0: none)
  uint64_t twoShotMaxBytes() const;
};

// `times` in any order, sizes distinct and non-zero; nRanks is the world size (for the buffer limits);
// margin in [0, 1).
TuneBands chooseBands(std::vector<SizeTimes> times, int nRanks, double margin = kDefaultTuneMargin);

// "one-shot push up to 64KiB, one-shot pull up to 1MiB" / "none"; "NCCL ring/ll up to 256KiB, stock NCCL
// up to 1MiB, ..." / "none": the bands for people.
std::string symBandsText(const std::vector<SymBand>& bands);
std::string ncclBandsText(const std::vector<NcclBand>& bands);

}  // namespace symmem

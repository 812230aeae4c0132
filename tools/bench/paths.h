// SPDX-License-Identifier: Apache-2.0
#pragma once
// The all-reduce paths symmem-bench measures side by side, their names, and the summary table of
// their results: plain values and text, no CUDA or NCCL, so the CPU tests check the names and the
// layout.
#include <cmath>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/sym_variant.h"
#include "tools/common/rank_halves.h"

namespace symmem::bench {

enum class PathKind {
  Nccl,        // stock NCCL on a plain cudaMalloc buffer
  NcclWindow,  // NCCL on a buffer registered as a symmetric window (NCCL_WIN_COLL_SYMMETRIC)
  OneShot,     // this project's one-shot kernel, on the plain buffer
  TwoShot,     // this project's two-shot kernel, on the plain buffer
};

struct BenchPath {
  PathKind kind = PathKind::Nccl;
  SymVariant variant = SymVariant::Push;  // OneShot and TwoShot only

  bool ours() const { return kind == PathKind::OneShot || kind == PathKind::TwoShot; }
  // The CSV's `path` column: "nccl", "nccl-win", "one-shot", "two-shot" (push: the names CSVs had
  // before the variants), "one-shot-pull", "two-shot-staged", ...
  std::string name() const;
  // The table's column heading, at most 9 characters: "nccl", "nccl-win", "1s-push", "2s-staged".
  std::string heading() const;
};

// The variants measured: `asked` without halves when the ranks have none (then `skipped` gets the line
// that says why, tools/common/rank_halves.h), else `asked` as it is.
std::vector<SymVariant> measuredVariants(const std::vector<SymVariant>& asked, int nRanks, const RankHalves& halves,
                                         std::string* skipped);

// nccl, nccl-win, then one-shot and two-shot of each variant in `variants`, in that order.
std::vector<BenchPath> benchPaths(const std::vector<SymVariant>& variants);

// One path at one size: median microseconds per call (NaN: not timed) and the check's wrong elements.
struct PathResult {
  double eagerUs = NAN, graphUs = NAN;
  long long wrong = -1;
};
// One size: entry i is paths[i]'s result, empty where that path did not run at this size.
using SizeResults = std::vector<std::optional<PathResult>>;
using Results = std::map<size_t, SizeResults>;

// The summary: a graph table (then an eager one when `eager`) with one column per path that ran at
// some size, the best of our paths over NCCL and over NCCL's windows, the best path's heading, and (graph
// table) the wrong elements of every path at that size; then a line naming each heading's CSV path.
// Under 160 columns for all ten paths.
std::string summaryTable(const std::vector<BenchPath>& paths, const Results& results, bool eager);

long long totalWrong(const Results& results);

}  // namespace symmem::bench

// SPDX-License-Identifier: Apache-2.0
#include "tools/bench/paths.h"

#include <cstdio>

namespace symmem::bench {

namespace {

constexpr int kCellWidth = 10;  // every number column: a space and up to 9 characters ("123456.78")

std::optional<PathResult> resultOf(const SizeResults& row, size_t i) { return i < row.size() ? row[i] : std::nullopt; }

double medianUs(const SizeResults& row, size_t i, bool graph) {
  const std::optional<PathResult> r = resultOf(row, i);
  return !r ? NAN : graph ? r->graphUs : r->eagerUs;
}

std::string cell(double v) {
  char text[32];
  if (std::isnan(v))
    std::snprintf(text, sizeof text, "%*s", kCellWidth, "-");
  else
    std::snprintf(text, sizeof text, "%*.2f", kCellWidth, v);
  return text;
}

std::string cell(const std::string& heading) {
  char text[32];
  std::snprintf(text, sizeof text, "%*s", kCellWidth, heading.c_str());
  return text;
}

// The columns: the paths that ran at some size.
std::vector<size_t> shownPaths(const std::vector<BenchPath>& paths, const Results& results) {
  std::vector<size_t> shown;
  for (size_t i = 0; i < paths.size(); ++i)
    for (const auto& [bytes, row] : results)
      if (resultOf(row, i)) {
        shown.push_back(i);
        break;
      }
  return shown;
}

// The fastest of our paths at one size, in one mode; paths.size() when none of them ran there.
size_t bestOurs(const std::vector<BenchPath>& paths, const SizeResults& row, bool graph) {
  size_t best = paths.size();
  for (size_t i = 0; i < paths.size(); ++i) {
    const double us = medianUs(row, i, graph);
    if (paths[i].ours() && !std::isnan(us) && (best == paths.size() || us < medianUs(row, best, graph))) best = i;
  }
  return best;
}

// Median of the first path of `kind` (nccl, nccl-win) at this size; NaN when it did not run.
double medianOfKind(const std::vector<BenchPath>& paths, const SizeResults& row, PathKind kind, bool graph) {
  for (size_t i = 0; i < paths.size(); ++i)
    if (paths[i].kind == kind) return medianUs(row, i, graph);
  return NAN;
}

// Ends a line of the table, without the padding of its last column.
void endLine(std::string& text) {
  while (!text.empty() && text.back() == ' ') text.pop_back();
  text += "\n";
}

void appendTable(std::string& text, const std::vector<BenchPath>& paths, const std::vector<size_t>& shown,
                 const Results& results, bool graph) {
  char line[64];
  text += graph ? "\ngraph (us per call, median)\n" : "\neager (us per call, median)\n";
  std::snprintf(line, sizeof line, "%-10s |", "bytes");
  text += line;
  for (size_t i : shown) text += cell(paths[i].heading());
  std::snprintf(line, sizeof line, " |%*s%*s  %-9s", kCellWidth, "ours/nccl", kCellWidth, "ours/win", "best");
  text += line;
  if (graph) text += " | wrong";
  endLine(text);
  for (const auto& [bytes, row] : results) {
    std::snprintf(line, sizeof line, "%-10zu |", bytes);
    text += line;
    for (size_t i : shown) text += cell(medianUs(row, i, graph));
    const size_t best = bestOurs(paths, row, graph);
    const double bestUs = best < paths.size() ? medianUs(row, best, graph) : NAN;
    text += " |" + cell(bestUs / medianOfKind(paths, row, PathKind::Nccl, graph)) +
            cell(bestUs / medianOfKind(paths, row, PathKind::NcclWindow, graph));
    std::snprintf(line, sizeof line, "  %-9s", best < paths.size() ? paths[best].heading().c_str() : "-");
    text += line;
    if (graph) {
      long long wrong = 0;
      for (const std::optional<PathResult>& r : row)
        if (r) wrong += r->wrong;
      std::snprintf(line, sizeof line, " | %lld", wrong);
      text += line;
    }
    endLine(text);
  }
}

}  // namespace

std::string BenchPath::name() const {
  switch (kind) {
    case PathKind::Nccl:
      return "nccl";
    case PathKind::NcclWindow:
      return "nccl-win";
    case PathKind::OneShot:
    case PathKind::TwoShot:
      break;
  }
  const std::string algorithm = kind == PathKind::OneShot ? "one-shot" : "two-shot";
  return variant == SymVariant::Push ? algorithm : algorithm + "-" + std::string(symVariantName(variant));
}

std::string BenchPath::heading() const {
  if (!ours()) return name();
  return (kind == PathKind::OneShot ? "1s-" : "2s-") + std::string(symVariantName(variant));
}

std::vector<SymVariant> measuredVariants(const std::vector<SymVariant>& asked, int nRanks, const RankHalves& halves,
                                         std::string* skipped) {
  std::vector<SymVariant> run = asked;
  if (!halves.ok && std::erase(run, SymVariant::Halves) > 0 && skipped != nullptr)
    *skipped = halvesSkippedLine(nRanks, halves);
  return run;
}

std::vector<BenchPath> benchPaths(const std::vector<SymVariant>& variants) {
  std::vector<BenchPath> paths = {{PathKind::Nccl}, {PathKind::NcclWindow}};
  for (SymVariant v : variants) {
    paths.push_back({PathKind::OneShot, v});
    paths.push_back({PathKind::TwoShot, v});
  }
  return paths;
}

std::string summaryTable(const std::vector<BenchPath>& paths, const Results& results, bool eager) {
  const std::vector<size_t> shown = shownPaths(paths, results);
  std::string text;
  appendTable(text, paths, shown, results, true);
  if (eager) appendTable(text, paths, shown, results, false);
  // Which CSV path each of our headings is (on lines of at most kLegendWidth), and what the ratios are.
  constexpr size_t kLegendWidth = 160;
  std::string legend, line;
  for (size_t i : shown) {
    if (!paths[i].ours()) continue;
    const std::string item = paths[i].heading() + " = " + paths[i].name();
    if (!line.empty() && line.size() + 2 + item.size() + 1 > kLegendWidth) {
      legend += "# " + line + ",\n";
      line.clear();
    }
    line += (line.empty() ? "" : ", ") + item;
  }
  if (!line.empty()) legend += "# " + line + "\n";
  if (!legend.empty()) text += "\n" + legend;
  text += "# ours/nccl, ours/win: the best of our paths (\"best\") over nccl and over nccl-win; below 1 is faster\n";
  return text;
}

long long totalWrong(const Results& results) {
  long long wrong = 0;
  for (const auto& [bytes, row] : results)
    for (const std::optional<PathResult>& r : row)
      if (r) wrong += r->wrong;
  return wrong;
}

}  // namespace symmem::bench

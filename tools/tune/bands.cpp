// SPDX-License-Identifier: Apache-2.0
#include "tools/tune/bands.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/symmetric_limits.h"
#include "core/table_file.h"

namespace symmem {

namespace {

constexpr double kCannot = std::numeric_limits<double>::infinity();

// Consecutive sizes [first, last] routed to one path.
struct Run {
  size_t first = 0;
  size_t last = 0;
  TunePath path = TunePath::Nccl;
  size_t length() const { return last - first + 1; }
};

std::vector<Run> runsOf(const std::vector<TunePath>& route, size_t end) {
  std::vector<Run> runs;
  for (size_t i = 0; i < end; ++i) {
    if (!runs.empty() && runs.back().path == route[i])
      runs.back().last = i;
    else
      runs.push_back({i, i, route[i]});
  }
  return runs;
}

void coalesce(std::vector<Run>& runs) {
  std::vector<Run> out;
  for (const Run& r : runs) {
    if (!out.empty() && out.back().path == r.path)
      out.back().last = r.last;
    else
      out.push_back(r);
  }
  runs = std::move(out);
}

// What a path costs at a size as the table would run it, in us; kCannot where it cannot take it.
using CostFn = std::function<double(TunePath, size_t)>;

// What the sizes of `run` lose when they move to `into`: the sum of the relative slow-downs.
double mergeLoss(const Run& run, TunePath into, const CostFn& cost) {
  double loss = 0;
  for (size_t i = run.first; i <= run.last; ++i) {
    const double own = cost(run.path, i);
    const double moved = cost(into, i);
    if (std::isinf(moved) || std::isinf(own) || own <= 0) return kCannot;
    loss += moved / own - 1.0;
  }
  return loss;
}

// Merges runs until `counted(runs)` is at most `cap`: each step the shortest run among the first
// counted(runs) (the lower one on a tie) joins the neighbour it loses least to. False when no run can
// move without landing on a path that cannot take one of its sizes.
bool mergeToCap(std::vector<Run>& runs, int cap, const std::function<int(const std::vector<Run>&)>& counted,
                const CostFn& cost) {
  while (counted(runs) > cap) {
    std::vector<size_t> order(static_cast<size_t>(counted(runs)));
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return runs[a].length() < runs[b].length(); });
    bool merged = false;
    for (size_t k : order) {
      const double left = k > 0 ? mergeLoss(runs[k], runs[k - 1].path, cost) : kCannot;
      const double right = k + 1 < runs.size() ? mergeLoss(runs[k], runs[k + 1].path, cost) : kCannot;
      if (std::isinf(left) && std::isinf(right)) continue;
      runs[k].path = left <= right ? runs[k - 1].path : runs[k + 1].path;
      coalesce(runs);
      merged = true;
      break;
    }
    if (!merged) return false;
  }
  return true;
}

struct Limits {
  uint64_t oneShot = 0;
  uint64_t twoShot = 0;
};

Limits limitsOf(const std::vector<Run>& runs, const std::vector<SizeTimes>& times) {
  Limits l;
  for (const Run& r : runs) {
    uint64_t& limit = symAlgoOf(r.path) == SymAlgo::OneShot ? l.oneShot : l.twoShot;
    limit = std::max(limit, times[r.last].bytes);
  }
  return l;
}

std::string usOf(const SizeTimes& t, TunePath p) { return tunePathLabel(p) + " " + microsecondsText(t.median(p)); }

}  // namespace

uint64_t TuneBands::oneShotMaxBytes() const {
  uint64_t m = 0;
  for (const SymBand& b : symBands)
    if (b.algo == SymAlgo::OneShot) m = std::max(m, b.maxBytes);
  return m;
}

uint64_t TuneBands::twoShotMaxBytes() const {
  uint64_t m = 0;
  for (const SymBand& b : symBands)
    if (b.algo == SymAlgo::TwoShot) m = std::max(m, b.maxBytes);
  return m;
}

TuneBands chooseBands(std::vector<SizeTimes> times, int nRanks, double margin) {
  std::sort(times.begin(), times.end(), [](const SizeTimes& a, const SizeTimes& b) { return a.bytes < b.bytes; });
  const size_t n = times.size();
  TuneBands result;
  std::vector<SizeChoice> full(n), ncclOnly(n);
  for (size_t i = 0; i < n; ++i) {
    full[i] = chooseAtSize(times[i], margin);
    ncclOnly[i] = chooseAtSize(times[i], margin, ncclTunePaths());
    result.measured = result.measured || full[i].measured;
  }

  // 2. The symmetric range: up to the first size an NCCL candidate (or nothing) takes.
  size_t symEnd = 0;
  while (symEnd < n && isSymmetricPath(full[symEnd].chosen)) ++symEnd;

  // 3. Its bands, within the band cap and the buffer limits, cutting the range from the top if need be.
  const CostFn symCost = [&](TunePath p, size_t i) {
    const double us = times[i].median(p);
    return std::isnan(us) ? kCannot : us;
  };
  const auto allRuns = [](const std::vector<Run>& runs) { return static_cast<int>(runs.size()); };
  std::vector<TunePath> symRoute(symEnd);
  for (size_t i = 0; i < symEnd; ++i) symRoute[i] = full[i].chosen;
  std::vector<std::string> cutWhy(n);  // why a size the rule gave to a symmetric path went to NCCL
  size_t top = symEnd;
  std::vector<Run> symRuns;
  while (top > 0) {
    symRuns = runsOf(symRoute, top);
    if (!mergeToCap(symRuns, kMaxSymBands, allRuns, symCost)) {
      cutWhy[top - 1] = "more than " + std::to_string(kMaxSymBands) + " symmetric bands";
    } else {
      const Limits l = limitsOf(symRuns, times);
      const std::string problem = symmetricLimitProblem(nRanks, l.oneShot, l.twoShot);
      if (problem.empty()) break;
      cutWhy[top - 1] = "beyond what the symmetric setup takes (" + problem + ")";
    }
    --top;
    symRuns.clear();
  }
  for (const Run& r : symRuns)
    result.symBands.push_back({times[r.last].bytes, symAlgoOf(r.path), symVariantOf(r.path)});

  // 4. The NCCL bands: stock NCCL over the symmetric range, the NCCL-only rule above it.
  std::vector<TunePath> ncclRoute(n, TunePath::Nccl);
  for (size_t i = top; i < n; ++i) ncclRoute[i] = ncclOnly[i].chosen;
  const CostFn ncclCost = [&](TunePath p, size_t i) {
    double us = times[i].median(p);
    if (std::isnan(us)) us = times[i].median(TunePath::Nccl);  // not available: NCCL keeps its own choice
    return std::isnan(us) ? kCannot : us;
  };
  // Bands written: every run up to the last tuned one (stock runs above it need no band).
  const auto writtenRuns = [](const std::vector<Run>& runs) {
    int written = 0;
    for (size_t k = 0; k < runs.size(); ++k)
      if (runs[k].path != TunePath::Nccl) written = static_cast<int>(k) + 1;
    return written;
  };
  std::vector<Run> ncclRuns = runsOf(ncclRoute, n);
  while (!mergeToCap(ncclRuns, kMaxBands, writtenRuns, ncclCost)) {
    // No finite merge left (stock NCCL itself unmeasured somewhere): the highest tuned run goes back
    // to stock until the bands fit.
    for (size_t k = ncclRuns.size(); k-- > 0;)
      if (ncclRuns[k].path != TunePath::Nccl) {
        ncclRuns[k].path = TunePath::Nccl;
        break;
      }
    coalesce(ncclRuns);
  }
  const int written = writtenRuns(ncclRuns);
  for (int k = 0; k < written; ++k) {
    const Run& r = ncclRuns[static_cast<size_t>(k)];
    result.ncclBands.push_back(
        {Collective::AllReduce, times[r.last].bytes, ncclAlgoOf(r.path), ncclProtoOf(r.path), 0});
  }

  // The verdicts, with their reasons.
  std::vector<TunePath> route(n, TunePath::Nccl);
  for (const Run& r : symRuns)
    for (size_t i = r.first; i <= r.last; ++i) route[i] = r.path;
  for (const Run& r : ncclRuns)
    for (size_t i = std::max(r.first, top); i <= r.last; ++i) route[i] = r.path;
  for (size_t i = 0; i < n; ++i) {
    SizeVerdict v;
    v.bytes = times[i].bytes;
    v.best = full[i].chosen;
    v.chosen = route[i];
    if (i < top) {
      v.why = full[i].why;
      if (v.chosen != v.best)
        v.why += "; in the " + tunePathLabel(v.chosen) + " band (at most " + std::to_string(kMaxSymBands) +
                 " symmetric bands): " + usOf(times[i], v.chosen);
    } else {
      std::string why;
      if (isSymmetricPath(v.best)) {
        const std::string reason =
            i < symEnd ? cutWhy[i] : "NCCL won at " + formatBytes(times[symEnd].bytes) + " (no holes)";
        why = usOf(times[i], v.best) + " would win here, but " + reason + "; ";
      }
      why += ncclOnly[i].why;
      if (isSymmetricPath(full[i].fastest) && !isSymmetricPath(v.best))
        why += "; " + usOf(times[i], full[i].fastest) + " not faster by the margin";
      if (v.chosen != ncclOnly[i].chosen && v.chosen != TunePath::Nccl)
        why += "; in the " + tunePathLabel(v.chosen) + " band (at most " + std::to_string(kMaxBands) +
               " NCCL bands): " + usOf(times[i], v.chosen);
      else if (v.chosen != ncclOnly[i].chosen)
        why += "; left to stock NCCL (at most " + std::to_string(kMaxBands) + " NCCL bands)";
      if (isNcclConfig(v.chosen) && std::isnan(times[i].median(v.chosen))) {
        why += "; " + tunePathLabel(v.chosen) + " not measured here: NCCL keeps its own choice";
        v.chosen = TunePath::Nccl;
      }
      v.why = why;
    }
    result.sizes.push_back(std::move(v));
  }
  return result;
}

std::string symBandsText(const std::vector<SymBand>& bands) {
  std::string text;
  for (const SymBand& b : bands)
    text += (text.empty() ? "" : ", ") + tunePathLabel(symmetricPath(b.algo, b.variant)) + " up to " +
            formatBytes(b.maxBytes);
  return text.empty() ? "none" : text;
}

std::string ncclBandsText(const std::vector<NcclBand>& bands) {
  std::string text;
  for (const NcclBand& b : bands) {
    const std::optional<TunePath> config = ncclConfigPath(b.algo, b.proto);
    std::string label = config
                            ? tunePathLabel(*config)
                            : "NCCL " + std::string(ncclAlgoName(b.algo)) + "/" + std::string(ncclProtoName(b.proto));
    if (b.algo == NcclAlgo::Any && b.proto == NcclProto::Any) label = "stock NCCL";
    text += (text.empty() ? "" : ", ") + label + " up to " + formatBytes(b.maxBytes);
  }
  return text.empty() ? "none" : text;
}

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include "tools/tune/crossover.h"

#include <cstdio>

namespace symmem {

namespace {

struct PathFacts {
  const char* name;
  const char* heading;
  NcclAlgo algo;
  NcclProto proto;
  SymAlgo symAlgo;
  SymVariant variant;
};

// Indexed by TunePath.
constexpr PathFacts kPaths[kNumTunePaths] = {
    {"nccl", "stock", NcclAlgo::Any, NcclProto::Any, SymAlgo::OneShot, SymVariant::Push},
    {"nccl-ring-ll", "ring/ll", NcclAlgo::Ring, NcclProto::LL, SymAlgo::OneShot, SymVariant::Push},
    {"nccl-ring-ll128", "ring/ll128", NcclAlgo::Ring, NcclProto::LL128, SymAlgo::OneShot, SymVariant::Push},
    {"nccl-ring-simple", "ring/simple", NcclAlgo::Ring, NcclProto::Simple, SymAlgo::OneShot, SymVariant::Push},
    {"nccl-tree-ll", "tree/ll", NcclAlgo::Tree, NcclProto::LL, SymAlgo::OneShot, SymVariant::Push},
    {"nccl-tree-ll128", "tree/ll128", NcclAlgo::Tree, NcclProto::LL128, SymAlgo::OneShot, SymVariant::Push},
    {"nccl-tree-simple", "tree/simple", NcclAlgo::Tree, NcclProto::Simple, SymAlgo::OneShot, SymVariant::Push},
    {"oneshot-push", "1s-push", NcclAlgo::Any, NcclProto::Any, SymAlgo::OneShot, SymVariant::Push},
    {"oneshot-pull", "1s-pull", NcclAlgo::Any, NcclProto::Any, SymAlgo::OneShot, SymVariant::Pull},
    {"oneshot-staged", "1s-staged", NcclAlgo::Any, NcclProto::Any, SymAlgo::OneShot, SymVariant::Staged},
    {"oneshot-halves", "1s-halves", NcclAlgo::Any, NcclProto::Any, SymAlgo::OneShot, SymVariant::Halves},
    {"twoshot-push", "2s-push", NcclAlgo::Any, NcclProto::Any, SymAlgo::TwoShot, SymVariant::Push},
    {"twoshot-pull", "2s-pull", NcclAlgo::Any, NcclProto::Any, SymAlgo::TwoShot, SymVariant::Pull},
    {"twoshot-staged", "2s-staged", NcclAlgo::Any, NcclProto::Any, SymAlgo::TwoShot, SymVariant::Staged},
    {"twoshot-halves", "2s-halves", NcclAlgo::Any, NcclProto::Any, SymAlgo::TwoShot, SymVariant::Halves},
};

const PathFacts& facts(TunePath p) { return kPaths[tunePathIndex(p)]; }

std::string percentText(double margin) {
  char text[32];
  std::snprintf(text, sizeof text, "%g%%", margin * 100.0);
  return text;
}

std::string factorText(double margin) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", 1.0 - margin);
  return text;
}

}  // namespace

NcclAlgo ncclAlgoOf(TunePath p) { return facts(p).algo; }
NcclProto ncclProtoOf(TunePath p) { return facts(p).proto; }

std::optional<TunePath> ncclConfigPath(NcclAlgo algo, NcclProto proto) {
  for (int i = 0; i < kNumTunePaths; ++i) {
    const TunePath p = tunePathAt(i);
    if (isNcclConfig(p) && facts(p).algo == algo && facts(p).proto == proto) return p;
  }
  return std::nullopt;
}

SymAlgo symAlgoOf(TunePath p) { return facts(p).symAlgo; }
SymVariant symVariantOf(TunePath p) { return facts(p).variant; }

static_assert(tunePathIndex(TunePath::TwoShotPush) - tunePathIndex(TunePath::OneShotPush) == kNumSymVariants,
              "one symmetric path per algorithm and variant, in core/sym_variant.h's order");

TunePath symmetricPath(SymAlgo algo, SymVariant variant) {
  const int first = tunePathIndex(algo == SymAlgo::OneShot ? TunePath::OneShotPush : TunePath::TwoShotPush);
  return tunePathAt(first + static_cast<int>(variant));
}

std::string_view tunePathName(TunePath p) { return facts(p).name; }

std::string_view tunePathHeading(TunePath p) { return facts(p).heading; }

std::string tunePathLabel(TunePath p) {
  if (p == TunePath::Nccl) return "stock NCCL";
  if (isNcclConfig(p))
    return "NCCL " + std::string(ncclAlgoName(facts(p).algo)) + "/" + std::string(ncclProtoName(facts(p).proto));
  return std::string(symAlgoOf(p) == SymAlgo::OneShot ? "one-shot " : "two-shot ") +
         std::string(symVariantName(symVariantOf(p)));
}

TunePathSet allTunePaths() { return TunePathSet().set(); }

TunePathSet ncclTunePaths() {
  TunePathSet set;
  for (int i = 0; i < kNumTunePaths; ++i) set[static_cast<size_t>(i)] = isNcclPath(tunePathAt(i));
  return set;
}

std::string microsecondsText(double us) {
  if (std::isnan(us)) return "not measured";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f us", us);
  return text;
}

SizeChoice chooseAtSize(const SizeTimes& times, double margin, TunePathSet allowed) {
  SizeChoice c;
  for (int i = 0; i < kNumTunePaths; ++i) {
    const TunePath p = tunePathAt(i);
    const double us = times.median(p);
    if (!allowed[static_cast<size_t>(i)] || std::isnan(us)) continue;
    if (!c.measured || us < times.median(c.fastest)) c.fastest = p;
    c.measured = true;
  }
  if (!c.measured) {
    c.why = "nothing measured: NCCL untouched";
    return c;
  }
  const double fastestUs = times.median(c.fastest);
  // The simplest candidate within the margin: the first in order, as the order is the simplicity.
  for (int i = 0; i < kNumTunePaths; ++i) {
    const TunePath p = tunePathAt(i);
    const double us = times.median(p);
    if (allowed[static_cast<size_t>(i)] && !std::isnan(us) && us * (1.0 - margin) <= fastestUs) {
      c.chosen = p;
      break;
    }
  }
  const double chosenUs = times.median(c.chosen);
  const double stockUs = times.median(TunePath::Nccl);
  const std::string chosenText = tunePathLabel(c.chosen) + " " + microsecondsText(chosenUs);
  if (c.chosen != c.fastest) {
    c.why = chosenText + " within " + percentText(margin) + " of " + tunePathLabel(c.fastest) + " " +
            microsecondsText(fastestUs) + ": simpler kept";
  } else if (c.chosen == TunePath::Nccl) {
    c.why = chosenText + " is the fastest";
  } else if (std::isnan(stockUs) || !allowed[static_cast<size_t>(tunePathIndex(TunePath::Nccl))]) {
    c.why = chosenText + " is the fastest (stock NCCL not measured)";
  } else {
    // Chosen and fastest: every simpler candidate, stock NCCL too, is slower by more than the margin.
    c.why = chosenText + " < " + factorText(margin) + " x stock NCCL " + microsecondsText(stockUs);
  }
  return c;
}

}  // namespace symmem

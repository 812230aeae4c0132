// SPDX-License-Identifier: Apache-2.0
#pragma once
// The paths symmem-tune times (its candidates) and the choice among them at one message size.
//
// The candidates, in their fixed order of simplicity (also the CSV's order of paths):
//   stock NCCL (no NCCL_ALGO / NCCL_PROTO: what an application gets without nccl-symmem),
//   NCCL forced to ring/ll, ring/ll128, ring/simple, tree/ll, tree/ll128, tree/simple,
//   one-shot push, pull, staged, halves, then two-shot push, pull, staged, halves.
// Stock first: it needs no table line at all. NCCL's own algorithms next: a band only steers NCCL's
// choice and falls back to NCCL's own one where the cell is not available. Then the symmetric kernels,
// one-shot before two-shot (one kernel launch, no intermediate buffer), push before pull before staged
// before halves (the order core/sym_variant.h gives them). The halves candidates run only on ranks that
// form two halves (tools/common/rank_halves.h); elsewhere they are not measured, so never chosen.
//
// The rule at one size: the chosen candidate is the simplest one whose median t_c is within the margin
// of the fastest median t_f, that is t_c x (1 - margin) <= t_f. So a candidate replaces a simpler one only
// when it is faster by more than the margin (a symmetric path beats stock NCCL only so), and a near tie
// keeps the simpler choice. A candidate without a number (NaN: not measured, not available, or wrong
// results) is never chosen. Pure: no CUDA, no I/O.
#include <array>
#include <bitset>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/decision.h"

namespace symmem {

enum class TunePath : int {
  Nccl,  // stock NCCL
  NcclRingLL,
  NcclRingLL128,
  NcclRingSimple,
  NcclTreeLL,
  NcclTreeLL128,
  NcclTreeSimple,
  OneShotPush,
  OneShotPull,
  OneShotStaged,
  OneShotHalves,
  TwoShotPush,
  TwoShotPull,
  TwoShotStaged,
  TwoShotHalves,
};
inline constexpr int kNumTunePaths = 15;
inline constexpr int kNumNcclConfigs = 6;  // the forced ring/tree x ll/ll128/simple paths

constexpr int tunePathIndex(TunePath p) { return static_cast<int>(p); }
constexpr TunePath tunePathAt(int index) { return static_cast<TunePath>(index); }

// NCCL with or without a forced configuration (stock or a config), or one of our kernels.
constexpr bool isNcclPath(TunePath p) { return tunePathIndex(p) <= tunePathIndex(TunePath::NcclTreeSimple); }
constexpr bool isNcclConfig(TunePath p) { return isNcclPath(p) && p != TunePath::Nccl; }
constexpr bool isSymmetricPath(TunePath p) { return !isNcclPath(p); }

// The forced algorithm and protocol of a config (Any for stock NCCL and the symmetric paths).
NcclAlgo ncclAlgoOf(TunePath p);
NcclProto ncclProtoOf(TunePath p);
// The config forcing `algo` and `proto`; nullopt for anything but ring/tree x ll/ll128/simple.
std::optional<TunePath> ncclConfigPath(NcclAlgo algo, NcclProto proto);

// The kernel and variant of a symmetric path (meaningless for NCCL paths).
SymAlgo symAlgoOf(TunePath p);
SymVariant symVariantOf(TunePath p);
TunePath symmetricPath(SymAlgo algo, SymVariant variant);

// The CSV's path column: "nccl", "nccl-ring-ll", ..., "oneshot-push", ..., "twoshot-halves".
std::string_view tunePathName(TunePath p);
// The summary's column heading, at most 11 characters: "stock", "ring/simple", "1s-push", "2s-staged".
std::string_view tunePathHeading(TunePath p);
// For sentences (the why of a verdict, the progress line): "stock NCCL", "NCCL ring/ll", "one-shot pull".
std::string tunePathLabel(TunePath p);

// A set of candidates (bit i: TunePath i).
using TunePathSet = std::bitset<kNumTunePaths>;
TunePathSet allTunePaths();
TunePathSet ncclTunePaths();  // stock NCCL and the six configs

inline constexpr double kNotMeasured = NAN;

// Per-call microseconds of every path at one message size (NaN: not measured, not available, wrong
// results): the median of its samples, which the rule uses, and the fastest and slowest sample.
struct SizeTimes {
  uint64_t bytes = 0;
  std::array<double, kNumTunePaths> medianUs = unmeasured();
  std::array<double, kNumTunePaths> minUs = unmeasured();
  std::array<double, kNumTunePaths> maxUs = unmeasured();

  double median(TunePath p) const { return medianUs[static_cast<size_t>(tunePathIndex(p))]; }
  void setMedian(TunePath p, double us) { medianUs[static_cast<size_t>(tunePathIndex(p))] = us; }

  static std::array<double, kNumTunePaths> unmeasured() {
    std::array<double, kNumTunePaths> a{};
    a.fill(kNotMeasured);
    return a;
  }
};

inline constexpr double kDefaultTuneMargin = 0.05;

// The choice at one size among the candidates in `allowed`.
struct SizeChoice {
  TunePath chosen = TunePath::Nccl;   // stock NCCL when no allowed candidate has a number
  TunePath fastest = TunePath::Nccl;  // the allowed candidate with the smallest median
  bool measured = false;              // some allowed candidate has a number
  // One line: "one-shot pull 6.10 us < 0.95 x stock NCCL 13.60 us", "NCCL ring/ll 26.20 us < 0.95 x stock
  // NCCL 48.20 us", "one-shot push 7.00 us within 5% of one-shot pull 6.80 us: simpler kept", ...
  std::string why;
};

// margin is in [0, 1).
SizeChoice chooseAtSize(const SizeTimes& times, double margin, TunePathSet allowed = allTunePaths());

// "6.10 us", or "not measured" for NaN.
std::string microsecondsText(double us);

}  // namespace symmem

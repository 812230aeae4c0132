// SPDX-License-Identifier: Apache-2.0
#include "tools/tune_crossover.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/table_file.h"

namespace symmem {

const char* tunedChoiceName(TunedChoice c) {
  switch (c) {
    case TunedChoice::Nccl:
      return "nccl";
    case TunedChoice::OneShot:
      return "one-shot";
    case TunedChoice::TwoShot:
      return "two-shot";
  }
  return "?";
}

namespace {

std::string microseconds(double us) {
  if (std::isnan(us)) return "not measured";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f us", us);
  return text;
}

// NaN compares false, so a path without a number never wins.
bool beatsNccl(double pathUs, double ncclUs, double margin) {
  return !std::isnan(pathUs) && !std::isnan(ncclUs) && pathUs <= (1.0 - margin) * ncclUs;
}

std::string comparison(const char* path, double pathUs, double ncclUs, double margin) {
  char factor[16];
  std::snprintf(factor, sizeof factor, "%.2f", 1.0 - margin);
  const bool wins = beatsNccl(pathUs, ncclUs, margin);
  return std::string(path) + " " + microseconds(pathUs) + (wins ? " <= " : " > ") + factor + " x NCCL " +
         microseconds(ncclUs);
}

}  // namespace

Crossover findCrossover(std::vector<SizeMedians> medians, double margin) {
  std::sort(medians.begin(), medians.end(),
            [](const SizeMedians& a, const SizeMedians& b) { return a.bytes < b.bytes; });
  Crossover result;
  result.sizes.reserve(medians.size());
  for (const SizeMedians& m : medians) {
    SizeVerdict v;
    v.bytes = m.bytes;
    v.oneShotWins = beatsNccl(m.oneShotUs, m.ncclUs, margin);
    // Only a measured one-shot can block two-shot: where one-shot did not run it is no alternative.
    const bool fasterThanOneShot = std::isnan(m.oneShotUs) || m.twoShotUs < m.oneShotUs;
    v.twoShotWins = beatsNccl(m.twoShotUs, m.ncclUs, margin) && fasterThanOneShot;
    result.sizes.push_back(v);
  }

  // One-shot: the unbroken run of wins from the smallest size.
  size_t i = 0;
  for (; i < result.sizes.size() && result.sizes[i].oneShotWins; ++i) {
    result.sizes[i].chosen = TunedChoice::OneShot;
    result.sizes[i].why = comparison("one-shot", medians[i].oneShotUs, medians[i].ncclUs, margin);
    result.oneShotMaxBytes = result.sizes[i].bytes;
  }
  const size_t oneShotEnd = i;
  // Two-shot: the unbroken run of wins right above the one-shot range.
  for (; i < result.sizes.size() && result.sizes[i].twoShotWins; ++i) {
    result.sizes[i].chosen = TunedChoice::TwoShot;
    result.sizes[i].why = comparison("two-shot", medians[i].twoShotUs, medians[i].ncclUs, margin) + ", one-shot " +
                          microseconds(medians[i].oneShotUs);
    result.twoShotMaxBytes = result.sizes[i].bytes;
  }
  const size_t twoShotEnd = i;

  // Everything else stays on NCCL; say what ended each range, so a surprising table can be read back.
  for (size_t k = twoShotEnd; k < result.sizes.size(); ++k) {
    SizeVerdict& v = result.sizes[k];
    const SizeMedians& m = medians[k];
    std::string why;
    if (v.oneShotWins)
      why = "one-shot wins here but lost at " + formatBytes(result.sizes[oneShotEnd].bytes) + " (no holes)";
    else
      why = comparison("one-shot", m.oneShotUs, m.ncclUs, margin);
    why += "; ";
    if (v.twoShotWins)
      why += "two-shot wins here but lost at " + formatBytes(result.sizes[twoShotEnd].bytes) + " (no holes)";
    else if (beatsNccl(m.twoShotUs, m.ncclUs, margin))
      why += "two-shot " + microseconds(m.twoShotUs) + " not faster than one-shot " + microseconds(m.oneShotUs);
    else
      why += comparison("two-shot", m.twoShotUs, m.ncclUs, margin);
    v.why = why;
  }
  return result;
}

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include "tools/tune/csv.h"

#include <cmath>
#include <cstdio>

namespace symmem {

namespace {

// Microseconds with three decimals (nanoseconds: below what a graph replay resolves), empty for NaN.
std::string number(double us) {
  if (std::isnan(us)) return "";
  char text[48];
  std::snprintf(text, sizeof text, "%.3f", us);
  return text;
}

}  // namespace

std::string tuneCsvHeader() { return "ranks,link,cc,bytes,path,median_us,min_us,max_us,chosen\n"; }

std::string tuneCsvRows(const TunedWorld& world, ComputeCapability cc) {
  const std::string key = std::to_string(world.nRanks) + "," + std::string(linkClassName(world.link)) + "," + cc.str();
  std::string rows;
  for (const SizeTimes& t : world.times) {
    TunePath chosen = TunePath::Nccl;
    for (const SizeVerdict& v : world.bands.sizes)
      if (v.bytes == t.bytes) chosen = v.chosen;
    for (TunePath p : world.paths) {
      const auto i = static_cast<size_t>(tunePathIndex(p));
      rows += key + "," + std::to_string(t.bytes) + "," + std::string(tunePathName(p)) + "," + number(t.medianUs[i]) +
              "," + number(t.minUs[i]) + "," + number(t.maxUs[i]) + "," + (p == chosen ? "1" : "0") + "\n";
    }
  }
  return rows;
}

std::string tuneCsvText(const std::vector<TunedWorld>& worlds, ComputeCapability cc) {
  std::string text = tuneCsvHeader();
  for (const TunedWorld& w : worlds) text += tuneCsvRows(w, cc);
  return text;
}

}  // namespace symmem

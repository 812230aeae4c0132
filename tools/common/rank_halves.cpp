// SPDX-License-Identifier: Apache-2.0
#include "tools/common/rank_halves.h"

#include "kernels/halves_plan.h"
#include "topology/halves.h"

namespace symmem {

static_assert(kMaxHalvesVariantRanks == kernels::kMaxRanks, "the halves variant's rank bound is the kernels'");

std::string parseHalvesArg(const std::string& flag, const std::string& text, std::vector<int>& out) {
  const std::string bad = "bad " + flag + " '" + text + "': ";
  const std::string expected =
      "expected one half (0 or 1) per rank, like 0,0,1,1: two equal halves of at least 2 ranks each, rank 0 in "
      "half 0, at most " +
      std::to_string(kMaxHalvesVariantRanks) + " ranks";
  std::vector<int> halves;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item != "0" && item != "1")
      return bad + (item.empty() ? "empty item" : "'" + item + "' is not a half") + "; " + expected;
    halves.push_back(item == "1" ? 1 : 0);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const int n = static_cast<int>(halves.size());
  if (n > kMaxHalvesVariantRanks) return bad + std::to_string(n) + " ranks; " + expected;
  // The kernels' own rule (setup refuses the same halves).
  kernels::SymmetricConfig config;
  config.nRanks = n;
  config.halves = true;
  for (int r = 0; r < n; ++r) config.halfOf[r] = static_cast<uint8_t>(halves[r]);
  if (std::string problem = kernels::halvesProblem(config); !problem.empty()) return bad + problem + "; " + expected;
  out = halves;
  return {};
}

void RankHalves::fill(bool& halves, std::array<uint8_t, kMaxHalvesVariantRanks>& halfOfOut) const {
  halves = ok;
  halfOfOut.fill(0);
  for (size_t r = 0; ok && r < halfOf.size() && r < halfOfOut.size(); ++r)
    halfOfOut[r] = static_cast<uint8_t>(halfOf[r]);
}

RankHalves rankHalves(const Topology& topo, std::span<const int> gpus, const std::vector<int>& declared) {
  RankHalves out;
  const int n = static_cast<int>(gpus.size());
  if (!declared.empty() && static_cast<int>(declared.size()) == n) {
    out.ok = true;
    out.declared = true;
    out.halfOf = declared;
    return out;
  }
  if (n > kMaxHalvesVariantRanks) {
    out.why = "no halves on these GPUs (the halves variant takes at most " + std::to_string(kMaxHalvesVariantRanks) +
              " ranks)";
    return out;
  }
  const Halves h = halvesOf(topo, gpus);
  if (!h.ok) {
    out.why = "no halves on these GPUs (" + h.reason + ")";
    return out;
  }
  if (h.half[0].size() < 2) {
    out.why = "no halves on these GPUs (one GPU on each side: the variant needs at least 2 per half)";
    return out;
  }
  out.ok = true;
  out.halfOf = h.halfOf;
  return out;
}

std::string halvesSkippedLine(int nRanks, const RankHalves& halves) {
  return "halves skipped at " + std::to_string(nRanks) + " ranks: " + halves.why + "; --halves declares them";
}

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include "kernels/halves_plan.h"

#include <vector>

namespace symmem::kernels {

static_assert(std::tuple_size_v<decltype(SymmetricConfig::halfOf)> == kMaxRanks, "one half per rank");

std::string halvesProblem(const SymmetricConfig& config) {
  if (!config.halves) return {};
  const int n = config.nRanks;
  if (n < 4 || n > kMaxRanks || n % 2 != 0)
    return "halves need an even number of ranks from 4 to " + std::to_string(kMaxRanks) + ", not " + std::to_string(n);
  int inHalf[2] = {0, 0};
  for (int r = 0; r < n; ++r) {
    if (config.halfOf[r] > 1)
      return "rank " + std::to_string(r) + "'s half is " + std::to_string(config.halfOf[r]) + " (0 or 1)";
    ++inHalf[config.halfOf[r]];
  }
  if (config.halfOf[0] != 0) return "rank 0 must be in half 0";
  if (inHalf[0] != inHalf[1])
    return "unequal halves (" + std::to_string(inHalf[0]) + " and " + std::to_string(inHalf[1]) + " ranks)";
  return {};
}

HalvesPlan halvesPlan(const SymmetricConfig& config) {
  HalvesPlan plan;
  std::vector<int> members[2];
  for (int r = 0; r < config.nRanks; ++r) members[config.halfOf[r]].push_back(r);
  for (int h = 0; h < 2; ++h) {
    uint32_t mask = 0;
    for (int r : members[h]) mask |= 1u << r;
    for (size_t i = 0; i < members[h].size(); ++i) {
      const int r = members[h][i];
      plan.partnerOf[r] = members[1 - h][i];
      plan.islandPeers[r] = mask & ~(1u << r);
    }
  }
  return plan;
}

}  // namespace symmem::kernels

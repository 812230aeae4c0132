// SPDX-License-Identifier: Apache-2.0
#pragma once
// The halves a communicator's halves variant runs over (SymmetricConfig::halves), checked and turned
// into what the kernels need: each rank's partner and the other ranks of its half. Plain host code.
#include <array>
#include <cstdint>
#include <string>

#include "kernels/symmetric_comm.h"
#include "kernels/symmetric_layout.h"

namespace symmem::kernels {

// Why the config's halves cannot be used (empty when they can, or when there are none): every rank's
// half 0 or 1, half 0 holding rank 0, two equal halves of at least 2 ranks each. A setup that finds a
// problem on any rank gives no rank a comm.
std::string halvesProblem(const SymmetricConfig& config);

struct HalvesPlan {
  // partnerOf[r]: the rank at r's position (in rank order) in the other half.
  std::array<int, kMaxRanks> partnerOf{};
  // islandPeers[r]: the other ranks of r's half, as a mask.
  std::array<uint32_t, kMaxRanks> islandPeers{};
};
// For halves without a problem (halvesProblem empty, config.halves set).
HalvesPlan halvesPlan(const SymmetricConfig& config);

}  // namespace symmem::kernels

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The halves a measuring tool (symmem-bench, symmem-tune) gives its ranks for the halves variant
// (core/sym_variant.h): declared on the command line (--halves 0,0,1,1), else found in the node's
// topology (topology/halves.h) for the ranks' GPUs. Pure, so every rank, and the tests, get the same.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "topology/model.h"

namespace symmem {

// The most ranks the halves variant takes (kernels::SymmetricConfig::halfOf).
inline constexpr int kMaxHalvesVariantRanks = 8;

// --halves: one half (0 or 1) per rank, comma-separated: "0,0,1,1", "0,1,0,1". Two equal halves of at
// least 2 ranks each, rank 0 in half 0, at most kMaxHalvesVariantRanks ranks. "" when valid, else one
// message naming the flag and the value.
std::string parseHalvesArg(const std::string& flag, const std::string& text, std::vector<int>& out);

// The halves of one set of ranks, or why there are none.
struct RankHalves {
  bool ok = false;
  std::vector<int> halfOf;  // per rank, 0 or 1 (empty unless ok)
  std::string why;          // unless ok: "no halves on these GPUs (...)"
  bool declared = false;    // from --halves, not the topology
  void fill(bool& halves, std::array<uint8_t, kMaxHalvesVariantRanks>& halfOfOut) const;
};

// The halves for ranks on `gpus` (topology indices, rank order): `declared` when it names as many ranks,
// else the topology's (halvesOf), which must give two halves of at least 2 ranks each.
RankHalves rankHalves(const Topology& topo, std::span<const int> gpus, const std::vector<int>& declared);

// The line a tool prints when it skips the halves variant: "halves skipped at 2 ranks: no halves on these
// GPUs (...); --halves declares them".
std::string halvesSkippedLine(int nRanks, const RankHalves& halves);

}  // namespace symmem

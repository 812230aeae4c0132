// SPDX-License-Identifier: Apache-2.0
#pragma once
// The two halves of a communicator: where an 8-GPU PCIe box built from two halves (4 GPUs under each
// socket, under each root port, or under each of two switches) is cut, so that later kernels can reduce
// inside each half and cross the middle once per GPU instead of once per pair.
//
// The rule. Each pair of ranks has a tier: the slowest thing its PCIe traffic passes through, from the
// path each rank sees to the other (`nvidia-smi`'s token, and whether both GPUs sit on one known NUMA
// node, as in classify.h):
//
//   PIX                          within one switch      (nothing to cut)
//   PXB                          switch                 (an upper switch of a cascade)
//   PHB, NODE, SYS on one NUMA   root complex           (Crossing::RootComplex)
//   SYS across NUMA nodes        socket                 (Crossing::Socket)
//
// The splitting level is the slowest tier among all pairs. The ranks joined by pairs faster than that
// level form the groups (at the root-complex level these are the PCIe islands of pcieIslands(), plus
// GPUs alone on their root port); every pair between two groups is then of the splitting level. There
// are halves when there are exactly two groups of equal size. Half 0 is the group of rank 0; the rank at
// position i of half 0 (positions in rank order) is paired with the rank at position i of half 1.
//
// No halves, and the communicator keeps the flat kernels, when: a single rank; every pair within one
// switch (level none); any pair joined by NVLink (halves model a PCIe fabric); any pair unknown (level
// unknown); the two ranks of a pair seeing it differently (not agreed; level unknown); more than two
// groups at the splitting level; two groups of unequal size (no hierarchical variant is planned for
// them: its middle exchange pairs ranks one to one); or a group holding a pair of the splitting level
// (a topology that contradicts itself). The reason says which, naming the ranks or GPUs.
//
// Pure: the same input gives the same answer, so every rank of a communicator, running it over the same
// gathered facts (agreement.h), finds the same halves or the same reason for none.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/decision.h"
#include "core/link_class.h"
#include "core/sym_variant.h"
#include "topology/model.h"

namespace symmem {

// The level that splits a set of GPUs, fastest first.
enum class SplitLevel : int { None, Switch, RootComplex, Socket, Unknown };
std::string_view splitLevelName(SplitLevel level);  // "none", "switch", "root-complex", "socket", "unknown"

// How one rank sees its path to another: the path token and whether both GPUs are on one known NUMA
// node. Both views of every pair go in, so that a disagreement is seen, not averaged away.
struct PairPaths {
  PathKind ab = PathKind::Unknown;  // a's view of b
  PathKind ba = PathKind::Unknown;  // b's view of a
  bool sameKnownNuma = false;
};

struct Halves {
  SplitLevel level = SplitLevel::None;  // the slowest level between two ranks (Unknown: not learned or not agreed)
  bool ok = false;                      // two equal halves across that level
  std::vector<int> half[2];             // ranks (positions) of each half, ascending; half 0 holds rank 0
  std::vector<int> halfOf;              // per rank: 0 or 1 (empty unless ok)
  std::vector<int> partnerOf;           // per rank: the rank at the same position of the other half (empty unless ok)
  // Unless ok: why there are no halves ("unequal halves at the socket level: ranks {0,1,2} and {3}
  // (3 and 1); ..."). When ok: empty.
  std::string reason;

  int ranks() const { return static_cast<int>(half[0].size() + half[1].size()); }
  // Point-to-point flows that cross the middle in one all-reduce (crossingFlows below): with halves, one
  // per GPU; with the flat one-shot push, each GPU pushes to every peer of the other half. 0 unless ok.
  int hierarchicalCrossingFlows() const { return crossingFlows(SymAlgo::OneShot, SymVariant::Halves); }
  int flatPushCrossingFlows() const { return crossingFlows(SymAlgo::OneShot, SymVariant::Push); }
  int crossingFlows(SymAlgo algo, SymVariant variant) const;  // 0 unless ok
};

// Point-to-point flows that cross the middle in one all-reduce of `algo` in `variant` (core/sym_variant.h)
// over two halves of `perHalf` ranks each (n = 2 x perHalf), counting each (sender, receiver) pair of one
// phase once:
//   one-shot push, staged  every GPU sends its input to every GPU of the other half: 2 x perHalf^2 (staged
//                          spreads them over its steps: the same count);
//   one-shot pull          the same pairs, as reads: 2 x perHalf^2;
//   two-shot push, pull,   the scatter crosses 2 x perHalf^2 and the gather as many again: 4 x perHalf^2;
//   staged
//   halves                 one per GPU, to its partner: n (one-shot and two-shot alike).
// 0 for perHalf < 1.
int crossingFlows(SymAlgo algo, SymVariant variant, int perHalf);

// The link class of the pairs that cross the middle at `level` (Socket -> PcieCrossSocket, RootComplex ->
// PcieSameRoot, Switch -> PcieSameSwitch; otherwise Unknown).
LinkClass middleLinkClass(SplitLevel level);

// The rule over n ranks. `pairs` holds n*n entries, [i*n+j] for i < j (the rest is not read). `ids` names
// the ranks in reasons (GPU indices, or rank numbers), `noun` is what they are ("GPU", "rank").
Halves halvesFromPairs(int n, std::span<const PairPaths> pairs, std::span<const int> ids, std::string_view noun);

// The node form, for the tools: the GPUs `gpus` (topology indices, in rank order) of `topo`. Positions in
// the result are positions in `gpus`; reasons name GPUs by their index.
Halves halvesOf(const Topology& topo, std::span<const int> gpus);
Halves halvesOfAll(const Topology& topo);

// "{0,1,2,3}": the members of a half (or any list), mapped through `ids` when given.
std::string groupText(std::span<const int> members, std::span<const int> ids = {});

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// From the raw model to the few facts the decision uses: the LinkClass of a set of GPUs, whether
// every pair of them may use P2P, the PCIe islands, and which pairs cross the root complex or socket.
//
// nvidia-smi's SYS does not always mean "another socket": some platforms (the 8x RTX 4090 capture in
// tests/data/topologies) report SYS for every pair, even between GPUs on one NUMA node. So a SYS pair
// whose GPUs are both known to sit on one NUMA node counts as PcieSameRoot; a SYS pair with unknown
// NUMA placement stays PcieCrossSocket (the pessimistic reading).
#include <span>
#include <vector>

#include "core/link_class.h"
#include "topology/model.h"

namespace symmem {

// NV* -> NvLink; PIX, PXB -> PcieSameSwitch; PHB, NODE -> PcieSameRoot;
// SYS -> PcieCrossSocket, or PcieSameRoot when both GPUs are on one known NUMA node; unknown -> Unknown.
LinkClass pairLinkClass(const Topology& topo, int a, int b);
// The same rule for a path on its own (used where only per-rank facts are at hand).
LinkClass linkClassOfPath(PathKind path, bool sameKnownNuma);

// The worst pair link among `gpus`; Unknown if any pair is unknown, or if fewer than two GPUs are
// given (there is no link to classify).
LinkClass linkClassOf(const Topology& topo, std::span<const int> gpus);
LinkClass linkClassOfAll(const Topology& topo);

// P2P read and write in both directions: Yes if all four are OK, No if any one is not, else Unknown.
Support pairP2p(const Topology& topo, int a, int b);
// Over every pair of `gpus`: No beats Unknown beats Yes. Fewer than two GPUs: Unknown.
Support p2pOf(const Topology& topo, std::span<const int> gpus);
Support p2pOfAll(const Topology& topo);

// Groups of GPUs joined by PCIe switches (PIX/PXB pairs, connected components), each sorted, ordered
// by first member. GPUs that share no switch with another GPU are not part of any island.
std::vector<std::vector<int>> pcieIslands(const Topology& topo);

// What PCIe traffic between a pair has to pass through. NVLink and switch-local pairs cross nothing.
enum class Crossing : int { None, RootComplex, Socket, Unknown };
std::string_view crossingName(Crossing c);  // "none", "root-complex", "socket", "unknown"
Crossing crossingOf(const Topology& topo, int a, int b);

// Both GPUs on one NUMA node, as far as the model knows.
bool sameKnownNuma(const Topology& topo, int a, int b);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include "topology/classify.h"

#include <algorithm>
#include <numeric>

namespace symmem {

bool sameKnownNuma(const Topology& topo, int a, int b) {
  const auto& na = topo.gpu(a).numaNode;
  const auto& nb = topo.gpu(b).numaNode;
  return na && nb && *na == *nb;
}

LinkClass linkClassOfPath(PathKind path, bool sameNuma) {
  switch (path) {
    case PathKind::NvLink:
      return LinkClass::NvLink;
    case PathKind::Pix:
    case PathKind::Pxb:
      return LinkClass::PcieSameSwitch;
    case PathKind::Phb:
    case PathKind::Node:
      return LinkClass::PcieSameRoot;
    case PathKind::Sys:
      return sameNuma ? LinkClass::PcieSameRoot : LinkClass::PcieCrossSocket;
    case PathKind::Unknown:
      return LinkClass::Unknown;
  }
  return LinkClass::Unknown;
}

LinkClass pairLinkClass(const Topology& topo, int a, int b) {
  return linkClassOfPath(topo.link(a, b).path, sameKnownNuma(topo, a, b));
}

LinkClass linkClassOf(const Topology& topo, std::span<const int> gpus) {
  if (gpus.size() < 2) return LinkClass::Unknown;
  LinkClass worst = LinkClass::NvLink;
  for (size_t i = 0; i < gpus.size(); ++i)
    for (size_t j = i + 1; j < gpus.size(); ++j) worst = worseOf(worst, pairLinkClass(topo, gpus[i], gpus[j]));
  return worst;
}

namespace {
std::vector<int> allIndices(const Topology& topo) {
  std::vector<int> all(topo.gpuCount());
  std::iota(all.begin(), all.end(), 0);
  return all;
}

Support combine(Support acc, Support next) {
  if (acc == Support::No || next == Support::No) return Support::No;
  if (acc == Support::Unknown || next == Support::Unknown) return Support::Unknown;
  return Support::Yes;
}
}  // namespace

LinkClass linkClassOfAll(const Topology& topo) { return linkClassOf(topo, allIndices(topo)); }

Support pairP2p(const Topology& topo, int a, int b) {
  const auto& ab = topo.link(a, b);
  const auto& ba = topo.link(b, a);
  return combine(combine(ab.p2pRead, ab.p2pWrite), combine(ba.p2pRead, ba.p2pWrite));
}

Support p2pOf(const Topology& topo, std::span<const int> gpus) {
  if (gpus.size() < 2) return Support::Unknown;
  Support acc = Support::Yes;
  for (size_t i = 0; i < gpus.size(); ++i)
    for (size_t j = i + 1; j < gpus.size(); ++j) acc = combine(acc, pairP2p(topo, gpus[i], gpus[j]));
  return acc;
}

Support p2pOfAll(const Topology& topo) { return p2pOf(topo, allIndices(topo)); }

std::vector<std::vector<int>> pcieIslands(const Topology& topo) {
  const int n = topo.gpuCount();
  // Union-find over switch-local pairs; n is at most a few dozen.
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      const auto p = topo.link(a, b).path;
      if (p == PathKind::Pix || p == PathKind::Pxb) parent[root(b)] = root(a);
    }
  std::vector<std::vector<int>> byRoot(n);
  for (int g = 0; g < n; ++g) byRoot[root(g)].push_back(g);
  std::vector<std::vector<int>> islands;
  for (auto& members : byRoot)
    if (members.size() >= 2) islands.push_back(std::move(members));
  std::sort(islands.begin(), islands.end());
  return islands;
}

std::string_view crossingName(Crossing c) {
  switch (c) {
    case Crossing::None:
      return "none";
    case Crossing::RootComplex:
      return "root-complex";
    case Crossing::Socket:
      return "socket";
    case Crossing::Unknown:
      return "unknown";
  }
  return "unknown";
}

Crossing crossingOf(const Topology& topo, int a, int b) {
  switch (pairLinkClass(topo, a, b)) {
    case LinkClass::NvLink:
    case LinkClass::PcieSameSwitch:
      return Crossing::None;
    case LinkClass::PcieSameRoot:
      return Crossing::RootComplex;
    case LinkClass::PcieCrossSocket:
      return Crossing::Socket;
    case LinkClass::Unknown:
      return Crossing::Unknown;
  }
  return Crossing::Unknown;
}

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include "topology/halves.h"

#include <algorithm>
#include <numeric>

#include "topology/classify.h"

namespace symmem {

namespace {

// A pair's tier, fastest first; NvLink and Unknown stand apart (they refuse halves).
enum class Tier : int { WithinSwitch, Switch, RootComplex, Socket, NvLink, Unknown };

Tier tierOf(PathKind path, bool sameNuma) {
  switch (path) {
    case PathKind::NvLink:
      return Tier::NvLink;
    case PathKind::Pix:
      return Tier::WithinSwitch;
    case PathKind::Pxb:
      return Tier::Switch;
    case PathKind::Phb:
    case PathKind::Node:
      return Tier::RootComplex;
    case PathKind::Sys:
      // As classify.h: SYS between GPUs of one known NUMA node does not cross the socket.
      return sameNuma ? Tier::RootComplex : Tier::Socket;
    case PathKind::Unknown:
      return Tier::Unknown;
  }
  return Tier::Unknown;
}

SplitLevel levelOf(Tier t) {
  switch (t) {
    case Tier::Switch:
      return SplitLevel::Switch;
    case Tier::RootComplex:
      return SplitLevel::RootComplex;
    case Tier::Socket:
      return SplitLevel::Socket;
    case Tier::WithinSwitch:
    case Tier::NvLink:
      return SplitLevel::None;
    case Tier::Unknown:
      return SplitLevel::Unknown;
  }
  return SplitLevel::Unknown;
}

std::string levelPhrase(SplitLevel level) { return "the " + std::string(splitLevelName(level)) + " level"; }

Halves none(SplitLevel level, std::string reason) {
  Halves h;
  h.level = level;
  h.reason = std::move(reason);
  return h;
}

}  // namespace

std::string_view splitLevelName(SplitLevel level) {
  switch (level) {
    case SplitLevel::None:
      return "none";
    case SplitLevel::Switch:
      return "switch";
    case SplitLevel::RootComplex:
      return "root-complex";
    case SplitLevel::Socket:
      return "socket";
    case SplitLevel::Unknown:
      return "unknown";
  }
  return "unknown";
}

LinkClass middleLinkClass(SplitLevel level) {
  switch (level) {
    case SplitLevel::Switch:
      return LinkClass::PcieSameSwitch;
    case SplitLevel::RootComplex:
      return LinkClass::PcieSameRoot;
    case SplitLevel::Socket:
      return LinkClass::PcieCrossSocket;
    case SplitLevel::None:
    case SplitLevel::Unknown:
      return LinkClass::Unknown;
  }
  return LinkClass::Unknown;
}

std::string groupText(std::span<const int> members, std::span<const int> ids) {
  std::string out = "{";
  for (size_t k = 0; k < members.size(); ++k) {
    const int m = members[k];
    const bool mapped = m >= 0 && static_cast<size_t>(m) < ids.size();
    out.append(k ? "," : "").append(std::to_string(mapped ? ids[m] : m));
  }
  return out + "}";
}

Halves halvesFromPairs(int n, std::span<const PairPaths> pairs, std::span<const int> ids, std::string_view noun) {
  const std::string nouns = std::string(noun) + "s";
  auto name = [&](int i) {
    const bool mapped = i >= 0 && static_cast<size_t>(i) < ids.size();
    return std::string(noun) + " " + std::to_string(mapped ? ids[i] : i);
  };
  if (n < 2) return none(SplitLevel::None, "a single " + std::string(noun) + " has no other half");
  if (pairs.size() < static_cast<size_t>(n) * static_cast<size_t>(n))
    return none(SplitLevel::Unknown, "not every pair of " + nouns + " was given");  // a caller's mistake
  auto at = [&](int i, int j) -> const PairPaths& { return pairs[static_cast<size_t>(i) * n + j]; };

  // Each check runs over the pairs in one fixed order and names the first pair it finds, so every rank
  // writes the same reason.
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (at(i, j).ab == PathKind::Unknown || at(i, j).ba == PathKind::Unknown)
        return none(SplitLevel::Unknown, "the path between " + name(i) + " and " + name(j) + " is unknown");

  // Both views of a pair must put it in one tier: otherwise the ranks that hold these views would cut
  // the communicator in different places.
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      const PairPaths& p = at(i, j);
      if (tierOf(p.ab, p.sameKnownNuma) != tierOf(p.ba, p.sameKnownNuma))
        return none(SplitLevel::Unknown, name(i) + " sees its path to " + name(j) + " as " + pathToken(p.ab, 0) + ", " +
                                             name(j) + " sees it as " + pathToken(p.ba, 0) +
                                             ": the halves are not agreed");
    }

  std::vector<Tier> tier(static_cast<size_t>(n) * n, Tier::WithinSwitch);
  Tier slowest = Tier::WithinSwitch;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      const Tier t = tierOf(at(i, j).ab, at(i, j).sameKnownNuma);
      tier[static_cast<size_t>(i) * n + j] = tier[static_cast<size_t>(j) * n + i] = t;
      if (t != Tier::NvLink) slowest = std::max(slowest, t);
    }
  const SplitLevel level = levelOf(slowest);

  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (tier[static_cast<size_t>(i) * n + j] == Tier::NvLink)
        return none(level,
                    name(i) + " and " + name(j) + " are joined by NVLink: halves are for PCIe-only communicators");
  if (level == SplitLevel::None) return none(level, "every pair shares one PCIe switch: there is no middle to cross");

  // Groups: the ranks joined by pairs faster than the splitting level (union-find; n is small).
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (tier[static_cast<size_t>(i) * n + j] < slowest) {
        const int ri = root(i), rj = root(j);
        parent[std::max(ri, rj)] = std::min(ri, rj);
      }
  std::vector<std::vector<int>> byRoot(n);
  for (int r = 0; r < n; ++r) byRoot[root(r)].push_back(r);
  std::vector<std::vector<int>> groups;  // each ascending, ordered by first member: rank 0's group first
  for (auto& g : byRoot)
    if (!g.empty()) groups.push_back(std::move(g));
  std::sort(groups.begin(), groups.end());

  // Joined only through faster pairs, yet a pair inside one group is as slow as the middle: the paths
  // contradict each other (a hand-edited file, or a broken capture). No cut is trustworthy then.
  for (const auto& g : groups)
    for (size_t x = 0; x < g.size(); ++x)
      for (size_t y = x + 1; y < g.size(); ++y)
        if (tier[static_cast<size_t>(g[x]) * n + g[y]] == slowest)
          return none(level, name(g[x]) + " and " + name(g[y]) +
                                 " are joined through faster links, yet their path "
                                 "crosses " +
                                 levelPhrase(level) + ": the paths contradict each other");

  std::string listed;
  for (const auto& g : groups) listed += (listed.empty() ? "" : " ") + groupText(g, ids);
  if (groups.size() != 2)
    return none(level, std::to_string(groups.size()) + " groups at " + levelPhrase(level) + ": " + nouns + " " +
                           listed + "; halves need exactly two");
  if (groups[0].size() != groups[1].size())
    return none(level, "unequal halves at " + levelPhrase(level) + ": " + nouns + " " + groupText(groups[0], ids) +
                           " and " + groupText(groups[1], ids) + " (" + std::to_string(groups[0].size()) + " and " +
                           std::to_string(groups[1].size()) + "); the flat kernels only");

  Halves h;
  h.level = level;
  h.ok = true;
  h.half[0] = groups[0];
  h.half[1] = groups[1];
  h.halfOf.assign(n, 0);
  h.partnerOf.assign(n, -1);
  for (size_t k = 0; k < h.half[0].size(); ++k) {
    const int a = h.half[0][k], b = h.half[1][k];
    h.halfOf[b] = 1;
    h.partnerOf[a] = b;
    h.partnerOf[b] = a;
  }
  return h;
}

Halves halvesOf(const Topology& topo, std::span<const int> gpus) {
  const int n = static_cast<int>(gpus.size());
  std::vector<PairPaths> pairs(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      const int a = gpus[i], b = gpus[j];
      if (a == b) return none(SplitLevel::Unknown, "GPU " + std::to_string(a) + " is listed twice");
      PairPaths& p = pairs[static_cast<size_t>(i) * n + j];
      p.ab = topo.link(a, b).path;
      p.ba = topo.link(b, a).path;
      p.sameKnownNuma = sameKnownNuma(topo, a, b);
    }
  return halvesFromPairs(n, pairs, gpus, "GPU");
}

Halves halvesOfAll(const Topology& topo) {
  std::vector<int> all(topo.gpuCount());
  std::iota(all.begin(), all.end(), 0);
  return halvesOf(topo, all);
}

int crossingFlows(SymAlgo algo, SymVariant variant, int perHalf) {
  if (perHalf < 1) return 0;
  if (variant == SymVariant::Halves) return 2 * perHalf;
  const int onePhase = 2 * perHalf * perHalf;
  return algo == SymAlgo::TwoShot ? 2 * onePhase : onePhase;
}

int Halves::crossingFlows(SymAlgo algo, SymVariant variant) const {
  return ok ? symmem::crossingFlows(algo, variant, static_cast<int>(half[0].size())) : 0;
}

}  // namespace symmem

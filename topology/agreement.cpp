// SPDX-License-Identifier: Apache-2.0
#include "topology/agreement.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "topology/classify.h"
#include "topology/pci_bus_id.h"

namespace symmem {

uint32_t packPciAddress(std::string_view busId) {
  const auto canonical = canonicalPciBusId(busId);
  if (!canonical) return 0;
  unsigned domain = 0, bus = 0, dev = 0, func = 0;
  if (std::sscanf(canonical->c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &func) != 4) return 0;
  return ((domain << 16) | (bus << 8) | (dev << 3) | func) + 1;
}

uint64_t thisHostHash() {
  // FNV-1a over hostname and boot id: containers on one machine may share a hostname across
  // reboots of a cluster, the boot id tells them apart (NCCL keys its host hash the same way).
  std::string key;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) key = host;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string bootId;
  if (boot && std::getline(boot, bootId)) key += "|" + bootId;
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return h;
}

RankFacts rankFactsFor(const Topology& node, std::string_view pciBusId, int cudaDevice, ComputeCapability capability,
                       uint64_t hostHash) {
  RankFacts f;
  std::memset(&f, 0, sizeof(f));  // padding included: the struct is compared and hashed as bytes
  f.version = kRankFactsVersion;
  f.cudaDevice = cudaDevice;
  f.hostHash = hostHash;
  f.numaNode = -1;
  const auto canonical = canonicalPciBusId(pciBusId);
  if (canonical) std::snprintf(f.pciBusId, sizeof(f.pciBusId), "%s", canonical->c_str());
  const int self = canonical ? node.indexOfBusId(*canonical) : -1;
  if (!capability.known() && self >= 0) capability = node.gpu(self).capability;
  f.ccMajor = capability.major;
  f.ccMinor = capability.minor;
  if (self < 0) return f;
  if (const auto& numa = node.gpu(self).numaNode) f.numaNode = *numa;
  for (int g = 0; g < node.gpuCount() && f.peerCount < static_cast<uint32_t>(kRankFactsMaxPeers); ++g) {
    if (g == self) continue;
    const auto& link = node.link(self, g);
    PeerView& p = f.peers[f.peerCount++];
    p.pciAddress = packPciAddress(node.gpu(g).pciBusId);
    p.path = static_cast<uint8_t>(link.path);
    p.nvlinks = static_cast<uint8_t>(std::clamp(link.nvlinks, 0, 255));
    p.p2pRead = static_cast<uint8_t>(link.p2pRead);
    p.p2pWrite = static_cast<uint8_t>(link.p2pWrite);
  }
  return f;
}

namespace {

// `from`'s view of `to`, if `from` listed it. Values from another process are checked before use.
const PeerView* viewOf(const RankFacts& from, const RankFacts& to) {
  const uint32_t address = packPciAddress(std::string_view(to.pciBusId, strnlen(to.pciBusId, sizeof(to.pciBusId))));
  if (address == 0) return nullptr;
  const uint32_t count = std::min<uint32_t>(from.peerCount, kRankFactsMaxPeers);
  for (uint32_t i = 0; i < count; ++i)
    if (from.peers[i].pciAddress == address) return &from.peers[i];
  return nullptr;
}

PathKind pathOf(const PeerView* v) {
  if (!v || v->path > static_cast<uint8_t>(PathKind::Unknown)) return PathKind::Unknown;
  return static_cast<PathKind>(v->path);
}

bool p2pOk(const PeerView* v) {
  return v && v->p2pRead == static_cast<uint8_t>(Support::Yes) && v->p2pWrite == static_cast<uint8_t>(Support::Yes);
}

std::string busOf(const RankFacts& r) {
  const std::string s(r.pciBusId, strnlen(r.pciBusId, sizeof(r.pciBusId)));
  return s.empty() ? "unknown GPU" : s;
}

std::string rankName(size_t i, const RankFacts& r) { return "rank " + std::to_string(i) + " (" + busOf(r) + ")"; }

}  // namespace

Halves halvesOn(std::span<const RankFacts> ranks) {
  const int n = static_cast<int>(ranks.size());
  auto none = [](std::string reason) {
    Halves h;
    h.level = SplitLevel::Unknown;
    h.reason = std::move(reason);
    return h;
  };
  for (int i = 0; i < n; ++i)
    if (ranks[i].version != kRankFactsVersion)
      return none("rank " + std::to_string(i) + " runs a different nccl-symmem build");
  for (int i = 1; i < n; ++i)
    if (ranks[i].hostHash != ranks[0].hostHash) return none("the communicator spans more than one host");

  std::vector<PairPaths> pairs(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      const RankFacts& a = ranks[i];
      const RankFacts& b = ranks[j];
      if (std::strncmp(a.pciBusId, b.pciBusId, sizeof(a.pciBusId)) == 0 && a.pciBusId[0] != '\0')
        return none(rankName(i, a) + " and rank " + std::to_string(j) + " use the same GPU");
      PairPaths& p = pairs[static_cast<size_t>(i) * n + j];
      p.ab = pathOf(viewOf(a, b));
      p.ba = pathOf(viewOf(b, a));
      p.sameKnownNuma = a.numaNode >= 0 && a.numaNode == b.numaNode;
    }
  std::vector<int> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = i;
  return halvesFromPairs(n, pairs, ids, "rank");
}

CommunicatorTopology agreeOn(std::span<const RankFacts> ranks, SharedGpu sharedGpu) {
  CommunicatorTopology out;
  std::vector<std::string> problems;  // in a fixed order, so every rank writes the same reason

  std::vector<uint64_t> hostHashes;
  for (const auto& r : ranks) hostHashes.push_back(r.hostHash);
  std::sort(hostHashes.begin(), hostHashes.end());
  out.hosts = static_cast<int>(std::unique(hostHashes.begin(), hostHashes.end()) - hostHashes.begin());

  if (ranks.size() < 2) problems.push_back("a single rank has no peers to share memory with");
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i].version != kRankFactsVersion) {
      problems.push_back("rank " + std::to_string(i) + " runs a different nccl-symmem build (facts version " +
                         std::to_string(ranks[i].version) + ")");
      break;
    }
  if (out.hosts > 1) problems.push_back("the communicator spans " + std::to_string(out.hosts) + " hosts");

  // Capability: the common one, or the lowest; unknown if any rank does not know its own.
  bool allKnown = !ranks.empty();
  out.capabilitiesEqual = !ranks.empty();
  for (size_t i = 0; i < ranks.size(); ++i) {
    const ComputeCapability cc{ranks[i].ccMajor, ranks[i].ccMinor};
    if (!cc.known()) {
      if (allKnown) problems.push_back(rankName(i, ranks[i]) + " does not know its compute capability");
      allKnown = false;
    }
    if (i == 0 || cc < out.capability) out.capability = cc;
    if (cc != ComputeCapability{ranks[0].ccMajor, ranks[0].ccMinor} && out.capabilitiesEqual) {
      out.capabilitiesEqual = false;
      problems.push_back("mixed compute capabilities: " + ComputeCapability{ranks[0].ccMajor, ranks[0].ccMinor}.str() +
                         " on rank 0, " + cc.str() + " on rank " + std::to_string(i));
    }
  }
  if (!allKnown) {
    out.capability = {};
    out.capabilitiesEqual = false;
  }

  // Pairs: each rank's own view of the other, the worse of the two views.
  out.link = ranks.size() >= 2 && out.hosts == 1 ? LinkClass::NvLink : LinkClass::Unknown;
  out.allPairsP2p = ranks.size() >= 2 && out.hosts == 1;
  bool linkProblem = false, p2pProblem = false;
  if (out.hosts == 1) {
    for (size_t i = 0; i < ranks.size(); ++i)
      for (size_t j = i + 1; j < ranks.size(); ++j) {
        const RankFacts& a = ranks[i];
        const RankFacts& b = ranks[j];
        if (std::strncmp(a.pciBusId, b.pciBusId, sizeof(a.pciBusId)) == 0 && a.pciBusId[0] != '\0') {
          if (sharedGpu == SharedGpu::AllowForTesting) continue;  // one device: its own memory, no link
          problems.push_back(rankName(i, a) + " and rank " + std::to_string(j) + " use the same GPU");
          out.link = LinkClass::Unknown;
          out.allPairsP2p = false;
          continue;
        }
        const PeerView* ab = viewOf(a, b);
        const PeerView* ba = viewOf(b, a);
        const bool sameNuma = a.numaNode >= 0 && a.numaNode == b.numaNode;
        const LinkClass pair = worseOf(linkClassOfPath(pathOf(ab), sameNuma), linkClassOfPath(pathOf(ba), sameNuma));
        out.link = worseOf(out.link, pair);
        if (pair == LinkClass::Unknown && !linkProblem) {
          linkProblem = true;
          problems.push_back("the link between " + rankName(i, a) + " and " + rankName(j, b) + " is unknown");
        }
        if (!(p2pOk(ab) && p2pOk(ba))) {
          out.allPairsP2p = false;
          if (!p2pProblem) {
            p2pProblem = true;
            problems.push_back("no P2P read+write between " + rankName(i, a) + " and " + rankName(j, b));
          }
        }
      }
  }

  out.halves = halvesOn(ranks);
  out.symmetricOk = problems.empty();
  if (out.symmetricOk) {
    out.reason = std::to_string(ranks.size()) + " ranks on one host, compute capability " + out.capability.str() +
                 ", link " + std::string(linkClassName(out.link)) + ", P2P on every pair";
  } else {
    out.reason = "symmetric path off: ";
    for (size_t k = 0; k < problems.size(); ++k) out.reason += (k ? "; " : "") + problems[k];
  }
  return out;
}

}  // namespace symmem

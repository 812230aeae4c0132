#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <string>

#include "plugin/comm_setup.h"
#include "topology/classify.h"
#include "topology/pci_bus_id.h"

namespace symmem {

uint64_t thisHostHash() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string id = host;
  // Containers on one machine share the boot id but may differ in hostname; two machines that
  // share a hostname differ in boot id. Either way the pair is unique per node.
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string bootId;
  if (boot) std::getline(boot, bootId);
  return std::hash<std::string>{}(id + "/" + bootId);
}

Agreement agreeOnHellos(std::span<const RankHello> hellos) {
  Agreement a;
  a.facts.nRanks = static_cast<int>(hellos.size());
  int nodes = 0;
  for (size_t i = 0; i < hellos.size(); ++i) {
    const RankHello& h = hellos[i];
    if (h.magic != kHelloMagic || h.version != 1) {
      a.why = "rank " + std::to_string(i) + " runs a different nccl-symmem build";
      return a;
    }
    bool newHost = true;
    for (size_t j = 0; j < i; ++j) newHost &= hellos[j].hostHash != h.hostHash;
    nodes += newHost;
  }
  a.facts.nNodes = nodes;
  if (nodes != 1) {
    a.why = "communicator spans " + std::to_string(nodes) + " nodes";
    return a;
  }
  for (size_t i = 0; i < hellos.size(); ++i) {
    if (!hellos[i].ok) {
      a.why = "rank " + std::to_string(i) + " cannot take part (no usable CUDA device)";
      return a;
    }
  }
  const ComputeCapability first{hellos[0].ccMajor, hellos[0].ccMinor};
  for (size_t i = 1; i < hellos.size(); ++i) {
    const ComputeCapability cc{hellos[i].ccMajor, hellos[i].ccMinor};
    if (cc != first) {
      a.why = "mixed GPUs (capability " + first.str() + " on rank 0, " + cc.str() + " on rank " + std::to_string(i) + ")";
      return a;
    }
  }
  a.facts.cc = first;
  a.usable = true;
  return a;
}

RankVerdict verdictFromTopology(const Topology& topo, std::span<const RankHello> hellos, int myRank,
                                bool (*canAccessPeer)(int myDevice, int peerDevice)) {
  RankVerdict v;
  v.magic = kVerdictMagic;
  v.ok = 1;
  std::vector<int> index(hellos.size(), -1);
  for (size_t i = 0; i < hellos.size(); ++i) {
    auto id = canonicalPciBusId(std::string_view(hellos[i].pciBusId, strnlen(hellos[i].pciBusId, sizeof(hellos[i].pciBusId))));
    if (id) index[i] = topo.indexOfBusId(*id);
  }
  // Worst link among the communicator's GPUs (every rank computes the whole matrix: with one node
  // view, the answers agree; exchange 2 takes the worst anyway).
  LinkClass worst = LinkClass::NvLink;
  for (size_t i = 0; i < hellos.size(); ++i)
    for (size_t j = i + 1; j < hellos.size(); ++j) {
      if (std::strncmp(hellos[i].pciBusId, hellos[j].pciBusId, sizeof(hellos[i].pciBusId)) == 0) {
        worst = LinkClass::Unknown;  // two ranks on one GPU: not a case the kernels handle
        continue;
      }
      worst = worseOf(worst, index[i] >= 0 && index[j] >= 0 ? pairLinkClass(topo, index[i], index[j])
                                                            : LinkClass::Unknown);
    }
  v.link = static_cast<int32_t>(worst);

  // P2P from this rank's GPU to each peer's: the driver's answer through NVML, or, for devices of
  // this process, what CUDA itself says. The pattern check at buffer setup proves it either way.
  bool all = true;
  const RankHello& me = hellos[myRank];
  for (size_t j = 0; j < hellos.size(); ++j) {
    if (static_cast<int>(j) == myRank) continue;
    bool ok = false;
    if (hellos[j].pid == me.pid && hellos[j].hostHash == me.hostHash && canAccessPeer) {
      ok = canAccessPeer(me.device, hellos[j].device);
    } else if (index[myRank] >= 0 && index[j] >= 0) {
      ok = pairP2p(topo, index[myRank], index[j]) == Support::Yes && pairP2p(topo, index[j], index[myRank]) == Support::Yes;
    }
    all &= ok;
  }
  v.p2pToAll = all;
  return v;
}

Agreement agreeOnVerdicts(const Agreement& hellos, std::span<const RankVerdict> verdicts) {
  Agreement a = hellos;
  if (!a.usable) return a;
  LinkClass worst = LinkClass::NvLink;
  bool p2p = true;
  for (size_t i = 0; i < verdicts.size(); ++i) {
    if (verdicts[i].magic != kVerdictMagic || !verdicts[i].ok) {
      a.usable = false;
      a.why = "rank " + std::to_string(i) + " could not classify the links";
      return a;
    }
    const int link = verdicts[i].link;
    worst = worseOf(worst, link >= 0 && link <= static_cast<int>(LinkClass::Unknown) ? static_cast<LinkClass>(link)
                                                                                      : LinkClass::Unknown);
    if (!verdicts[i].p2pToAll && p2p) {
      p2p = false;
      a.why = "rank " + std::to_string(i) + " cannot reach every peer by P2P";
    }
  }
  a.facts.link = worst;
  a.facts.allPairsP2p = p2p;
  if (worst == LinkClass::Unknown) {
    a.usable = false;
    a.why = "link class between the GPUs unknown (no NVML? set SYMMEM_TOPO_FILE)";
  } else if (!p2p) {
    a.usable = false;
  }
  return a;
}

}  // namespace symmem

#pragma once
// The collective setup of one communicator's symmetric path, in three exchanges on the
// communicator itself (pncclAllGather on a private stream):
//   1. every rank's facts: host, process, device, capability, PCI bus id;
//   2. every rank's verdict on the links from its own view of the node (worst link class among the
//      communicator's GPUs, P2P from its GPU to every peer's);
//   3. (inside kernels::SymmetricComm::create) buffer handles and the P2P pattern check.
// Every rank combines the same gathered arrays the same way, so every rank decides alike; any rank
// that cannot take part makes every rank stay on NCCL.
#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "plugin/decision.h"
#include "topology/model.h"

namespace symmem {

// Exchange 1, one per rank. Plain bytes: it travels through an all-gather.
struct RankHello {
  uint32_t magic = 0;
  uint32_t version = 0;
  uint64_t hostHash = 0;  // hostname + boot id
  uint64_t pid = 0;
  int32_t device = -1;
  int32_t ccMajor = 0;
  int32_t ccMinor = 0;
  int32_t ok = 0;         // this rank can take part (CUDA works, device known)
  char pciBusId[32] = {};
};

// Exchange 2, one per rank.
struct RankVerdict {
  uint32_t magic = 0;
  int32_t link = static_cast<int32_t>(LinkClass::Unknown);  // worst link this rank sees among all GPUs
  int32_t p2pToAll = 0;  // this rank's GPU can read and write every peer's
  int32_t ok = 0;
};

inline constexpr uint32_t kHelloMagic = 0x53594d31;  // "SYM1"
inline constexpr uint32_t kVerdictMagic = 0x53594d32;

struct Agreement {
  bool usable = false;  // the symmetric path may be set up
  CommFacts facts;      // nRanks, nNodes, cc, link, allPairsP2p (capacity is filled in later)
  std::string why;      // when not usable: the first reason, the same text on every rank
};

// From exchange 1 alone: hosts, capabilities, sanity. `usable` false ends setup on every rank.
Agreement agreeOnHellos(std::span<const RankHello> hellos);

// This rank's view of the links between the communicator's GPUs on its node.
RankVerdict verdictFromTopology(const Topology& topo, std::span<const RankHello> hellos, int myRank,
                                bool (*canAccessPeer)(int myDevice, int peerDevice));

// Combines exchange 2 into the final facts (worst link, P2P everywhere).
Agreement agreeOnVerdicts(const Agreement& hellos, std::span<const RankVerdict> verdicts);

uint64_t thisHostHash();

}  // namespace symmem

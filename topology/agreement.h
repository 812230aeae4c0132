// SPDX-License-Identifier: Apache-2.0
#pragma once
// Agreeing on a communicator's topology facts across its ranks.
//
// Each rank describes itself in a fixed-size RankFacts (its GPU, capability, NUMA node, and its own
// view of the path and P2P status to every other GPU of its node). The ranks all-gather these
// structs, and every rank runs agreeOn() over the same gathered array: a pure function, so every rank
// reaches the same answer and takes the same path. Anything that is not proven (more than one host,
// mixed capabilities, a pair without P2P, a pair whose link is unknown) switches the symmetric path
// off for everyone, with a reason a person can read.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/capability.h"
#include "core/link_class.h"
#include "topology/halves.h"
#include "topology/model.h"

namespace symmem {

// Bumped when the layout changes, so ranks running different builds fall back instead of misreading.
inline constexpr uint32_t kRankFactsVersion = 1;
// Enough for every single-node GPU count in use (DGX-2 has 16). A node with more GPUs lists the
// first ones only; pairs beyond the table are unknown, and unknown means fallback.
inline constexpr int kRankFactsMaxPeers = 16;

// This rank's view of one other GPU of its node.
struct PeerView {
  uint32_t pciAddress;  // packPciAddress(); 0 for an unused slot
  uint8_t path;         // PathKind
  uint8_t nvlinks;
  uint8_t p2pRead;   // Support
  uint8_t p2pWrite;  // Support
};

// One rank's facts, memcpy-able so it can travel in an all-gather. Fill with rankFactsFor().
struct RankFacts {
  uint32_t version;
  int32_t cudaDevice;
  uint64_t hostHash;  // same value on every rank of one host (thisHostHash())
  char pciBusId[16];  // canonical "0000:3b:00.0", NUL-terminated; empty when unknown
  int32_t ccMajor;    // 0 when unknown
  int32_t ccMinor;
  int32_t numaNode;    // -1 when unknown
  uint32_t peerCount;  // used entries of peers
  PeerView peers[kRankFactsMaxPeers];
};
static_assert(std::is_trivially_copyable_v<RankFacts> && std::is_standard_layout_v<RankFacts>);
static_assert(sizeof(PeerView) == 8 && sizeof(RankFacts) == 48 + 8 * kRankFactsMaxPeers,
              "RankFacts travels between processes: keep its layout fixed");

// "0000:3b:00.0" -> domain<<16 | bus<<8 | device<<3 | function, plus one so that 0 means "none".
uint32_t packPciAddress(std::string_view busId);

// A hash of this host's name and boot id: equal for all processes of one boot of one machine.
uint64_t thisHostHash();

// This rank's facts from the node topology. `pciBusId` is the rank's GPU in any spelling
// (cudaDeviceGetPCIBusId's, NVML's). `capability` may be left unknown: it is then taken from the
// topology. A GPU the topology does not list gets no peer views, which makes every pair unknown.
RankFacts rankFactsFor(const Topology& node, std::string_view pciBusId, int cudaDevice, ComputeCapability capability,
                       uint64_t hostHash);

struct CommunicatorTopology {
  bool symmetricOk = false;             // every check below passed
  LinkClass link = LinkClass::Unknown;  // worst pair; Unknown across hosts or when a pair is unknown
  bool allPairsP2p = false;             // every pair, both directions, P2P read and write OK
  ComputeCapability capability;         // the common one; the lowest when they differ; unknown if any is
  bool capabilitiesEqual = false;
  int hosts = 0;
  std::string reason;  // why the symmetric path is off, or a summary when it is on
  // The communicator's two halves (topology/halves.h), from halvesOn(): found whether or not the
  // symmetric path is on, and agreed like the rest (a pair its two ranks see differently has none).
  Halves halves;
};

// How ranks that share one GPU are judged. Refused in production: two ranks on one device would time-slice
// it. Allowed only in the testing mode SYMMEM_TEST_SHARED_GPU=1, once every rank has voted for it
// (plugin/interpose/setup_vote.h): such a pair then counts as the node's best link, so that one GPU can run the
// symmetric path at 2-8 ranks as separate processes.
enum class SharedGpu { Refuse, AllowForTesting };

// The halves over the gathered array (order = communicator rank order): each pair as its two ranks see
// it, NUMA placement from both. None, with the reason, also when the facts come from different builds,
// from more than one host, or when two ranks share one GPU (the testing mode included). Pure: every
// rank finds the same halves or the same reason for none. agreeOn() fills CommunicatorTopology::halves
// with it.
Halves halvesOn(std::span<const RankFacts> ranks);

// The same answer on every rank for the same gathered array (order = communicator rank order).
CommunicatorTopology agreeOn(std::span<const RankFacts> ranks, SharedGpu sharedGpu = SharedGpu::Refuse);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the tuner may rely on without talking to other ranks.
//
// A tuner plugin cannot communicate, but NVML shows every GPU of the node to every process (it ignores
// CUDA_VISIBLE_DEVICES), so facts taken over all of the node's GPUs are the same on every rank of a
// single-node communicator: the tuner can decide from them and all ranks decide alike. They are a
// conservative bound for a communicator that uses only some of the GPUs.
#include <string>

#include "core/capability.h"
#include "core/link_class.h"
#include "topology/model.h"

namespace symmem {

struct NodeFacts {
  int gpuCount = 0;
  ComputeCapability minCapability;           // lowest over the GPUs; unknown (major 0) if any GPU's is unknown
  bool capabilitiesEqual = false;            // every GPU's capability known and the same
  LinkClass worstLink = LinkClass::Unknown;  // worst pair; Unknown with fewer than two GPUs
  bool allPairsP2p = false;                  // every ordered pair has P2P read and write OK
  std::string source;                        // where the topology came from (Topology::source())
};

NodeFacts nodeFactsOf(const Topology& topo);

}  // namespace symmem

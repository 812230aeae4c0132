// SPDX-License-Identifier: Apache-2.0
#include "plugin/process/node_discovery.h"

namespace symmem {

NodeSummary summarizeNodeFacts(const NodeFacts& node) {
  NodeSummary s;
  s.gpuCount = node.gpuCount;
  s.cc = node.minCapability;
  s.mixedCapabilities = node.gpuCount > 0 && !node.capabilitiesEqual;
  s.link = node.worstLink;
  s.allPairsP2p = node.allPairsP2p;
  s.description = std::to_string(node.gpuCount) + " GPU(s)";
  if (node.minCapability.known())
    s.description += ", capability " + node.minCapability.str() + (s.mixedCapabilities ? " (lowest; mixed)" : "");
  s.description += ", worst link " + std::string(linkClassName(node.worstLink));
  s.description += std::string(", P2P ") + (node.allPairsP2p ? "all pairs" : "not all pairs / unknown");
  if (!node.source.empty()) s.description += " [" + node.source + "]";
  return s;
}

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include "topology/node_facts.h"

#include <algorithm>

#include "topology/classify.h"
#include "topology/discover.h"

namespace symmem {

NodeFacts nodeFactsOf(const Topology& topo) {
  NodeFacts f;
  f.gpuCount = topo.gpuCount();
  f.source = topo.source();
  bool allKnown = f.gpuCount > 0;
  bool allEqual = true;
  for (const auto& g : topo.gpus()) {
    if (!g.capability.known()) allKnown = false;
    if (g.capability != topo.gpu(0).capability) allEqual = false;
  }
  if (allKnown) {
    f.minCapability = std::min_element(topo.gpus().begin(), topo.gpus().end(), [](const auto& a, const auto& b) {
                        return a.capability < b.capability;
                      })->capability;
    f.capabilitiesEqual = allEqual;
  }
  f.worstLink = linkClassOfAll(topo);
  f.allPairsP2p = p2pOfAll(topo) == Support::Yes;
  return f;
}

}  // namespace symmem

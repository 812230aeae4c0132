// SPDX-License-Identifier: Apache-2.0
#pragma once
// The machine symmem-info describes: a topology file, the detected node, or the bundled default.
#include <string>

#include "core/capability.h"
#include "core/link_class.h"
#include "core/settings.h"
#include "topology/model.h"

namespace symmem {

struct MachineView {
  std::string text;  // printed as is: where the facts come from, the classified topology
  int gpuCount = 0;
  ComputeCapability cc;
  LinkClass link = LinkClass::Unknown;
  bool allPairsP2p = false;
  bool failed = false;  // the topology file could not be read (text says why)
  Topology topology;    // the machine described (installed tables are keyed by it)
};

// topoFile empty: the detected node, or the bundled default when it has no GPU (or when
// bundledDefault asks for it whatever the node has).
MachineView describeMachine(const std::string& topoFile, const Settings& settings, bool bundledDefault = false);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include "tools/info/topology.h"

#include <sstream>
#include <vector>

#include "plugin/process/process.h"
#include "plugin/process/process_context.h"
#include "symmem/default_topology.h"
#include "topology/classify.h"
#include "topology/describe.h"
#include "topology/discover.h"
#include "topology/topology_file.h"

namespace symmem {

namespace {

std::vector<std::string> splitCommas(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ','))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

// Facts a decision needs from a topology; what the topology does not say is assumed and labelled.
MachineView viewOf(const Topology& topo, const std::string& heading) {
  MachineView view;
  view.topology = topo;
  view.text = heading + describeTopology(topo);
  view.gpuCount = topo.gpuCount();
  view.link = linkClassOfAll(topo);
  ComputeCapability lowest;
  bool known = topo.gpuCount() > 0;
  for (const GpuInfo& g : topo.gpus()) {
    known &= g.capability.known();
    if (g.capability.known() && (!lowest.known() || g.capability < lowest)) lowest = g.capability;
  }
  if (known) {
    view.cc = lowest;
  } else {
    view.cc = {12, 0};
    view.text += "compute capability: not in this topology; assuming 12.0 (pass --cc or set SYMMEM_CC)\n";
  }
  switch (p2pOfAll(topo)) {
    case Support::Yes:
      view.allPairsP2p = true;
      break;
    case Support::No:
      view.allPairsP2p = false;
      break;
    case Support::Unknown:
      view.allPairsP2p = true;
      view.text +=
          "P2P: not in this topology; assumed to work (add an `nvidia-smi topo -p2p rw` capture: "
          "--topo topo.txt,p2p-rw.txt)\n";
      break;
  }
  return view;
}

}  // namespace

MachineView describeMachine(const std::string& topoFile, const Settings& settings, bool bundledDefault) {
  if (!topoFile.empty()) {
    const std::vector<std::string> files = splitCommas(topoFile);
    Expected<Topology> loaded = loadTopologyFiles(files);
    if (!loaded) {
      MachineView bad;
      bad.text = "topology: " + loaded.error() + "\n";
      bad.failed = true;
      return bad;
    }
    return viewOf(loaded.value(), "topology from " + topoFile + ":\n");
  }
  if (!bundledDefault) {
    const Topology& here = symmem::Process::get().topology();
    if (here.gpuCount() > 0) return viewOf(here, "this machine:\n");
  }

  // No GPU here: the bundled default, an 8x RTX PRO 6000 Blackwell Server Edition box (capability
  // 12.0, PCIe Gen5, two sockets with two Broadcom switches each).
  Expected<Topology> bundled = parseTopoMatrix(kDefaultTopologyText, "bundled default");
  if (!bundled) {
    MachineView bad;
    bad.text = "bundled default topology: " + bundled.error() + "\n";
    bad.failed = true;
    return bad;
  }
  Topology topo = bundled.value();
  // What `topo -m` cannot say, known for that machine: its GPUs and that P2P works on it.
  for (int i = 0; i < topo.gpuCount(); ++i) {
    topo.gpu(i).name = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
    topo.gpu(i).capability = {12, 0};
    for (int j = 0; j < topo.gpuCount(); ++j)
      if (i != j) topo.setP2p(i, j, Support::Yes, Support::Yes);
  }
  topo.dropNotesStartingWith("p2p unknown");
  topo.dropNotesStartingWith("compute capability unknown");
  MachineView view = viewOf(topo, std::string(bundledDefault ? "--default-machine" : "no GPU detected") +
                                      ": the bundled default machine, 8x RTX PRO 6000 Blackwell Server Edition "
                                      "(capability 12.0), PCIe Gen5, two sockets:\n");
  return view;
}

}  // namespace symmem

#include "tools/info_topology.h"

#include "plugin/process_context.h"

namespace symmem {

MachineView describeMachine(const std::string& topoFile, const Settings& settings) {
  MachineView view;
  NodeSummary node = discoverNodeFacts(settings);
  if (node.gpuCount > 0) {
    view.text = "machine: " + node.description + "\n";
    view.gpuCount = node.gpuCount;
    view.cc = node.cc;
    view.link = node.link;
    view.allPairsP2p = node.allPairsP2p;
    return view;
  }
  view.text =
      "machine: no GPU detected; showing the bundled default: 8x RTX PRO 6000 Blackwell Server Edition\n"
      "         (capability 12.0), PCIe Gen5, two sockets (worst pair crosses the socket), P2P assumed\n";
  view.gpuCount = 8;
  view.cc = {12, 0};
  view.link = LinkClass::PcieCrossSocket;
  view.allPairsP2p = true;
  return view;
}

}  // namespace symmem

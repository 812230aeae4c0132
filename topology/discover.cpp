// SPDX-License-Identifier: Apache-2.0
#include "topology/discover.h"

#include <algorithm>
#include <exception>
#include <string>

#include "core/log.h"
#include "topology/classify.h"
#include "topology/pci_bus_id.h"
#include "topology/topology_file.h"

namespace symmem {

namespace {

// NVLink paths from each GPU's link ends. A link whose far end is another GPU of this node joins
// that pair directly; any other far end is a switch. GPUs on switches form one fabric (NVML reports
// no trunks between switches, and NCCL treats an NVSwitch system the same way).
void addNvlinks(NvmlSource& nvml, Topology& topo) {
  const int n = topo.gpuCount();
  std::vector<std::vector<int>> direct(n, std::vector<int>(n, 0));
  std::vector<int> toSwitches(n, 0);
  bool anyUnknown = false;
  for (int g = 0; g < n; ++g) {
    auto remotes = nvml.nvlinkRemotes(static_cast<unsigned>(g));
    if (!remotes) {
      anyUnknown = true;
      continue;
    }
    for (const auto& remote : *remotes) {
      const int peer = topo.indexOfBusId(remote);
      if (peer == g) continue;
      if (peer >= 0)
        ++direct[g][peer];
      else
        ++toSwitches[g];
    }
  }
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      int links = std::max(direct[a][b], direct[b][a]);
      if (toSwitches[a] > 0 && toSwitches[b] > 0) links += std::min(toSwitches[a], toSwitches[b]);
      if (links > 0) topo.setPath(a, b, PathKind::NvLink, links);
    }
  if (anyUnknown) topo.addNote("nvlink unknown for some GPUs: NVML could not report their links");
}

void addPlacement(PlacementSource& placement, Topology& topo) {
  if (const auto reason = placement.unavailableReason(); !reason.empty()) {
    topo.addNote("numa unknown: " + reason);
    return;
  }
  for (int g = 0; g < topo.gpuCount(); ++g) {
    auto& gpu = topo.gpu(g);
    auto p = gpu.pciBusId.empty() ? std::nullopt : placement.placementOf(gpu.pciBusId);
    if (p) {
      gpu.numaNode = p->numaNode;
      gpu.cpuAffinity = p->cpuAffinity;
    }
    if (!gpu.numaNode) topo.addNote("numa unknown for GPU" + std::to_string(g) + ": hwloc did not place it");
  }
}

}  // namespace

Topology discoverTopology(NvmlSource& nvml, PlacementSource& placement) {
  if (const auto reason = nvml.unavailableReason(); !reason.empty()) {
    Topology empty;
    empty.setSource("nvml");
    empty.addNote("no GPUs discovered: " + reason);
    return empty;
  }
  const auto count = nvml.deviceCount();
  if (!count) {
    Topology empty;
    empty.setSource("nvml");
    empty.addNote("no GPUs discovered: nvmlDeviceGetCount_v2 failed");
    return empty;
  }

  std::vector<GpuInfo> gpus(*count);
  std::vector<std::string> notes;
  for (unsigned i = 0; i < *count; ++i) {
    auto& g = gpus[i];
    g.index = static_cast<int>(i);
    auto d = nvml.device(i);
    if (!d) {
      notes.push_back("GPU" + std::to_string(i) + ": NVML gave no PCI information");
      continue;
    }
    g.pciBusId = canonicalPciBusId(d->busId).value_or("");
    if (g.pciBusId.empty()) notes.push_back("GPU" + std::to_string(i) + ": unreadable PCI bus id '" + d->busId + "'");
    g.name = d->name;
    if (d->capability)
      g.capability = *d->capability;
    else
      notes.push_back("compute capability unknown for GPU" + std::to_string(i));
  }

  Topology topo(std::move(gpus));
  topo.setSource("nvml");
  for (auto& note : notes) topo.addNote(std::move(note));

  const int n = topo.gpuCount();
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      auto level = nvml.commonAncestor(static_cast<unsigned>(a), static_cast<unsigned>(b));
      if (level) topo.setPath(a, b, pathFromNvmlLevel(*level));
      if (!level || pathFromNvmlLevel(*level) == PathKind::Unknown)
        topo.addNote("path unknown for GPU" + std::to_string(a) + "-GPU" + std::to_string(b));
    }
  addNvlinks(nvml, topo);

  bool p2pGap = false;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      auto status = [&](int caps) {
        auto s = nvml.p2pStatus(static_cast<unsigned>(a), static_cast<unsigned>(b), caps);
        return s ? supportFromNvmlP2pStatus(*s) : Support::Unknown;
      };
      const Support read = status(nvml::kP2pCapsRead);
      const Support write = status(nvml::kP2pCapsWrite);
      p2pGap |= read == Support::Unknown || write == Support::Unknown;
      topo.setP2p(a, b, read, write);
    }
  if (p2pGap) topo.addNote("p2p unknown for some pairs: NVML did not report their P2P status");

  if (n > 0) {
    addPlacement(placement, topo);
    topo.setSource("nvml+hwloc");
  }
  return topo;
}

Topology topologyForProcess(std::string_view setting, const std::function<Topology()>& discover) {
  if (setting.empty()) return discover();
  std::vector<std::string> paths;
  size_t start = 0;
  while (start <= setting.size()) {
    const size_t comma = std::min(setting.find(',', start), setting.size());
    if (comma > start) paths.emplace_back(setting.substr(start, comma - start));
    start = comma + 1;
  }
  // Inside the application: hwloc XML is refused (HwlocXmlPolicy), everything else is parsed by own code.
  auto loaded = loadTopologyFiles(paths, HwlocXmlPolicy::Refuse);
  if (!loaded) {
    SYMMEM_WARN("SYMMEM_TOPO_FILE: %s; the topology is treated as unknown and every collective stays on NCCL",
                loaded.error().c_str());
    Topology unknown;
    unknown.setSource("SYMMEM_TOPO_FILE");
    unknown.addNote("topology unknown: " + loaded.error());
    return unknown;
  }
  Topology topo = std::move(loaded).value();
  SYMMEM_INFO(kLogInit, "topology from SYMMEM_TOPO_FILE=%.*s: %d GPUs, link class %s", static_cast<int>(setting.size()),
              setting.data(), topo.gpuCount(), std::string(linkClassName(linkClassOfAll(topo))).c_str());
  return topo;
}

Topology discoverThisNode(std::string_view topoFileSetting) {
  try {
    return topologyForProcess(topoFileSetting, [] {
      auto nvml = openNvmlLibrary();
      auto placement = openHwlocPlacement();
      return discoverTopology(*nvml, *placement);
    });
  } catch (const std::exception& e) {
    // Out of memory or a bug: never take the application down over topology.
    Topology unknown;
    unknown.addNote(std::string("topology unknown: discovery failed: ") + e.what());
    return unknown;
  }
}

}  // namespace symmem

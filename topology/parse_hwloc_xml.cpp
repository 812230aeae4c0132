// SPDX-License-Identifier: Apache-2.0
// hwloc XML export -> Topology, read through hwloc itself so that every XML version hwloc knows is
// understood the way hwloc understands it.
//
// Pairs come from the PCI tree, mirroring what nvidia-smi prints:
//   common ancestor is a PCI-PCI bridge, each GPU at most one bridge below it -> PIX (one switch);
//   common ancestor is a PCI-PCI bridge, deeper                                -> PXB (cascaded switches);
//   common ancestor is a host bridge                                           -> PHB;
//   different host bridges, attached under one NUMA node set                   -> NODE;
//   otherwise                                                                  -> SYS.
// NVLink comes from the "NVLinkBandwidth" distances (hwloc's NVML backend): a pair is NvLink when the
// GPUs are joined directly or both attach to NVSwitches (hwloc lists switches as PCI devices in the
// matrix).
#include "topology/topology_file.h"

#ifdef SYMMEM_HAVE_HWLOC

#include <hwloc.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>

#include "topology/hwloc_library.h"
#include "topology/hwloc_placement.h"
#include "topology/pci_bus_id.h"

namespace symmem {

namespace {

// hwloc's NVLinkBandwidth is links x per-link rate in MB/s; NVLink 2, 3 and 4 report 25000 per link
// (NVLink 1: 20000, which rounds to the same count for the usual 4 links).
constexpr uint64_t kNvlinkMBps = 25000;

int nvlinksFromBandwidth(uint64_t mbps) { return static_cast<int>((mbps + kNvlinkMBps / 2) / kNvlinkMBps); }

bool isNvidiaGpu(hwloc_obj_t obj) {
  if (obj->type != HWLOC_OBJ_PCI_DEVICE) return false;
  const auto& pci = obj->attr->pcidev;
  // Class 0x03xx: display controllers (VGA 0x0300, 3D 0x0302). NVSwitches are 0x0680.
  return pci.vendor_id == 0x10de && (pci.class_id >> 8) == 0x03;
}

std::string busIdOf(hwloc_obj_t obj) {
  const auto& pci = obj->attr->pcidev;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", pci.domain, pci.bus, pci.dev, pci.func);
  return buf;
}

// The OS device hwloc's NVML/CUDA backends hang under a GPU, if any.
hwloc_obj_t gpuOsDevice(hwloc_obj_t pci, const char* prefix) {
  for (hwloc_obj_t child = pci->io_first_child; child; child = child->next_sibling)
    if (child->type == HWLOC_OBJ_OS_DEVICE && child->name && std::string_view(child->name).starts_with(prefix))
      return child;
  return nullptr;
}

std::vector<hwloc_obj_t> ancestors(hwloc_obj_t obj) {
  std::vector<hwloc_obj_t> chain;
  for (hwloc_obj_t p = obj->parent; p; p = p->parent) chain.push_back(p);
  return chain;
}

int bridgesBetween(hwloc_obj_t obj, hwloc_obj_t ancestor) {
  int count = 0;
  for (hwloc_obj_t p = obj->parent; p && p != ancestor; p = p->parent)
    if (p->type == HWLOC_OBJ_BRIDGE) ++count;
  return count;
}

PathKind pciPath(hwloc_topology_t topo, hwloc_obj_t a, hwloc_obj_t b) {
  const auto chainA = ancestors(a);
  hwloc_obj_t common = nullptr;
  for (hwloc_obj_t p = b->parent; p && !common; p = p->parent)
    if (std::find(chainA.begin(), chainA.end(), p) != chainA.end()) common = p;
  if (!common) return PathKind::Unknown;
  if (common->type == HWLOC_OBJ_BRIDGE) {
    if (common->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) return PathKind::Phb;
    return std::max(bridgesBetween(a, common), bridgesBetween(b, common)) <= 1 ? PathKind::Pix : PathKind::Pxb;
  }
  if (common->type == HWLOC_OBJ_PCI_DEVICE || common->type == HWLOC_OBJ_OS_DEVICE) return PathKind::Unknown;
  // Different host bridges: same NUMA node set -> NODE, else SYS.
  hwloc_obj_t homeA = hwlocNonIoAncestor(a);
  hwloc_obj_t homeB = hwlocNonIoAncestor(b);
  if (homeA && homeB && homeA->nodeset && homeB->nodeset &&
      hwlocLibrary().bitmapIsEqual(homeA->nodeset, homeB->nodeset))
    return PathKind::Node;
  return PathKind::Sys;
}

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwlocLibrary().topologyDestroy(t); }
};

// Adds NVLink paths from the NVLinkBandwidth matrix. Returns false when the export has none.
bool addNvlinks(hwloc_topology_t htopo, const std::vector<hwloc_obj_t>& gpuObjs, Topology& topo) {
  unsigned nr = 1;
  hwloc_distances_s* dist = nullptr;
  if (hwlocLibrary().distancesGetByName(htopo, "NVLinkBandwidth", &nr, &dist, 0) != 0 || nr == 0 || !dist) return false;
  const unsigned n = dist->nbobjs;
  // Matrix slot -> our GPU index (-1: a switch or something else that forwards NVLink traffic).
  std::vector<int> gpuAt(n, -1);
  for (unsigned i = 0; i < n; ++i) {
    hwloc_obj_t o = dist->objs[i];
    if (o && o->type == HWLOC_OBJ_OS_DEVICE) o = o->parent;
    for (size_t g = 0; g < gpuObjs.size(); ++g)
      if (o == gpuObjs[g]) gpuAt[i] = static_cast<int>(g);
  }
  auto bw = [&](unsigned i, unsigned j) { return std::max(dist->values[i * n + j], dist->values[j * n + i]); };
  // Bandwidth from each GPU into the switch fabric.
  std::vector<uint64_t> toSwitches(gpuObjs.size(), 0);
  for (unsigned i = 0; i < n; ++i)
    for (unsigned j = 0; j < n; ++j)
      if (gpuAt[i] >= 0 && gpuAt[j] < 0) toSwitches[gpuAt[i]] += bw(i, j);
  // GPUs on NVSwitches form one fabric. NVML, and so hwloc, reports only GPU-side links, never the
  // trunks between switches (the DGX-2 export shows each baseboard's 8 GPUs on its own 6 switches),
  // so like NCCL we treat every switch-attached GPU as reaching every other one.
  for (size_t a = 0; a < gpuObjs.size(); ++a)
    for (size_t b = a + 1; b < gpuObjs.size(); ++b)
      if (toSwitches[a] > 0 && toSwitches[b] > 0)
        topo.setPath(static_cast<int>(a), static_cast<int>(b), PathKind::NvLink,
                     nvlinksFromBandwidth(std::min(toSwitches[a], toSwitches[b])));
  // Direct GPU-GPU links (bridges, switchless boards) add to whatever the fabric gives.
  for (unsigned i = 0; i < n; ++i)
    for (unsigned j = 0; j < n; ++j) {
      if (gpuAt[i] < 0 || gpuAt[j] <= gpuAt[i] || bw(i, j) == 0) continue;
      const auto& current = topo.link(gpuAt[i], gpuAt[j]);
      const int base = current.path == PathKind::NvLink ? current.nvlinks : 0;
      topo.setPath(gpuAt[i], gpuAt[j], PathKind::NvLink, base + nvlinksFromBandwidth(bw(i, j)));
    }
  hwlocLibrary().distancesRelease(htopo, dist);
  return true;
}

using TopologyHandle = std::unique_ptr<hwloc_topology, TopologyDeleter>;

TopologyHandle loadXml(const std::string& buffer) {
  hwloc_topology_t raw = nullptr;
  if (!hwlocLibrary().loaded() || hwlocLibrary().topologyInit(&raw) != 0) return nullptr;
  TopologyHandle handle(raw);
  // Keep every PCI device and bridge: the bridge tree is what tells switches from host bridges.
  hwlocLibrary().topologySetIoTypesFilter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);
  // hwloc wants a NUL-terminated buffer, with the size counting the NUL.
  if (hwlocLibrary().topologySetXmlBuffer(raw, buffer.c_str(), static_cast<int>(buffer.size() + 1)) != 0 ||
      hwlocLibrary().topologyLoad(raw) != 0)
    return nullptr;
  return handle;
}

// hwloc 2.x refuses `<topology version="3.0">`, which development builds of hwloc 3 write (the DGX-2
// export in tests/data is one). Those exports use only elements 2.x knows, so the root's version is
// rewritten to 2.0 and the load tried again. Returns an empty string when there is no such root.
std::string asVersion2(std::string_view text) {
  static constexpr std::string_view kRoot = "<topology version=\"";
  const auto at = text.find(kRoot);
  if (at == std::string_view::npos) return {};
  const auto versionAt = at + kRoot.size();
  const auto end = text.find('"', versionAt);
  if (end == std::string_view::npos || text.substr(versionAt, end - versionAt) < "3") return {};
  std::string out(text.substr(0, versionAt));
  out += "2.0";
  out += text.substr(end);
  return out;
}

}  // namespace

Expected<Topology> parseHwlocXml(std::string_view text, std::string_view file) {
  using Result = Expected<Topology>;
  const std::string fileName(file);
  if (text.size() + 1 > static_cast<size_t>(INT32_MAX))
    return Result::failure(fileName + ": too large for hwloc's XML reader");
  if (!hwlocLibrary().loaded())
    return Result::failure(fileName + ": reading hwloc XML needs hwloc at run time (" + hwlocLibrary().unavailable +
                           ")");
  TopologyHandle htopo = loadXml(std::string(text));
  bool downgraded = false;
  if (!htopo) {
    if (const std::string v2 = asVersion2(text); !v2.empty()) {
      htopo = loadXml(v2);
      downgraded = htopo != nullptr;
    }
  }
  if (!htopo)
    return Result::failure(fileName +
                           ": hwloc could not load this XML (malformed, truncated, or a version this hwloc " +
                           std::string(HWLOC_VERSION) + " does not read)");
  hwloc_topology_t raw = htopo.get();

  std::vector<hwloc_obj_t> gpuObjs;
  for (hwloc_obj_t pci = hwlocNextPciDevice(hwlocLibrary(), raw, nullptr); pci;
       pci = hwlocNextPciDevice(hwlocLibrary(), raw, pci))
    if (isNvidiaGpu(pci)) gpuObjs.push_back(pci);
  if (gpuObjs.empty())
    return Result::failure(fileName +
                           ": the hwloc export lists no NVIDIA GPU (was it exported with I/O devices, "
                           "`lstopo --whole-io topo.xml`?)");

  // Order GPUs as NVML numbers them when the export has NVML OS devices, else by PCI bus id (which
  // is NVML's order too).
  auto nvmlIndex = [](hwloc_obj_t pci) {
    hwloc_obj_t os = gpuOsDevice(pci, "nvml");
    return os ? std::atoi(os->name + 4) : -1;
  };
  std::stable_sort(gpuObjs.begin(), gpuObjs.end(), [&](hwloc_obj_t x, hwloc_obj_t y) {
    const int ix = nvmlIndex(x), iy = nvmlIndex(y);
    if (ix >= 0 && iy >= 0 && ix != iy) return ix < iy;
    return busIdOf(x) < busIdOf(y);
  });

  std::vector<GpuInfo> gpus;
  bool allNuma = true;
  for (size_t g = 0; g < gpuObjs.size(); ++g) {
    GpuInfo info;
    info.index = static_cast<int>(g);
    info.pciBusId = busIdOf(gpuObjs[g]);
    for (const char* prefix : {"nvml", "cuda", "opencl"}) {
      hwloc_obj_t os = gpuOsDevice(gpuObjs[g], prefix);
      const char* model = os ? hwlocInfoByName(os, "GPUModel") : nullptr;
      if (model) {
        info.name = model;
        break;
      }
    }
    const auto placement = placementOfHwlocObject(raw, gpuObjs[g]);
    info.numaNode = placement.numaNode;
    info.cpuAffinity = placement.cpuAffinity;
    if (!info.numaNode) allNuma = false;
    gpus.push_back(std::move(info));
  }

  Topology topo(std::move(gpus));
  topo.setSource(fileName);
  for (size_t a = 0; a < gpuObjs.size(); ++a)
    for (size_t b = a + 1; b < gpuObjs.size(); ++b)
      topo.setPath(static_cast<int>(a), static_cast<int>(b), pciPath(raw, gpuObjs[a], gpuObjs[b]));
  if (!addNvlinks(raw, gpuObjs, topo))
    topo.addNote("nvlink unknown: the export has no NVLinkBandwidth distances (exported without NVML)");
  if (downgraded)
    topo.addNote("read as hwloc XML version 2.0: this hwloc (" + std::string(HWLOC_VERSION) +
                 ") does not accept the file's newer version number");
  topo.addNote("p2p unknown: hwloc exports do not record P2P support");
  topo.addNote("compute capability unknown: hwloc exports do not record it");
  if (!allNuma) topo.addNote("numa unknown for some GPUs: their PCI root is not under a single NUMA node");
  return topo;
}

}  // namespace symmem

#else  // !SYMMEM_HAVE_HWLOC

namespace symmem {

Expected<Topology> parseHwlocXml(std::string_view, std::string_view file) {
  return Expected<Topology>::failure(std::string(file) +
                                     ": hwloc XML needs hwloc, and this build of nccl-symmem has none "
                                     "(install hwloc development files and rebuild, or use `nvidia-smi topo -m` text)");
}

}  // namespace symmem

#endif

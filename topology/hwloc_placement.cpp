// SPDX-License-Identifier: Apache-2.0
#include "topology/hwloc_placement.h"

#include "topology/placement_source.h"

#ifdef SYMMEM_HAVE_HWLOC

#include "topology/hwloc_library.h"

#include <cstdio>
#include <cstdlib>

namespace symmem {

GpuPlacement placementOfHwlocObject(hwloc_topology_t /*topo*/, hwloc_obj_t ioObject) {
  GpuPlacement p;
  const HwlocLibrary& lib = hwlocLibrary();
  hwloc_obj_t home = hwlocNonIoAncestor(ioObject);
  if (!home || !lib.loaded()) return p;
  if (home->nodeset && lib.bitmapWeight(home->nodeset) == 1) p.numaNode = lib.bitmapFirst(home->nodeset);
  if (home->cpuset && !lib.bitmapIsZero(home->cpuset)) {
    char* list = nullptr;
    if (lib.bitmapListAsprintf(&list, home->cpuset) >= 0 && list) p.cpuAffinity = list;
    std::free(list);
  }
  return p;
}

namespace {

// Loads the machine's topology on first use: a process whose NVML sees no GPU never pays for it.
class HwlocPlacementSource final : public PlacementSource {
 public:
  ~HwlocPlacementSource() override {
    if (topo_) hwlocLibrary().topologyDestroy(topo_);
  }

  std::string unavailableReason() const override {
    load();
    return reason_;
  }

  std::optional<GpuPlacement> placementOf(std::string_view busId) override {
    load();
    if (!topo_) return std::nullopt;
    unsigned domain = 0, bus = 0, dev = 0, func = 0;
    const std::string id(busId);
    if (std::sscanf(id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &func) != 4) return std::nullopt;
    hwloc_obj_t obj = hwlocPciDeviceByBusId(hwlocLibrary(), topo_, domain, bus, dev, func);
    if (!obj) return std::nullopt;
    return placementOfHwlocObject(topo_, obj);
  }

 private:
  void load() const {
    if (tried_) return;
    tried_ = true;
    const HwlocLibrary& lib = hwlocLibrary();
    if (!lib.loaded()) {
      reason_ = lib.unavailable;
      return;
    }
    if (lib.topologyInit(&topo_) != 0) {
      topo_ = nullptr;
      reason_ = "hwloc_topology_init failed";
      return;
    }
    // GPUs are "important" PCI devices; bridges are not needed to find a device's NUMA node.
    lib.topologySetIoTypesFilter(topo_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    // No OS devices, and none of hwloc's GPU-vendor components: only PCI placement is read here, and
    // those components bring up CUDA, NVML and the OpenCL ICDs inside hwloc's own plugins, which are
    // unloaded with each topology and started anew with the next (resident memory grew 72 KiB per
    // tuner load on a GPU machine while the plugin was loaded and unloaded with every communicator).
    lib.topologySetTypeFilter(topo_, HWLOC_OBJ_OS_DEVICE, HWLOC_TYPE_FILTER_KEEP_NONE);
    if (lib.topologySetComponents)
      for (const char* component : {"cuda", "nvml", "opencl", "rsmi", "levelzero", "gl"})
        lib.topologySetComponents(topo_, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, component);
    if (lib.topologyLoad(topo_) != 0) {
      lib.topologyDestroy(topo_);
      topo_ = nullptr;
      reason_ = "hwloc_topology_load failed";
    }
  }

  mutable bool tried_ = false;
  mutable hwloc_topology_t topo_ = nullptr;
  mutable std::string reason_;
};

}  // namespace

std::unique_ptr<PlacementSource> openHwlocPlacement() { return std::make_unique<HwlocPlacementSource>(); }

}  // namespace symmem

#else  // !SYMMEM_HAVE_HWLOC

namespace symmem {

namespace {
class NoPlacementSource final : public PlacementSource {
 public:
  std::string unavailableReason() const override { return "this build has no hwloc"; }
  std::optional<GpuPlacement> placementOf(std::string_view) override { return std::nullopt; }
};
}  // namespace

std::unique_ptr<PlacementSource> openHwlocPlacement() { return std::make_unique<NoPlacementSource>(); }

}  // namespace symmem

#endif

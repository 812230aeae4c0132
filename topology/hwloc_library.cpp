// SPDX-License-Identifier: Apache-2.0
#include "topology/hwloc_library.h"

#ifdef SYMMEM_HAVE_HWLOC

#include <dlfcn.h>

#include <cstring>

namespace symmem {

namespace {

template <typename Fn>
bool resolve(void* handle, const char* name, Fn& out, std::string& missing) {
  out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (!out && missing.empty()) missing = name;
  return out != nullptr;
}

HwlocLibrary load() {
  HwlocLibrary lib;
  void* handle = nullptr;
  // The 2.x soname first; the unversioned name covers builds installed by hand.
  for (const char* name : {"libhwloc.so.15", "libhwloc.so"}) {
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle) break;
  }
  if (!handle) {
    lib.unavailable = "libhwloc.so.15 not found";
    return lib;
  }
  using ApiVersion = unsigned (*)();
  auto version = reinterpret_cast<ApiVersion>(dlsym(handle, "hwloc_get_api_version"));
  if (!version || (version() >> 16) != (HWLOC_API_VERSION >> 16)) {
    lib.unavailable = "the installed hwloc is not a 2.x release";
    return lib;
  }
  std::string missing;
  resolve(handle, "hwloc_topology_init", lib.topologyInit, missing);
  resolve(handle, "hwloc_topology_load", lib.topologyLoad, missing);
  resolve(handle, "hwloc_topology_destroy", lib.topologyDestroy, missing);
  resolve(handle, "hwloc_topology_set_io_types_filter", lib.topologySetIoTypesFilter, missing);
  resolve(handle, "hwloc_topology_set_type_filter", lib.topologySetTypeFilter, missing);
  resolve(handle, "hwloc_topology_set_xmlbuffer", lib.topologySetXmlBuffer, missing);
  lib.topologySetComponents =
      reinterpret_cast<decltype(lib.topologySetComponents)>(dlsym(handle, "hwloc_topology_set_components"));
  resolve(handle, "hwloc_get_type_depth", lib.getTypeDepth, missing);
  resolve(handle, "hwloc_get_obj_by_depth", lib.getObjByDepth, missing);
  resolve(handle, "hwloc_bitmap_weight", lib.bitmapWeight, missing);
  resolve(handle, "hwloc_bitmap_first", lib.bitmapFirst, missing);
  resolve(handle, "hwloc_bitmap_iszero", lib.bitmapIsZero, missing);
  resolve(handle, "hwloc_bitmap_isequal", lib.bitmapIsEqual, missing);
  resolve(handle, "hwloc_bitmap_list_asprintf", lib.bitmapListAsprintf, missing);
  resolve(handle, "hwloc_distances_get_by_name", lib.distancesGetByName, missing);
  resolve(handle, "hwloc_distances_release", lib.distancesRelease, missing);
  if (!missing.empty()) lib.unavailable = "the installed hwloc lacks " + missing;
  // The handle stays open: topologies made through it live as long as the process may use them.
  return lib;
}

}  // namespace

const HwlocLibrary& hwlocLibrary() {
  static const HwlocLibrary lib = load();
  return lib;
}

hwloc_obj_t hwlocNextPciDevice(const HwlocLibrary& lib, hwloc_topology_t topo, hwloc_obj_t prev) {
  if (prev) return prev->next_cousin;
  const int depth = lib.getTypeDepth(topo, HWLOC_OBJ_PCI_DEVICE);
  return lib.getObjByDepth(topo, depth, 0);
}

hwloc_obj_t hwlocNonIoAncestor(hwloc_obj_t obj) {
  while (obj && !obj->cpuset) obj = obj->parent;
  return obj;
}

hwloc_obj_t hwlocPciDeviceByBusId(const HwlocLibrary& lib, hwloc_topology_t topo, unsigned domain, unsigned bus,
                                  unsigned dev, unsigned func) {
  for (hwloc_obj_t obj = hwlocNextPciDevice(lib, topo, nullptr); obj; obj = hwlocNextPciDevice(lib, topo, obj)) {
    const auto& pci = obj->attr->pcidev;
    if (pci.domain == domain && pci.bus == bus && pci.dev == dev && pci.func == func) return obj;
  }
  return nullptr;
}

const char* hwlocInfoByName(hwloc_obj_t obj, const char* name) {
  for (unsigned i = 0; i < obj->infos_count; ++i)
    if (obj->infos[i].name && std::strcmp(obj->infos[i].name, name) == 0) return obj->infos[i].value;
  return nullptr;
}

}  // namespace symmem

#endif  // SYMMEM_HAVE_HWLOC

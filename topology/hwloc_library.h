// SPDX-License-Identifier: Apache-2.0
#pragma once
// hwloc 2.x, loaded at run time with dlopen (like NVML): the plugin must load, and work from NVML
// alone, on a machine where libhwloc is not installed. hwloc.h still gives the types; its inline
// helpers are replaced by the functions below because they would bind the library at link time.
#ifdef SYMMEM_HAVE_HWLOC

#include <hwloc.h>

#include <string>

namespace symmem {

struct HwlocLibrary {
  int (*topologyInit)(hwloc_topology_t*) = nullptr;
  int (*topologyLoad)(hwloc_topology_t) = nullptr;
  void (*topologyDestroy)(hwloc_topology_t) = nullptr;
  int (*topologySetIoTypesFilter)(hwloc_topology_t, enum hwloc_type_filter_e) = nullptr;
  int (*topologySetTypeFilter)(hwloc_topology_t, hwloc_obj_type_t, enum hwloc_type_filter_e) = nullptr;
  // hwloc 2.1 and later; null before (optional).
  int (*topologySetComponents)(hwloc_topology_t, unsigned long, const char*) = nullptr;
  int (*topologySetXmlBuffer)(hwloc_topology_t, const char*, int) = nullptr;
  int (*getTypeDepth)(hwloc_topology_t, hwloc_obj_type_t) = nullptr;
  hwloc_obj_t (*getObjByDepth)(hwloc_topology_t, int, unsigned) = nullptr;
  int (*bitmapWeight)(hwloc_const_bitmap_t) = nullptr;
  int (*bitmapFirst)(hwloc_const_bitmap_t) = nullptr;
  int (*bitmapIsZero)(hwloc_const_bitmap_t) = nullptr;
  int (*bitmapIsEqual)(hwloc_const_bitmap_t, hwloc_const_bitmap_t) = nullptr;
  int (*bitmapListAsprintf)(char**, hwloc_const_bitmap_t) = nullptr;
  int (*distancesGetByName)(hwloc_topology_t, const char*, unsigned*, struct hwloc_distances_s**,
                            unsigned long) = nullptr;
  void (*distancesRelease)(hwloc_topology_t, struct hwloc_distances_s*) = nullptr;

  std::string unavailable;  // empty when loaded; otherwise why not ("libhwloc.so.15 not found", ...)
  bool loaded() const { return unavailable.empty(); }
};

// Loaded once per process (thread-safe). Only an hwloc with this build's major API version is used:
// hwloc's structures are stable within a major version, not across.
const HwlocLibrary& hwlocLibrary();

// hwloc's inline helpers, rewritten over the loaded library.
hwloc_obj_t hwlocNextPciDevice(const HwlocLibrary& lib, hwloc_topology_t topo, hwloc_obj_t prev);
hwloc_obj_t hwlocNonIoAncestor(hwloc_obj_t obj);  // first ancestor with a CPU set
hwloc_obj_t hwlocPciDeviceByBusId(const HwlocLibrary& lib, hwloc_topology_t topo, unsigned domain, unsigned bus,
                                  unsigned dev, unsigned func);
const char* hwlocInfoByName(hwloc_obj_t obj, const char* name);

}  // namespace symmem

#endif  // SYMMEM_HAVE_HWLOC

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The hwloc-specific half of placement_source.h, shared by the run-time source and the XML reader.
// Only for code compiled with SYMMEM_HAVE_HWLOC.
#ifdef SYMMEM_HAVE_HWLOC
#include <hwloc.h>

#include "topology/placement_source.h"

namespace symmem {

// NUMA node and CPU list of the first non-I/O ancestor of an I/O object (where its host bridge hangs).
GpuPlacement placementOfHwlocObject(hwloc_topology_t topo, hwloc_obj_t ioObject);

}  // namespace symmem
#endif

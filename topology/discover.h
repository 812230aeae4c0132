#pragma once
// The topology of the node this process runs on, learned once per process.
//
// Order of sources: SYMMEM_TOPO_FILE when set (like NCCL_TOPO_FILE: for machines whose driver
// reports something unhelpful, and for planning), otherwise NVML for GPUs, paths, NVLinks and P2P,
// and hwloc for the NUMA node of each GPU. Whatever a source cannot say stays unknown and is listed
// in Topology::notes(); nothing here throws or aborts. A process without GPUs gets an empty model.
#include <functional>
#include <string_view>

#include "topology/model.h"
#include "topology/nvml_source.h"
#include "topology/placement_source.h"

namespace symmem {

// The process's topology, computed on first call (thread-safe) and kept for the life of the process.
const Topology& processTopology();

// ---- The pieces processTopology() is made of, for tests and tools ----

// Builds the model from NVML answers plus placement answers. Pure apart from the sources' calls.
Topology discoverTopology(NvmlSource& nvml, PlacementSource& placement);

// SYMMEM_TOPO_FILE handling: `topoFileSetting` is the setting's value, one path or several separated
// by commas (a `topo -m` capture plus its `topo -p2p` matrices). Empty: returns discover(). A file
// that cannot be used gives one WARN naming file, line and problem, and a model with no GPUs whose
// notes say why (the decision then stays on NCCL); it does not fall back to discovery, because the
// user asked for the file.
Topology topologyForProcess(std::string_view topoFileSetting, const std::function<Topology()>& discover);

}  // namespace symmem

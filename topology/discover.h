// SPDX-License-Identifier: Apache-2.0
#pragma once
// The topology of the node this process runs on (the plugin learns it once per process, in
// plugin/process/process.h).
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

// This node's topology: SYMMEM_TOPO_FILE's value `topoFileSetting` when set, else NVML + hwloc.
// Never throws.
Topology discoverThisNode(std::string_view topoFileSetting);

// ---- The pieces discoverThisNode() is made of, for tests and tools ----

// Builds the model from NVML answers plus placement answers. Pure apart from the sources' calls.
Topology discoverTopology(NvmlSource& nvml, PlacementSource& placement);

// SYMMEM_TOPO_FILE handling: `topoFileSetting` is the setting's value, one path or several separated
// by commas (a `topo -m` capture plus its `topo -p2p` matrices; hwloc XML is refused here, because this
// runs inside the application: HwlocXmlPolicy::Refuse). Empty: returns discover(). A file
// that cannot be used gives one WARN naming file, line and problem, and a model with no GPUs whose
// notes say why (the decision then stays on NCCL); it does not fall back to discovery, because the
// user asked for the file.
Topology topologyForProcess(std::string_view topoFileSetting, const std::function<Topology()>& discover);

}  // namespace symmem

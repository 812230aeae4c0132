#pragma once
// The bridge from the topology module to the node-wide facts the tuner and tools use.
#include <string>

#include "plugin/process_context.h"

namespace symmem {

// From `topoFile` if not empty, else from run-time discovery (NVML, hwloc). Never fails: what
// cannot be learned is left unknown and said in `description`.
NodeSummary nodeFactsFromTopology(const std::string& topoFile);

}  // namespace symmem

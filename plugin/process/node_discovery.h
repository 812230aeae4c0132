// SPDX-License-Identifier: Apache-2.0
#pragma once
// The bridge from the topology module to the node-wide facts the tuner and tools use.
#include "plugin/process/process_context.h"
#include "topology/node_facts.h"

namespace symmem {

// The summary of `node`; what is unknown stays unknown and is said in `description`.
NodeSummary summarizeNodeFacts(const NodeFacts& node);

}  // namespace symmem

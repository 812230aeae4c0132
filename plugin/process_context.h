#pragma once
// What a process works out once and every communicator then shares: the policy from settings,
// the node's GPUs and links, and the decision table.
#include <string>

#include "core/decision.h"
#include "core/decision_table.h"
#include "core/settings.h"

namespace symmem {

// Node-wide facts, the same on every rank of a single-node communicator (NVML sees every GPU of
// the node whatever CUDA_VISIBLE_DEVICES says), so tuner decisions built on them agree across ranks.
struct NodeSummary {
  ComputeCapability cc;                 // lowest capability on the node; {0,0} if unknown
  bool mixedCapabilities = false;
  LinkClass link = LinkClass::Unknown;  // worst link between any two GPUs of the node
  bool allPairsP2p = false;
  int gpuCount = 0;
  std::string description;              // one line for logs and symmem-info
};

struct ProcessContext {
  Policy policy;
  NodeSummary node;
  const DecisionTable* table = nullptr;
};

Policy policyFrom(const Settings& settings);

// Node facts from discovery (or SYMMEM_TOPO_FILE), with SYMMEM_CC applied on top.
NodeSummary discoverNodeFacts(const Settings& settings);

// Once per process, thread-safe.
const ProcessContext& processContext();

}  // namespace symmem

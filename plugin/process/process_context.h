// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a process works out once and every communicator then shares, as plain values passed down to
// the tuner, the interposer and the setup: the policy from settings, the node's GPUs and links, the
// decision table. Built by the one owner of process state (plugin/process/process.h); tests build their own.
#include <cstdint>
#include <string>

#include "core/decision.h"
#include "core/decision_table.h"
#include "core/settings.h"
#include "topology/model.h"

namespace symmem {

// Node-wide facts, the same on every rank of a single-node communicator (NVML sees every GPU of
// the node whatever CUDA_VISIBLE_DEVICES says), so tuner decisions built on them agree across ranks.
struct NodeSummary {
  ComputeCapability cc;  // lowest capability on the node; {0,0} if unknown
  bool mixedCapabilities = false;
  LinkClass link = LinkClass::Unknown;  // worst link between any two GPUs of the node
  bool allPairsP2p = false;
  int gpuCount = 0;
  std::string description;  // one line for logs and symmem-info
};

// Where a communicator's halves come from (SYMMEM_HALVES).
enum class HalvesMode : int {
  Auto,   // the topology's (topology/halves.h)
  Off,    // none: the flat kernels only
  Split,  // declared: ranks 0..n/2-1 and n/2..n-1
};
HalvesMode halvesModeFrom(const Settings& settings);

struct ProcessContext {
  Policy policy;
  NodeSummary node;
  const DecisionTable* table = nullptr;
  const Topology* topology = nullptr;    // the node, for the setup exchange's per-rank facts
  int64_t timeoutMs = 600000;            // SYMMEM_TIMEOUT_MS
  bool p2pCheck = true;                  // SYMMEM_P2P_CHECK
  bool sharedGpuTest = false;            // SYMMEM_TEST_SHARED_GPU (testing only)
  HalvesMode halves = HalvesMode::Auto;  // SYMMEM_HALVES
  // Why the node's NVIDIA driver cannot run the CUDA runtime the plugin carries ("" when it can, or
  // when no version could be read): every all-reduce then stays on NCCL (driverTooOldReason).
  std::string driverTooOld;
};

// The CUDA runtime the plugin carries (13.0) needs this NVIDIA driver branch or later on Linux (CUDA
// 13.0 release notes, "CUDA Driver"; docs/user-guide.md, "Install").
inline constexpr int kMinDriverMajor = 580;

// Why a driver of major version `driverMajor` cannot run the plugin's kernels, or "" when it can. 0 (no
// version read: no /proc/driver/nvidia/version, a CPU machine) is not judged: "".
std::string driverTooOldReason(int driverMajor);

Policy policyFrom(const Settings& settings);

// The node-wide summary of `topology`, with SYMMEM_CC from `settings` applied on top.
NodeSummary summarizeNode(const Topology& topology, const Settings& settings);

// The process's context (plugin/process/process.h builds it once).
const ProcessContext& processContext();

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// What symmem-health measures on a node, as plain values: per GPU, per ordered pair, and for all GPUs
// at once. The probe (tools/health/probe.h, on GPUs, in child processes) fills it; the rules
// (tools/health/rules.h, pure) judge it; tests judge recorded values. NaN: not measured.
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/capability.h"
#include "core/link_class.h"
#include "topology/model.h"

namespace symmem {

// The outcome of one written-and-read-back pattern check.
enum class PatternResult : int {
  NotRun,    // not attempted (an earlier step failed, or the pair has no P2P)
  Ok,        // every word came back as written
  Mismatch,  // the check ran and some word differed (detail says which and how many)
  Timeout,   // the step did not finish within its time (a hang: the child was stopped)
  Fault,     // a CUDA error or the child died (detail says which)
};

// Stable names for the CSV (tools/health/csv.h), the table and the messages.
constexpr std::string_view patternResultName(PatternResult r) {
  switch (r) {
    case PatternResult::NotRun:
      return "not-run";
    case PatternResult::Ok:
      return "ok";
    case PatternResult::Mismatch:
      return "mismatch";
    case PatternResult::Timeout:
      return "timeout";
    case PatternResult::Fault:
      return "fault";
  }
  return "not-run";
}

// The inverse of patternResultName, exact names only.
constexpr std::optional<PatternResult> parsePatternResult(std::string_view name) {
  for (PatternResult r : {PatternResult::NotRun, PatternResult::Ok, PatternResult::Mismatch, PatternResult::Timeout,
                          PatternResult::Fault}) {
    if (name == patternResultName(r)) return r;
  }
  return std::nullopt;
}

// Whether the check ran and found P2P not working (a wrong word, a hang or a fault).
constexpr bool patternFailed(PatternResult r) {
  return r == PatternResult::Mismatch || r == PatternResult::Timeout || r == PatternResult::Fault;
}

struct HealthGpu {
  int index = 0;             // NVML / nvidia-smi index
  std::string busId;         // "0000:01:00.0"; empty when unknown
  std::string name;          // CUDA's device name
  ComputeCapability cc;      // unknown when the probe did not get that far
  double hostCopyGBs = NAN;  // pinned host-to-device copy bandwidth: what this GPU's own link gives
};

// One ordered pair: GPU `a` acting on the memory of GPU `b` (a == b: loopback, one-GPU machines).
// `a` and `b` are positions in HealthMeasurements::gpus; messages and the CSV name the GPUs by their
// HealthGpu::index (the number nvidia-smi prints), which differs when --gpus picks a subset.
struct HealthPair {
  int a = 0;
  int b = 0;
  PathKind path = PathKind::Unknown;  // from the topology
  int nvlinks = 0;
  Support driverP2p = Support::Unknown;              // cudaDeviceCanAccessPeer(a, b)
  Support nvmlRead = Support::Unknown;               // the topology's P2P read status a -> b
  Support nvmlWrite = Support::Unknown;              // the topology's P2P write status a -> b
  PatternResult writeCheck = PatternResult::NotRun;  // a's kernel writes into b's memory, b reads it back
  PatternResult readCheck = PatternResult::NotRun;   // b's memory holds a pattern, a's kernel reads it
  std::string detail;                                // what went wrong, one line; empty when nothing did
  double writeLatencyUs = NAN;  // one flag written into b's memory and seen there (half a ping-pong)
  double readLatencyUs = NAN;   // one dependent load from b's memory (pointer chase)
  double writeGBs = NAN;        // a's kernel streaming stores into b's memory, nothing else running
  double readGBs = NAN;         // a's kernel streaming loads from b's memory, nothing else running
};

// Every GPU at once: each writes into (or reads from) every peer's memory, all running together,
// as a one-shot push (or pull) all-reduce loads the fabric. Per GPU, the sum over its peers.
struct HealthAllAtOnce {
  std::vector<double> writeGBsPerGpu;  // index = position in HealthMeasurements::gpus
  std::vector<double> readGBsPerGpu;
  PatternResult check = PatternResult::NotRun;  // the all-at-once writes were verified too
  std::string detail;
};

struct HealthMeasurements {
  std::vector<HealthGpu> gpus;          // the GPUs checked, in the order given
  std::vector<HealthPair> pairs;        // every ordered pair a != b (or the one loopback pair)
  HealthAllAtOnce allAtOnce;            // empty vectors when fewer than 3 GPUs or not run
  LinkClass link = LinkClass::Unknown;  // worst link among the GPUs checked (the table key's link)
  bool loopback = false;                // one GPU: its pair is (0, 0), which checks the tool, not a link
  std::string topologySource;           // "nvml+hwloc", "file ...": where path and NVML P2P came from
};

}  // namespace symmem

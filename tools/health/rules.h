// SPDX-License-Identifier: Apache-2.0
#pragma once
// symmem-health's judgement: from what the probe measured (tools/health/data.h) to the known bad
// states of GPU peer-to-peer, each with its fixes, and one exit code. Pure: no CUDA, no I/O;
// symmem-health, `symmem-health --judge FILE.csv` and the unit tests call it.
//
// Exit codes (docs/machine-check.md):
//   0  safe and useful: P2P works; findings may still suggest improvements (e.g. collapse -> pull)
//   1  not safe: P2P is reported but broken on some pair; keep the plugin off until it is fixed
//   2  (usage error: symmem-health's main)
//   3  not useful: the plugin would gain nothing here (one GPU, no pair with P2P, GPU-to-GPU
//      traffic staged through system memory, no table entry for these GPUs)
//   4  the check itself could not run (symmem-health's main; judgeHealth returns it when the
//      measurements hold no GPU or no pair)
// Unsafe wins over not useful.
//
// The thresholds, each with the published numbers it sits between, are the constants below;
// rules.cpp says per rule what it looks at, docs/machine-check.md lists the sources.
#include <string>
#include <string_view>
#include <vector>

#include "tools/health/data.h"

namespace symmem {

enum class HealthSeverity : int { Ok, Note, Slow, NotUseful, Unsafe };
std::string_view healthSeverityName(HealthSeverity s);  // "ok", "note", "slow", "not useful", "unsafe"

struct HealthFinding {
  HealthSeverity severity = HealthSeverity::Ok;
  std::string code;                // stable id, e.g. "p2p-broken" (docs/machine-check.md lists them)
  std::string message;             // one or two sentences; names GPUs "GPU0 (0000:01:00.0)", pairs "GPU0->GPU1"
  std::vector<std::string> fixes;  // commands or settings, one per line
};

struct HealthVerdict {
  std::vector<HealthFinding> findings;  // worst first; within one severity, in rule order
  int exitCode = 0;
  std::string summary;  // one line: the verdict and its exit code
};

inline constexpr int kHealthExitOk = 0;
inline constexpr int kHealthExitUnsafe = 1;
inline constexpr int kHealthExitUsage = 2;
inline constexpr int kHealthExitNotUseful = 3;
inline constexpr int kHealthExitCouldNotRun = 4;

// Staged through system memory (direct-attach pairs: PHB, NODE, SYS). A real P2P write on PCIe Gen5
// takes 0.36-0.52 us (1.27-1.36 us across sockets on the slowest box published); one that the
// driver stages through system memory about 14 us. 5 us sits between, 4x above the slowest real one.
inline constexpr double kStagedWriteLatencyUs = 5.0;
// Real P2P writes on direct-attach Gen5 boxes reach 39-56 GB/s of the x16 link's 63, the link a
// pinned host copy uses too; staged kernel writes run about an order of magnitude slower (a PCIe
// one-shot all-reduce 14x slower). A fifth of the GPU's host copy bandwidth sits between.
inline constexpr double kStagedBandwidthShare = 0.2;
// All GPUs at once. A direction "collapses" on a GPU when its summed bandwidth with every GPU
// moving data at once is below this share of what it moves to one peer alone: collapsed posted
// writes keep 5-13 % (Broadcom 2.7 of 36.8 GB/s, Microchip ~7 of ~52, b12x 2.6 of 52), healthy
// fabrics under all-to-all 38-96 % (p2pmark's dense-interconnect scores at 4 and 8 GPUs).
inline constexpr double kCollapseShare = 0.25;
// ... and the other direction "holds up" when it keeps at least this many times what the collapsed
// one keeps: collapsed writes against reads ran 8-20x apart in every report, healthy fabrics ~1x.
inline constexpr double kHoldsUpFactor = 2.0;
// A pair "much slower than its siblings": below this share of the median write bandwidth of the
// pairs with the same path (at least kMinSiblings of them). ACS redirect halves a switch pair
// (~50 instead of ~103 GB/s both ways); crossing sockets keeps 0.72-0.94 of a same-socket pair.
inline constexpr double kSlowPairShare = 0.6;
inline constexpr int kMinSiblings = 3;

HealthVerdict judgeHealth(const HealthMeasurements& m);

// The per-GPU, per-pair and all-at-once values as a table for the terminal (NaN shows as "-").
std::string healthTable(const HealthMeasurements& m);

// Every finding with its fixes, then the summary line.
std::string verdictText(const HealthVerdict& v);

}  // namespace symmem

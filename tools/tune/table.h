// SPDX-License-Identifier: Apache-2.0
#pragma once
// The table file symmem-tune writes: per measured (capability, link class, world size) its symmetric
// bands (an `entry` line when they are push limits, else `sym` lines) and its NCCL `band` lines, and
// `meta` lines saying where the numbers come from. The text is made by formatTable() and read back
// with parseTableText() before it is written, so the plugin can always load it.
#include <string>
#include <string_view>
#include <vector>

#include "core/decision.h"
#include "tools/tune/bands.h"
#include "tools/tune/crossover.h"

namespace symmem {

// What was measured for one world size and the bands chosen from it, with its table key.
struct TunedWorld {
  int nRanks = 0;
  LinkClass link = LinkClass::Unknown;
  std::vector<int> gpus;         // topology indices the ranks ran on
  std::vector<TunePath> paths;   // the paths timed, in the candidates' order
  std::vector<SizeTimes> times;  // ascending size
  TuneBands bands;               // chooseBands(times, nRanks, margin)
};

// Where and how the numbers were measured.
struct TuneProvenance {
  std::string gpuName;  // CUDA's device name
  ComputeCapability capability;
  std::string kernelDriver;    // "570.86.15" (from /proc/driver/nvidia/version); empty when unknown
  int cudaRuntimeVersion = 0;  // cudaRuntimeGetVersion: 13000
  int cudaDriverVersion = 0;   // cudaDriverGetVersion
  int ncclVersion = 0;         // ncclGetVersion: 22809
  std::string topologySource;  // "nvml", "file ..."
  int nodeGpuCount = 0;
  std::string date;  // ISO 8601, UTC
  std::string commandLine;
  std::string method;  // how it was measured, one line
};

// One entry per world with a measurement (bands.measured): its symmetric bands and NCCL bands. A world
// where nothing was measured gets none and keeps its built-in entry.
std::vector<Thresholds> tunedEntries(ComputeCapability cc, const std::vector<TunedWorld>& worlds);

std::vector<std::string> provenanceMeta(const TuneProvenance& provenance, const std::vector<TunedWorld>& worlds);

// The file text for `entries` and `meta`, checked by parsing it back (the entries, their symmetric and
// NCCL bands, and the meta lines must come back unchanged). On failure returns "" and sets *error.
std::string tunedTableText(const std::vector<Thresholds>& entries, const std::vector<std::string>& meta,
                           std::string_view fileName, std::string* error);

// A meta line holds one line of text without '#' (which starts a comment in the file).
std::string metaSafe(std::string_view text);

}  // namespace symmem

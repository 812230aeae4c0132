// SPDX-License-Identifier: Apache-2.0
#include "tools/tune/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/table_file.h"
#include "tools/common/duration_text.h"

namespace symmem {

std::string progressLine(int done, int total, double elapsedSec, int nRanks, const std::string& path, uint64_t bytes,
                         int round, int rounds) {
  std::string line = std::string("[").append(std::to_string(done + 1)) + "/" + std::to_string(total) +
                     "] ranks=" + std::to_string(nRanks) + " " + path + " " + formatBytes(bytes);
  if (rounds > 1) line += " (round " + std::to_string(round + 1) + "/" + std::to_string(rounds) + ")";
  line += ", " + durationText(elapsedSec) + " elapsed";
  if (done > 0) line += ", about " + durationText(elapsedSec / done * (total - done)) + " left";
  return line;
}

namespace {

constexpr int kCellWidth = 11;  // the widest heading, "ring/simple"

std::string cell(const std::string& text) {
  char out[32];
  std::snprintf(out, sizeof out, " %*s", kCellWidth, text.c_str());
  return out;
}

std::string cell(double us) {
  if (std::isnan(us)) return cell(std::string("-"));
  char out[32];
  std::snprintf(out, sizeof out, " %*.2f", kCellWidth, us);
  return out;
}

}  // namespace

std::string summaryTable(const TunedWorld& world, ComputeCapability cc) {
  std::string gpus;
  for (int g : world.gpus) gpus.append(gpus.empty() ? "" : ",").append(std::to_string(g));
  std::string out = "\nranks=" + std::to_string(world.nRanks) + " link=" + std::string(linkClassName(world.link)) +
                    " cc=" + cc.str() + " (GPUs " + gpus + "), median us per call under CUDA graphs\n";
  char start[32];
  std::snprintf(start, sizeof start, "%10s", "size");
  out += start;
  for (TunePath p : world.paths) out += cell(std::string(tunePathHeading(p)));
  char chosenHeading[32];
  std::snprintf(chosenHeading, sizeof chosenHeading, "  %-*s  why\n", kCellWidth, "chosen");
  out += chosenHeading;
  for (const SizeVerdict& v : world.bands.sizes) {
    const SizeTimes* t = nullptr;
    for (const SizeTimes& x : world.times)
      if (x.bytes == v.bytes) t = &x;
    std::snprintf(start, sizeof start, "%10s", formatBytes(v.bytes).c_str());
    out += start;
    for (TunePath p : world.paths) out += cell(t ? t->median(p) : NAN);
    char chosen[32];
    std::snprintf(chosen, sizeof chosen, "%-*s", kCellWidth, std::string(tunePathHeading(v.chosen)).c_str());
    out += std::string("  ") + chosen + "  " + v.why + "\n";
  }
  out += "symmetric bands: " + symBandsText(world.bands.symBands) + "\n";
  out += "NCCL bands: " + ncclBandsText(world.bands.ncclBands) +
         (world.bands.ncclBands.empty() ? " (NCCL untouched)" : "; above them NCCL untouched") + "\n";
  if (!world.bands.measured) out += "nothing was measured: no table entry for this world\n";
  return out;
}

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include "tools/tune_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/table_file.h"

namespace symmem {

std::string durationText(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char text[32];
  if (s < 60)
    std::snprintf(text, sizeof text, "%lds", s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  return text;
}

std::string progressLine(int done, int total, double elapsedSec, int nRanks, const char* path, uint64_t bytes,
                         int round, int rounds) {
  std::string line = "[" + std::to_string(done + 1) + "/" + std::to_string(total) +
                     "] ranks=" + std::to_string(nRanks) + " " + path + " " + formatBytes(bytes);
  if (rounds > 1) line += " (round " + std::to_string(round + 1) + "/" + std::to_string(rounds) + ")";
  line += ", " + durationText(elapsedSec) + " elapsed";
  if (done > 0) line += ", about " + durationText(elapsedSec / done * (total - done)) + " left";
  return line;
}

std::string summaryTable(const TunedWorld& world, ComputeCapability cc, const std::vector<SizeMedians>& medians) {
  auto cell = [](double us) {
    char text[32];
    if (std::isnan(us))
      std::snprintf(text, sizeof text, "%12s", "-");
    else
      std::snprintf(text, sizeof text, "%12.2f", us);
    return std::string(text);
  };
  std::string gpus;
  for (int g : world.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
  std::string out = "\nranks=" + std::to_string(world.nRanks) + " link=" + std::string(linkClassName(world.link)) +
                    " cc=" + cc.str() + " (GPUs " + gpus + "), median us per call under CUDA graphs\n";
  char header[160];
  std::snprintf(header, sizeof header, "%10s %12s %12s %12s  %-9s %s\n", "size", "nccl", "one-shot", "two-shot",
                "chosen", "why");
  out += header;
  for (const SizeVerdict& v : world.crossover.sizes) {
    SizeMedians m{v.bytes, NAN, NAN, NAN};
    for (const SizeMedians& x : medians)
      if (x.bytes == v.bytes) m = x;
    char start[32];
    std::snprintf(start, sizeof start, "%10s", formatBytes(v.bytes).c_str());
    char chosen[16];
    std::snprintf(chosen, sizeof chosen, "%-9s", tunedChoiceName(v.chosen));
    out += std::string(start) + " " + cell(m.ncclUs) + " " + cell(m.oneShotUs) + " " + cell(m.twoShotUs) + "  " +
           chosen + " " + v.why + "\n";
  }
  const Crossover& c = world.crossover;
  out += "limits: one-shot " + (c.oneShotMaxBytes ? "up to " + formatBytes(c.oneShotMaxBytes) : std::string("off")) +
         ", two-shot " + (c.twoShotMaxBytes ? "up to " + formatBytes(c.twoShotMaxBytes) : std::string("off")) + "\n";
  return out;
}

}  // namespace symmem

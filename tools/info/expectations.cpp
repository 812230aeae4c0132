// SPDX-License-Identifier: Apache-2.0
#include "tools/info/expectations.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "core/table_file.h"

namespace symmem {

namespace {

constexpr const char* kRtxSwitches = "local-inference-lab/rtx6kpro hardware/pcie-bandwidth.md";
constexpr const char* kAsus = "local-inference-lab/rtx6kpro hardware/asus-esc8000a-e13p-broadcom-switches.md";
constexpr const char* kV100 = "haohervchb/sglang-V100 pull request 2";
constexpr const char* kA800 = "vllm-project/vllm pull request 50941";
constexpr const char* kHere = "docs/kernels.md, Measured results (2026-11-30)";

}  // namespace

const std::vector<PublishedFigure>& publishedFigures() {
  static const std::vector<PublishedFigure> figures = {
      // Every pair NVLink: measured by this project, bf16, CUDA graph.
      {LinkClass::NvLink, 2, "2x H200 SXM, NVLink NV18, bf16, graph", 8, 5.61, 2.72, "one-shot push", kHere, true},
      {LinkClass::NvLink, 2, "2x H200 SXM, NVLink NV18, bf16, graph", 4096, 6.06, 2.88, "one-shot push", kHere, true},
      {LinkClass::NvLink, 2, "2x H200 SXM, NVLink NV18, bf16, graph", 65536, 6.81, 3.57, "one-shot push", kHere, true},
      {LinkClass::NvLink, 2, "2x H200 SXM, NVLink NV18, bf16, graph", 1 << 20, 13.56, 6.38, "one-shot push", kHere,
       true},
      // One PCIe switch fabric.
      {LinkClass::PcieSameSwitch, 4, "4x V100 SXM2, one PCIe (PLX) switch, fp16, graph", 4096, 19.4, 4.0,
       "one-shot push", kV100, false},
      {LinkClass::PcieSameSwitch, 4, "4x V100 SXM2, one PCIe (PLX) switch, fp16, graph", 32768, 24.2, 11.8,
       "one-shot push", kV100, false},
      {LinkClass::PcieSameSwitch, 4, "4x V100 SXM2, one PCIe (PLX) switch, fp16, graph", 393216, 83.5, 120.3,
       "one-shot push", kV100, false},
      {LinkClass::PcieSameSwitch, 8, "8x RTX PRO 6000 Max-Q, three PCIe switches, one CPU", 256, 24.6, 7.5,
       "one-shot (custom)", kRtxSwitches, false},
      {LinkClass::PcieSameSwitch, 8, "8x RTX PRO 6000 Max-Q, three PCIe switches, one CPU", 8192, 24.2, 9.2,
       "one-shot (custom)", kRtxSwitches, false},
      {LinkClass::PcieSameSwitch, 8, "8x RTX PRO 6000 Max-Q, three PCIe switches, one CPU", 32768, 24.5, 16.5,
       "one-shot (custom)", kRtxSwitches, false},
      {LinkClass::PcieSameSwitch, 8, "8x RTX PRO 6000 Max-Q, three PCIe switches, one CPU", 65536, 24.1, 25.9,
       "one-shot (custom)", kRtxSwitches, false},
      // Switches joined at one CPU's root complex.
      {LinkClass::PcieSameRoot, 4, "4x RTX PRO 6000 of one socket, Broadcom switch pairs, fp16", 256, 13.4, 5.8,
       "one-shot (custom)", kAsus, false},
      {LinkClass::PcieSameRoot, 4, "4x RTX PRO 6000 of one socket, Broadcom switch pairs, fp16", 32768, 13.2, 9.4,
       "one-shot (custom)", kAsus, false},
      {LinkClass::PcieSameRoot, 4, "4x RTX PRO 6000 of one socket, Broadcom switch pairs, fp16", 131072, 15.6, 17.4,
       "one-shot (custom)", kAsus, false},
      // Across the sockets.
      {LinkClass::PcieCrossSocket, 8, "8x RTX PRO 6000, two sockets, Broadcom switches, fp16", 256, 25.1, 8.8,
       "one-shot (custom)", kAsus, false},
      {LinkClass::PcieCrossSocket, 8, "8x RTX PRO 6000, two sockets, Broadcom switches, fp16", 4096, 57.8, 33.1,
       "one-shot (custom)", kAsus, false},
      {LinkClass::PcieCrossSocket, 8, "8x RTX PRO 6000, two sockets, Broadcom switches, fp16", 8192, 58.9, 73.8,
       "one-shot (custom)", kAsus, false},
      {LinkClass::PcieCrossSocket, 8, "8x A800 PCIe, two 4-GPU islands", 8192, 56.9, 46.5, "island-aware (halves-like)",
       kA800, false},
      {LinkClass::PcieCrossSocket, 8, "8x A800 PCIe, two 4-GPU islands", 32768, 95.8, 45.6,
       "island-aware (halves-like)", kA800, false},
      {LinkClass::PcieCrossSocket, 8, "8x A800 PCIe, two 4-GPU islands", 131072, 132.2, 66.7,
       "island-aware (halves-like)", kA800, false},
  };
  return figures;
}

std::vector<PublishedFigure> figuresFor(LinkClass link, int ranks) {
  int nearest = -1;
  for (const PublishedFigure& f : publishedFigures()) {
    if (f.link != link) continue;
    if (nearest < 0 || std::abs(f.ranks - ranks) < std::abs(nearest - ranks) ||
        (std::abs(f.ranks - ranks) == std::abs(nearest - ranks) && f.ranks > nearest))
      nearest = f.ranks;
  }
  std::vector<PublishedFigure> out;
  for (const PublishedFigure& f : publishedFigures())
    if (f.link == link && f.ranks == nearest) out.push_back(f);
  return out;
}

std::string expectationText(LinkClass link, int ranks, int allReducesPerStep) {
  const std::vector<PublishedFigure> figures = figuresFor(link, ranks);
  if (figures.empty())
    return "  nothing published for this link class that this project knows of: measure it (symmem-tune)\n";
  std::string out;
  const char* system = nullptr;
  char line[512];
  for (const PublishedFigure& f : figures) {
    if (system == nullptr || std::string(system) != f.system) {
      system = f.system;
      std::snprintf(line, sizeof line, "  %s (%s%s):\n", f.system, f.measuredHere ? "measured by this project, " : "",
                    f.source);
      out += line;
    }
    const double ratio = f.ncclUs / f.kernelUs;
    const double perStepMs = allReducesPerStep * (f.ncclUs - f.kernelUs) / 1000.0;
    std::snprintf(line, sizeof line, "    %7s: NCCL %6.2f us, %s %6.2f us: %.2fx, %.2f ms %s per step of %d\n",
                  formatBytes(f.bytes).c_str(), f.ncclUs, f.kernel, f.kernelUs, ratio, std::fabs(perStepMs),
                  perStepMs >= 0 ? "less" : "more", allReducesPerStep);
    out += line;
  }
  if (figures.front().ranks != ranks) {
    std::snprintf(line, sizeof line, "  (the nearest world size published on this link: %d ranks, not %d)\n",
                  figures.front().ranks, ranks);
    out += line;
  }
  if (!figures.front().measuredHere)
    out +=
        "  Published by others, not measured by this project; the table's bands above say what runs at each size.\n"
        "  Your box: symmem-tune --csv FILE, then symmem-stat --estimate FILE on the running server.\n";
  return out;
}

}  // namespace symmem

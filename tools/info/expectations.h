// SPDX-License-Identifier: Apache-2.0
#pragma once
// What to expect against NCCL before trying: for a communicator's link class and world size, the
// published figures of the nearest boxes (NCCL's time and a symmetric kernel's, per call, at one size),
// each with its source (docs/sources.md gives the full tables), marked as not measured by this project
// where they are not, and the arithmetic for a server: all-reduces per decode step x (NCCL - kernel)
// -> time per step. symmem-info prints it; docs/your-box.md explains it.
#include <cstdint>
#include <string>
#include <vector>

#include "core/link_class.h"

namespace symmem {

struct PublishedFigure {
  LinkClass link;
  int ranks;           // the world size measured
  const char* system;  // "8x RTX PRO 6000, PCIe switches, one CPU"
  uint64_t bytes;      // the message size
  double ncclUs;       // NCCL's time per call
  double kernelUs;     // the symmetric kernel's
  const char* kernel;  // "one-shot push (custom)"
  const char* source;  // where it was published
  bool measuredHere;   // measured by this project (docs/kernels.md), not only published
};

// Every figure known, in the order they are shown.
const std::vector<PublishedFigure>& publishedFigures();

// The figures for `link`: those of `ranks` ranks, else those of the nearest world size measured on that
// link (empty for LinkClass::Unknown or a link nobody published).
std::vector<PublishedFigure> figuresFor(LinkClass link, int ranks);

// The lines symmem-info prints under "what to expect": each figure with its ratio and source, then
// `allReducesPerStep` x (NCCL - kernel) at the figure with the largest saving, as time per decode step,
// or a line saying that nothing was published for this link class. Each line ends with '\n'.
std::string expectationText(LinkClass link, int ranks, int allReducesPerStep);

// The decode step of the server this was built for: ~120 all-reduces per token (a ~60-layer model,
// two per layer; docs/sources.md, "How many all-reduces an inference step issues").
inline constexpr int kAllReducesPerDecodeStep = 120;

}  // namespace symmem

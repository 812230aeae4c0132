// SPDX-License-Identifier: Apache-2.0
#pragma once
// The GPUs a measuring tool works on (symmem-tune, symmem-health): every GPU of the topology, or the
// ones --gpus names, with one wording for the two ways that can fail.
#include <string>
#include <vector>

#include "topology/model.h"

namespace symmem {

struct GpuChoice {
  std::vector<int> gpus;  // topology indices, in the order asked for
  // "<tool>: no CUDA GPU found (the topology from nvml lists none; <notes>)" or
  // "<tool>: --gpus names GPU5, but this machine has 2 GPUs (GPU0-GPU1)"; empty when the choice is valid.
  std::string error;
  bool noGpu = false;  // the error is that the topology lists no GPU
  bool ok() const { return error.empty(); }
};

GpuChoice chooseGpus(const std::string& tool, const Topology& topology, const std::vector<int>& requested);

}  // namespace symmem

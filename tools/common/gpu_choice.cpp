// SPDX-License-Identifier: Apache-2.0
#include "tools/common/gpu_choice.h"

namespace symmem {

GpuChoice chooseGpus(const std::string& tool, const Topology& topology, const std::vector<int>& requested) {
  GpuChoice choice;
  const int count = topology.gpuCount();
  if (count == 0) {
    choice.noGpu = true;
    choice.error = tool + ": no CUDA GPU found (the topology from " +
                   (topology.source().empty() ? std::string("NVML") : topology.source()) + " lists none";
    for (const std::string& note : topology.notes()) choice.error += "; " + note;
    choice.error += ")";
    return choice;
  }
  if (requested.empty()) {
    for (int i = 0; i < count; ++i) choice.gpus.push_back(i);
    return choice;
  }
  for (int g : requested)
    if (g >= count) {
      choice.error = tool + ": --gpus names GPU" + std::to_string(g) + ", but this machine has " +
                     std::to_string(count) + " GPU" + (count == 1 ? "" : "s") + " (GPU0" +
                     (count > 1 ? "-GPU" + std::to_string(count - 1) : std::string()) + ")";
      return choice;
    }
  choice.gpus = requested;
  return choice;
}

}  // namespace symmem

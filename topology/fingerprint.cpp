// SPDX-License-Identifier: Apache-2.0
#include "topology/fingerprint.h"

namespace symmem {

MachineFingerprint fingerprintOf(const Topology& topology, int driverMajor) {
  MachineFingerprint m;
  for (const GpuInfo& g : topology.gpus()) m.gpuModels.push_back(g.name);
  for (int a = 0; a < topology.gpuCount(); ++a)
    for (int b = a + 1; b < topology.gpuCount(); ++b) {
      const PairLink& l = topology.link(a, b);
      m.links.push_back(pathToken(l.path, l.nvlinks));
    }
  m.driverMajor = driverMajor;
  return m;
}

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The machine fingerprint (core/machine_fingerprint.h) of a node's topology: its GPUs' models, in
// index order, and the path of every pair, as nvidia-smi writes them.
#include "core/machine_fingerprint.h"
#include "topology/model.h"

namespace symmem {

MachineFingerprint fingerprintOf(const Topology& topology, int driverMajor);

}  // namespace symmem

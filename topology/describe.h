// SPDX-License-Identifier: Apache-2.0
#pragma once
// The topology as text for people: what `symmem-info --topo FILE` prints.
//
// Sections: the GPUs; the classified matrix (nvidia-smi's token and the LinkClass name for every
// pair); the P2P read+write matrix when anything about P2P is known; the PCIe islands; the pairs whose
// traffic crosses the CPU root complex or the socket; the halves of a communicator over all GPUs (or why
// there are none), the pairs across their middle and the flows that cross it; the link class of a
// communicator over all GPUs; and what the model could not learn.
#include <string>

#include "topology/model.h"

namespace symmem {

std::string describeTopology(const Topology& topo);

}  // namespace symmem

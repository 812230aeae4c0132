// SPDX-License-Identifier: Apache-2.0
#pragma once
// A Topology as bytes and back, for carrying a model out of the child process that read a file
// (hwloc_xml_child.h). Every field the model has survives the trip: GPUs (index, bus id, name,
// capability, NUMA node, CPU list), every pair's path, NVLink count and P2P status, source and notes.
//
// The bytes are a sequence of fields, each "<decimal length>:<bytes>", opened by a format word; the
// reader checks every length, count and enum value and gives an error instead of a model it cannot
// vouch for.
#include <string>
#include <string_view>

#include "topology/expected.h"
#include "topology/model.h"

namespace symmem {

std::string encodeTopology(const Topology& topo);
Expected<Topology> decodeTopology(std::string_view bytes);

}  // namespace symmem

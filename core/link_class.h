// SPDX-License-Identifier: Apache-2.0
#pragma once
// How the GPUs of one communicator are linked, as one value: the worst link among its ranks.
// Ordered from best to worst so that "worst of" is std::max.
#include <optional>
#include <string_view>

namespace symmem {

enum class LinkClass : int {
  NvLink = 0,           // every pair joined by NVLink (bridge or NVSwitch)
  PcieSameSwitch = 1,   // every pair behind one PCIe switch (nvidia-smi PIX, and PXB inside one switch fabric)
  PcieSameRoot = 2,     // pairs meet at a CPU host bridge or root complex of one NUMA node (PHB, NODE)
  PcieCrossSocket = 3,  // some pair crosses the inter-socket link (SYS)
  Unknown = 4,          // not learned: the decision stays on NCCL
};

constexpr LinkClass worseOf(LinkClass a, LinkClass b) { return a > b ? a : b; }

// Stable short names used in the table file, symmem-info and logs.
std::string_view linkClassName(LinkClass c);
std::optional<LinkClass> parseLinkClass(std::string_view name);

}  // namespace symmem

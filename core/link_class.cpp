// SPDX-License-Identifier: Apache-2.0
#include "core/link_class.h"

namespace symmem {

std::string_view linkClassName(LinkClass c) {
  switch (c) {
    case LinkClass::NvLink:
      return "nvlink";
    case LinkClass::PcieSameSwitch:
      return "pcie-switch";
    case LinkClass::PcieSameRoot:
      return "pcie-root";
    case LinkClass::PcieCrossSocket:
      return "pcie-sys";
    case LinkClass::Unknown:
      return "unknown";
  }
  return "unknown";
}

std::optional<LinkClass> parseLinkClass(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(LinkClass::Unknown); ++i) {
    auto c = static_cast<LinkClass>(i);
    if (name == linkClassName(c)) return c;
  }
  return std::nullopt;
}

}  // namespace symmem

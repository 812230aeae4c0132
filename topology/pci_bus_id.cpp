// SPDX-License-Identifier: Apache-2.0
#include "topology/pci_bus_id.h"

#include <charconv>
#include <cstdio>

namespace symmem {

namespace {

bool parseHex(std::string_view s, size_t maxDigits, unsigned& out) {
  if (s.empty() || s.size() > maxDigits) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::optional<std::string> canonicalPciBusId(std::string_view text) {
  // Split from the right: [domain:]bus:device.function
  const auto dot = text.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const auto devColon = text.rfind(':', dot);
  if (devColon == std::string_view::npos) return std::nullopt;
  const auto busColon = text.rfind(':', devColon == 0 ? 0 : devColon - 1);
  const bool hasDomain = busColon != std::string_view::npos && busColon < devColon;

  unsigned domain = 0, bus = 0, device = 0, function = 0;
  std::string_view busText = hasDomain ? text.substr(busColon + 1, devColon - busColon - 1) : text.substr(0, devColon);
  if (hasDomain && !parseHex(text.substr(0, busColon), 8, domain)) return std::nullopt;
  if (!parseHex(busText, 2, bus)) return std::nullopt;
  if (!parseHex(text.substr(devColon + 1, dot - devColon - 1), 2, device)) return std::nullopt;
  if (!parseHex(text.substr(dot + 1), 1, function)) return std::nullopt;
  if (domain > 0xffff || device > 0x1f || function > 7) return std::nullopt;

  char buf[16];
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", domain, bus, device, function);
  return std::string(buf);
}

}  // namespace symmem

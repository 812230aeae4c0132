// SPDX-License-Identifier: Apache-2.0
#include "core/capability.h"

#include <charconv>

namespace symmem {

namespace {
bool parseInt(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out >= 0;
}
}  // namespace

std::optional<ComputeCapability> parseCapability(std::string_view text) {
  if (text.starts_with("sm_"))
    text.remove_prefix(3);
  else if (text.starts_with("sm"))
    text.remove_prefix(2);
  int major = 0, minor = 0;
  if (auto dot = text.find('.'); dot != std::string_view::npos) {
    if (!parseInt(text.substr(0, dot), major) || !parseInt(text.substr(dot + 1), minor)) return std::nullopt;
    if (minor > 9) return std::nullopt;
  } else {
    int packed = 0;
    if (text.size() < 2 || !parseInt(text, packed)) return std::nullopt;
    major = packed / 10;
    minor = packed % 10;
  }
  if (major < 1 || major > 99) return std::nullopt;
  return ComputeCapability{major, minor};
}

}  // namespace symmem

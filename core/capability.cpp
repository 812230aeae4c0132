// SPDX-License-Identifier: Apache-2.0
#include "core/capability.h"

#include <cctype>

namespace symmem {

namespace {

// Digits only (no sign, no space), at most `maxDigits` of them.
bool digits(std::string_view s, size_t maxDigits, int& out) {
  if (s.empty() || s.size() > maxDigits) return false;
  out = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    out = out * 10 + (c - '0');
  }
  return true;
}

bool plausible(int major, int minor) { return major >= 1 && major <= kMaxCapabilityMajor && minor >= 0 && minor <= 9; }

}  // namespace

std::optional<ComputeCapability> parseCapability(std::string_view text) {
  int major = 0, minor = 0;
  if (text.starts_with("sm")) {
    // nvcc's packed form: the last digit is the minor (sm_90, sm_120).
    text.remove_prefix(text.starts_with("sm_") ? 3 : 2);
    int packed = 0;
    if (text.size() < 2 || !digits(text, 3, packed)) return std::nullopt;
    major = packed / 10;
    minor = packed % 10;
  } else if (const size_t dot = text.find('.'); dot != std::string_view::npos) {
    if (!digits(text.substr(0, dot), 2, major) || !digits(text.substr(dot + 1), 1, minor)) return std::nullopt;
  } else {
    // A major alone: "12" is 12.0, never 1.2.
    if (!digits(text, 2, major)) return std::nullopt;
  }
  if (!plausible(major, minor)) return std::nullopt;
  return ComputeCapability{major, minor};
}

}  // namespace symmem

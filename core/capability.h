// SPDX-License-Identifier: Apache-2.0
#pragma once
// A CUDA compute capability as a plain, ordered value (9.0 < 10.0 < 10.3 < 12.0).
#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace symmem {

struct ComputeCapability {
  int major = 0;
  int minor = 0;
  constexpr auto operator<=>(const ComputeCapability&) const = default;
  constexpr bool known() const { return major > 0; }
  std::string str() const { return std::to_string(major) + "." + std::to_string(minor); }
};

// Parses "12.0", "9.0", "120", "sm_120", "sm120", "90". Returns nullopt on anything else.
std::optional<ComputeCapability> parseCapability(std::string_view text);

}  // namespace symmem

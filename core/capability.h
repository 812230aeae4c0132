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

// Majors above this are refused: no CUDA GPU has one, and "90" or "120" is nvcc's packed form
// written without its "sm_" (read as 90.0 it would silently match no table entry).
inline constexpr int kMaxCapabilityMajor = 19;

// The one parser for the table file, SYMMEM_CC and --cc. Accepts "major.minor" ("12.0", "8.6"), a
// major alone ("12" is 12.0) and nvcc's packed form with its prefix ("sm_120", "sm120", "sm_90").
// Digits only: signs, spaces, exponents, a second dot or anything after the number give nullopt.
std::optional<ComputeCapability> parseCapability(std::string_view text);

// What parseCapability accepts, for messages: "expected major.minor (12.0), a major alone (12) or sm_120".
inline constexpr const char* kCapabilityForms = "expected major.minor (12.0), a major alone (12) or sm_120";

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// PCI bus ids in one spelling. NVML says "00000000:3B:00.0" (eight-digit domain, upper case), CUDA
// says "0000:3b:00.0", hwloc "0000:3b:00.0", users write "3b:00.0". Ranks compare bus ids they got
// from different APIs, so every id is brought to "dddd:bb:dd.f", lower case, before it is stored.
#include <optional>
#include <string>
#include <string_view>

namespace symmem {

// "00000000:3B:00.0" -> "0000:3b:00.0"; "3b:00.0" -> "0000:3b:00.0". nullopt when it is not a bus id.
std::optional<std::string> canonicalPciBusId(std::string_view text);

}  // namespace symmem

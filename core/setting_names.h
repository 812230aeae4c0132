// SPDX-License-Identifier: Apache-2.0
#pragma once
// Environment variables that look like settings but are none (SYMMEM_ENABLED, SYMEM_ENABLE,
// SYMMEM_TIMEOUT): without a word they would be ignored. The caller passes the names in (the
// plugin's process state reads `environ`; core never reads the environment itself).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace symmem {

// One warning per name that is not a registered setting but is SYMMEM_* (any case), starts with a
// near miss of SYMMEM_ (SYMEM_, SYMMEN_, ...) or lies within two edits of a registered name; each
// names the nearest registered setting when one is close. Entries may be "NAME=value" as in
// `environ`: the part from '=' on is ignored. Names the project's test scripts read
// (SYMMEM_GPU_TESTS_*, SYMMEM_PLUGIN) are not settings and not warned about.
std::vector<std::string> unknownSettingWarnings(const std::vector<std::string_view>& names);
// The same over a null-terminated array such as `environ` (null: no warnings).
std::vector<std::string> unknownSettingWarnings(const char* const* environ);

// Levenshtein distance (insertions, deletions, substitutions of single characters).
size_t editDistance(std::string_view a, std::string_view b);

}  // namespace symmem

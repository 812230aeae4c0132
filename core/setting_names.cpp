// SPDX-License-Identifier: Apache-2.0
#include "core/setting_names.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "core/settings.h"

namespace symmem {

namespace {

constexpr std::string_view kPrefix = "SYMMEM_";
// Read by the project's test scripts and tools (symmem-report's stand-in tools), not by the plugin.
constexpr std::string_view kNotSettingsPrefix = "SYMMEM_GPU_TESTS_";
constexpr std::string_view kNotSettings[] = {"SYMMEM_PLUGIN", "SYMMEM_REPORT_TOOLS_DIR"};
// A name within this many edits of a registered one is a typo of it ("did you mean").
constexpr size_t kSuggestWithin = 4;
// Outside the SYMMEM_ prefix, only names this close to a registered one are taken for typos.
constexpr size_t kNearMissWithin = 2;

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool registered(std::string_view name) {
  const auto specs = settingSpecs();
  return std::any_of(specs.begin(), specs.end(), [&](const SettingSpec& s) { return name == s.name; });
}

// The registered name nearest to `name` (compared in upper case) and its distance.
std::pair<std::string_view, size_t> nearest(std::string_view name) {
  const std::string key = upper(name);
  std::pair<std::string_view, size_t> best{"", SIZE_MAX};
  for (const SettingSpec& spec : settingSpecs()) {
    const size_t d = editDistance(key, spec.name);
    if (d < best.second) best = {spec.name, d};
  }
  return best;
}

// SYMEM_, SYMMEN_, SYMMEM (one edit from the prefix before the first '_'), in any case.
bool prefixNearMiss(std::string_view name) {
  const size_t bar = name.find('_');
  if (bar == std::string_view::npos) return false;
  return editDistance(upper(name.substr(0, bar + 1)), kPrefix) <= 1;
}

bool looksLikeSetting(std::string_view name, size_t distance) {
  if (name.starts_with(kNotSettingsPrefix)) return false;
  if (std::find(std::begin(kNotSettings), std::end(kNotSettings), name) != std::end(kNotSettings)) return false;
  return prefixNearMiss(name) || distance <= kNearMissWithin;
}

}  // namespace

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> unknownSettingWarnings(const std::vector<std::string_view>& names) {
  std::vector<std::string> warnings;
  for (std::string_view entry : names) {
    const std::string_view name = entry.substr(0, entry.find('='));
    if (name.empty() || registered(name)) continue;
    const auto [closest, distance] = nearest(name);
    if (!looksLikeSetting(name, distance)) continue;
    std::string text = std::string(name) + " is not a setting";
    if (distance <= kSuggestWithin)
      text += "; did you mean " + std::string(closest) + "? (ignored; symmem-info --env lists the settings)";
    else
      text += " (ignored; symmem-info --env lists the settings)";
    warnings.push_back(std::move(text));
  }
  return warnings;
}

std::vector<std::string> unknownSettingWarnings(const char* const* environ) {
  std::vector<std::string_view> names;
  for (const char* const* e = environ; e != nullptr && *e != nullptr; ++e) names.emplace_back(*e);
  return unknownSettingWarnings(names);
}

}  // namespace symmem

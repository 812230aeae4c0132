// SPDX-License-Identifier: Apache-2.0
#include "tools/common/cli_values.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <utility>

#include "core/setting_names.h"
#include "core/table_file.h"

namespace symmem {

namespace {

bool allDigits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string bad(const std::string& flag, const std::string& text, const std::string& expected) {
  return "bad " + flag + " '" + text + "': expected " + expected;
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

}  // namespace

std::string parseCountArg(const std::string& flag, const std::string& text, int64_t min, int64_t max, int64_t& out) {
  const std::string expected = "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  int64_t value = 0;
  if (!allDigits(text)) return bad(flag, text, expected);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max)
    return bad(flag, text, expected);
  out = value;
  return {};
}

std::string parseSizeArg(const std::string& flag, const std::string& text, uint64_t min, uint64_t max, uint64_t& out) {
  uint64_t value = 0;
  if (!parseBytes(text, value))
    return bad(flag, text, "a size such as 8, 64K, 1MiB or 2G (K = 1024, whole numbers only)");
  if (value < min || value > max)
    return bad(flag, text, "a size of at least " + formatBytes(min) + " and at most " + formatBytes(max));
  out = value;
  return {};
}

std::string parsePercentArg(const std::string& flag, const std::string& text, double min, double maxBelow,
                            double& out) {
  const std::string expected =
      "a percentage from " + number(min) + " to below " + number(maxBelow) + ", such as 5 or 2.5%";
  std::string digits = text;
  if (!digits.empty() && digits.back() == '%') digits.pop_back();
  // Decimal digits with at most one dot between them: no sign, exponent, hex, inf or nan.
  const size_t dot = digits.find('.');
  const std::string whole = digits.substr(0, dot);
  const std::string fraction = dot == std::string::npos ? "0" : digits.substr(dot + 1);
  if (!allDigits(whole) || !allDigits(fraction)) return bad(flag, text, expected);
  double value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value < min || value >= maxBelow)
    return bad(flag, text, expected);
  out = value / 100.0;
  return {};
}

std::string parseIndexListArg(const std::string& flag, const std::string& text, int max, std::vector<int>& out) {
  const std::string expected = "distinct whole numbers from 0 to " + std::to_string(max) + ", comma-separated";
  std::vector<int> values;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t value = 0;
    if (!parseCountArg(flag, item, 0, max, value).empty()) return bad(flag, text, expected);
    for (int seen : values)
      if (seen == value) return bad(flag, text, expected);
    values.push_back(static_cast<int>(value));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  out = std::move(values);
  return {};
}

std::string unknownOptionMessage(const std::string& tool, const std::string& arg) {
  return "unknown option " + arg + " (" + tool + " --help lists the options)";
}

namespace {
// The entry of `known` nearest to `text`, within a third of its length (at least 1, at most 3 edits:
// "--intervl", "--jsn", "-once", "bfloat61"); null when none is that close.
const std::string* nearestOf(const std::string& text, const std::vector<std::string>& known) {
  const size_t within = std::min<size_t>(3, std::max<size_t>(1, text.size() / 3));
  const std::string* nearest = nullptr;
  size_t best = within + 1;
  for (const std::string& k : known) {
    const size_t d = editDistance(text, k);
    if (d < best) {
      best = d;
      nearest = &k;
    }
  }
  return nearest;
}
}  // namespace

std::string unknownOptionMessage(const std::string& tool, const std::string& arg,
                                 const std::vector<std::string>& known) {
  const std::string* nearest = nearestOf(arg, known);
  if (nearest == nullptr || arg.empty() || arg[0] != '-') return unknownOptionMessage(tool, arg);
  return "unknown option " + arg + " (did you mean " + *nearest + "? " + tool + " --help lists the options)";
}

bool measuredType(DataType type) {
  return type == DataType::Bfloat16 || type == DataType::Float16 || type == DataType::Float32;
}

std::string parseMeasuredTypeArg(const std::string& flag, const std::string& text, DataType& out) {
  const DataType type = dataTypeFromName(text);
  if (measuredType(type)) {
    out = type;
    return {};
  }
  std::string message = "bad " + flag + " '" + text + "': expected bfloat16 (or bf16), half (fp16) or float (fp32)";
  if (type != DataType::Other)
    return message + " (the measured all-reduce has no " + std::string(dataTypeName(type)) + " kernel)";
  static const std::vector<std::string> kNames = {"bfloat16", "bf16", "half", "fp16", "float", "fp32"};
  if (const std::string* nearest = nearestOf(text, kNames)) message += " (did you mean " + *nearest + "?)";
  return message;
}

}  // namespace symmem

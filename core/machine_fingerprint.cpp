// SPDX-License-Identifier: Apache-2.0
#include "core/machine_fingerprint.h"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdio>

namespace symmem {

namespace {

constexpr std::string_view kPrefix = "machine ";
constexpr std::string_view kModelSeparator = " | ";

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string> split(std::string_view s, std::string_view separator) {
  std::vector<std::string> out;
  while (true) {
    const size_t at = s.find(separator);
    out.emplace_back(trimmed(s.substr(0, at)));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + separator.size());
  }
}

bool parseCount(std::string_view text, int& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out >= 0;
}

std::string orUnknown(const std::string& s) { return s.empty() ? "unknown" : s; }

// The pair (a, b), a < b, of the i-th entry of the row-by-row upper triangle of n GPUs.
std::pair<int, int> pairAt(size_t i, int n) {
  int a = 0;
  size_t row = static_cast<size_t>(n - 1);
  while (a < n - 1 && i >= row) {
    i -= row;
    ++a;
    --row;
  }
  return {a, a + 1 + static_cast<int>(i)};
}

}  // namespace

std::string machineLine(const MachineFingerprint& m) {
  std::string models, links;
  for (const std::string& g : m.gpuModels) {
    if (!models.empty()) models += kModelSeparator;
    models += orUnknown(g);
  }
  for (const std::string& l : m.links) {
    if (!links.empty()) links += ' ';
    links += l;
  }
  std::string line(kPrefix);
  line += "gpus " + std::to_string(m.gpuModels.size());
  line += "; models " + (models.empty() ? std::string("none") : models);
  line += "; links " + (links.empty() ? std::string("none") : links);
  line += "; driver " + (m.driverMajor > 0 ? std::to_string(m.driverMajor) : std::string("unknown"));
  return line;
}

std::optional<MachineFingerprint> parseMachineLine(std::string_view line) {
  line = trimmed(line);
  if (line.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const std::vector<std::string> fields = split(line.substr(kPrefix.size()), ";");
  if (fields.size() != 4) return std::nullopt;
  auto value = [&](size_t i, std::string_view name) -> std::optional<std::string_view> {
    std::string_view f = fields[i];
    if (f.substr(0, name.size() + 1) != std::string(name) + " ") return std::nullopt;
    return trimmed(f.substr(name.size() + 1));
  };
  const auto gpus = value(0, "gpus"), models = value(1, "models"), links = value(2, "links"),
             driver = value(3, "driver");
  int count = 0;
  if (!gpus || !models || !links || !driver || !parseCount(*gpus, count)) return std::nullopt;
  MachineFingerprint m;
  if (*models != "none")
    for (std::string& g : split(*models, kModelSeparator)) m.gpuModels.push_back(g == "unknown" ? "" : g);
  if (*links != "none") m.links = split(*links, " ");
  if (*driver != "unknown" && (!parseCount(*driver, m.driverMajor) || m.driverMajor == 0)) return std::nullopt;
  const size_t pairs = count < 2 ? 0 : static_cast<size_t>(count) * static_cast<size_t>(count - 1) / 2;
  if (m.gpuModels.size() != static_cast<size_t>(count) || m.links.size() != pairs) return std::nullopt;
  return m;
}

std::string machineKey(const MachineFingerprint& m) {
  // FNV-1a, 64 bits, over the line: a name for the file, not a defence against anyone.
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char c : machineLine(m)) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

std::string machineDifference(const MachineFingerprint& there, const MachineFingerprint& here) {
  const size_t n = here.gpuModels.size();
  if (there.gpuModels.size() != n)
    return std::to_string(there.gpuModels.size()) + " GPUs there, " + std::to_string(n) + " here";
  for (size_t g = 0; g < n; ++g)
    if (there.gpuModels[g] != here.gpuModels[g])
      return "GPU " + std::to_string(g) + " is " + orUnknown(there.gpuModels[g]) + " there, " +
             orUnknown(here.gpuModels[g]) + " here";
  for (size_t i = 0; i < here.links.size() && i < there.links.size(); ++i)
    if (there.links[i] != here.links[i]) {
      const auto [a, b] = pairAt(i, static_cast<int>(n));
      return "the link between GPU " + std::to_string(a) + " and GPU " + std::to_string(b) + " is " + there.links[i] +
             " there, " + here.links[i] + " here";
    }
  if (there.links.size() != here.links.size()) return "the links between the GPUs differ";
  if (there.driverMajor != here.driverMajor) {
    auto driver = [](int v) { return v > 0 ? std::to_string(v) : std::string("unknown"); };
    return "driver " + driver(there.driverMajor) + " there, " + driver(here.driverMajor) + " here";
  }
  return {};
}

int driverMajorFromProcText(std::string_view text) {
  // The version is the first token shaped like digits '.' digits after "Kernel Module".
  const size_t module = text.find("Kernel Module");
  if (module == std::string_view::npos) return 0;
  text.remove_prefix(module + 13);
  text = trimmed(text.substr(0, text.find('\n')));
  // Some builds print "Kernel Module for x86_64  580.159 ..."; take the first token with a dot.
  while (!text.empty()) {
    const size_t space = text.find(' ');
    const std::string_view token = text.substr(0, space);
    const size_t dot = token.find('.');
    int major = 0;
    if (dot != std::string_view::npos && parseCount(token.substr(0, dot), major) && major > 0) return major;
    if (space == std::string_view::npos) break;
    text = trimmed(text.substr(space));
  }
  return 0;
}

std::string_view tableSourceName(TableSource source) {
  switch (source) {
    case TableSource::BuiltIn:
      return "built-in";
    case TableSource::Setting:
      return "SYMMEM_TABLE";
    case TableSource::Installed:
      return "installed";
  }
  return "?";
}

TableChoice chooseTable(const std::string& settingPath, const MachineFingerprint& here,
                        const std::vector<InstalledTableFile>& installed, const std::vector<std::string>& searched) {
  TableChoice choice;
  if (!settingPath.empty()) {
    choice.source = TableSource::Setting;
    choice.path = settingPath;
    choice.why = "SYMMEM_TABLE is set (it wins over installed tables)";
    return choice;
  }
  for (const InstalledTableFile& f : installed) {
    if (!f.error.empty()) {
      choice.ignored.push_back("installed table " + f.path + " ignored: " + f.error);
      continue;
    }
    if (!f.machine) {
      choice.ignored.push_back(
          "installed table " + f.path +
          " ignored: it names no machine (no `meta machine` line; symmem-tune --install writes one)");
      continue;
    }
    const std::string difference = machineDifference(*f.machine, here);
    if (!difference.empty()) {
      choice.ignored.push_back("installed table " + f.path + " ignored: tuned for another machine (" + difference +
                               ")");
      continue;
    }
    choice.source = TableSource::Installed;
    choice.path = f.path;
    choice.why = "installed for this machine (" + machineLine(here) + ")";
    return choice;
  }
  std::string dirs;
  for (const std::string& d : searched) dirs += (dirs.empty() ? "" : ", ") + d;
  choice.why =
      "no SYMMEM_TABLE, and no table installed for this machine" + (dirs.empty() ? std::string() : " in " + dirs);
  return choice;
}

}  // namespace symmem

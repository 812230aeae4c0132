// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one registry of SYMMEM_* settings. Each setting is declared once (kSettingSpecs) with its type,
// default, range and meaning; parsing is strict (a bad value is one WARN naming variable and value,
// then the default); `symmem-info --env` prints the table that docs/settings.md carries.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace symmem {

enum class SettingId : int {
  Enable,
  Symmetric,
  Tuner,
  Table,
  TopoFile,
  Capability,
  ForcePath,
  TimeoutMs,
  Attach,
  Hooks,
  Disassembler,
  P2pCheck,
  LogDetail,
  SharedGpuTest,
  Halves,
  Stats,
  StatsDir,
  StatsGpu,
  kCount
};

enum class SettingType { Bool, Int, Choice, Path, Capability };

struct SettingSpec {
  SettingId id;
  const char* name;
  SettingType type;
  const char* defaultValue;
  int64_t min;          // Int only
  int64_t max;          // Int only
  const char* choices;  // Choice only: '|'-separated
  const char* meaning;
};

std::span<const SettingSpec> settingSpecs();

enum class SettingSource { Default, Environment, InvalidUsedDefault };

struct SettingValue {
  std::string text;  // the effective value, canonical ("1", "0", "5000", "auto", a path)
  std::string raw;   // what the environment said ("" when unset)
  SettingSource source = SettingSource::Default;
};

class Settings {
 public:
  using EnvLookup = std::function<const char*(const char*)>;

  // Reads every setting through `env`; each bad value adds one message to `problems`. The plugin's
  // process state (plugin/process/process.h) is the one place that passes the environment in.
  static Settings load(const EnvLookup& env, std::vector<std::string>* problems);

  bool flag(SettingId id) const { return values_[idx(id)].text == "1"; }
  int64_t integer(SettingId id) const;
  const std::string& text(SettingId id) const { return values_[idx(id)].text; }
  const SettingValue& value(SettingId id) const { return values_[idx(id)]; }

  // $XDG_CONFIG_HOME when absolute, else $HOME/.config, else "": where the per-user installed tables
  // live (core/installed_table.h). Not a SYMMEM_* setting; read here so the environment is read once.
  const std::string& userConfigHome() const { return userConfigHome_; }

 private:
  static size_t idx(SettingId id) { return static_cast<size_t>(id); }
  std::vector<SettingValue> values_;
  std::string userConfigHome_;
};

// Strict parsers, exposed for tests and the table file.
bool parseBool(std::string_view text, bool& out);  // 1/0, true/false, yes/no, on/off (any case)
bool parseInt64(std::string_view text, int64_t& out);

std::string_view settingSourceName(SettingSource s);
std::string_view settingTypeName(SettingType t);

// The Markdown table of every setting, as docs/settings.md carries it.
std::string settingsMarkdownTable();

}  // namespace symmem

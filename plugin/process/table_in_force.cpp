// SPDX-License-Identifier: Apache-2.0
#include "plugin/process/table_in_force.h"

#include "core/bounded_file.h"
#include "core/installed_table.h"
#include "core/log.h"
#include "core/table_file.h"
#include "topology/fingerprint.h"

namespace symmem {

int thisDriverMajor() {
  constexpr size_t kProcVersionMaxBytes = 4096;
  const BoundedFileText version = readBoundedFile("/proc/driver/nvidia/version", kProcVersionMaxBytes);
  return version.ok() ? driverMajorFromProcText(version.text) : 0;
}

TableInForce tableInForce(const Settings& settings, const Topology& topology, int driverMajor) {
  TableInForce out;
  out.machine = fingerprintOf(topology, driverMajor);
  const std::string& setting = settings.text(SettingId::Table);
  const std::vector<std::string> dirs = installedTableDirectories(settings.userConfigHome());
  // SYMMEM_ENABLE=0 changes nothing, so no directory is read either.
  const bool enabled = settings.flag(SettingId::Enable);
  const std::vector<InstalledTableFile> installed =
      setting.empty() && enabled ? findInstalledTables(dirs, out.machine) : std::vector<InstalledTableFile>{};
  out.choice = chooseTable(setting, out.machine, installed, dirs);
  for (const std::string& line : out.choice.ignored) SYMMEM_INFO(kLogTuning | kLogInit, "%s", line.c_str());

  switch (out.choice.source) {
    case TableSource::Setting: {
      if (!enabled) {  // SYMMEM_ENABLE=0: the file is not read, and the plugin changes nothing
        out.table = DecisionTable::builtIn();
        return out;
      }
      std::string error;
      out.table = tableWithFile(setting, &error);  // a bad file: one WARN, the built-in table
      if (!error.empty()) {
        out.choice = TableChoice{};
        out.choice.why = "SYMMEM_TABLE=" + setting + " cannot be used: " + error;
        out.settingRefused = true;
      }
      return out;
    }
    case TableSource::BuiltIn:
      out.table = DecisionTable::builtIn();
      return out;
    case TableSource::Installed:
      break;
  }
  out.table = DecisionTable::builtIn();
  const TableFileResult file = readTableFile(out.choice.path);
  if (!file.ok()) {  // changed since it was found
    SYMMEM_WARN("%s; using the built-in decision table", file.error.c_str());
    out.choice = chooseTable("", out.machine, {}, dirs);
    return out;
  }
  applyTableFile(file, out.table);
  SYMMEM_INFO(kLogTuning | kLogInit, "decision table %s, %s: %zu entries override the built-in ones",
              out.choice.path.c_str(), out.choice.why.c_str(), file.entries.size());
  return out;
}

}  // namespace symmem

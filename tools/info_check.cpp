// SPDX-License-Identifier: Apache-2.0
#include "tools/info_check.h"

#include "core/table_file.h"
#include "tools/info_topology.h"

namespace symmem {

std::vector<std::string> configurationProblems(const CheckInputs& in) {
  std::vector<std::string> problems;
  if (in.settings != nullptr)
    for (const SettingSpec& spec : settingSpecs()) {
      const SettingValue& v = in.settings->value(spec.id);
      if (v.source == SettingSource::InvalidUsedDefault)
        problems.push_back(std::string(spec.name) + "='" + v.raw + "' is not valid (the default '" + spec.defaultValue +
                           "' is used)");
    }
  problems.insert(problems.end(), in.unknownNames.begin(), in.unknownNames.end());
  if (!in.tablePath.empty()) {
    const TableFileResult table = readTableFile(in.tablePath);
    if (!table.ok()) problems.push_back(table.error);
  }
  if (!in.topoPath.empty() && in.settings != nullptr) {
    const MachineView machine = describeMachine(in.topoPath, *in.settings);
    if (machine.failed) {
      std::string text = machine.text;
      while (!text.empty() && text.back() == '\n') text.pop_back();
      problems.push_back(text);
    }
  }
  return problems;
}

}  // namespace symmem

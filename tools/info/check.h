// SPDX-License-Identifier: Apache-2.0
#pragma once
// `symmem-info --check`: every problem the plugin would meet in this configuration (the table file,
// the topology file, the SYMMEM_* settings), so that a user can validate files before a job runs.
#include <string>
#include <vector>

#include "core/settings.h"

namespace symmem {

struct CheckInputs {
  std::string tablePath;  // --table, else SYMMEM_TABLE ("" : none to check)
  std::string topoPath;   // --topo, else SYMMEM_TOPO_FILE ("" : none to check)
  const Settings* settings = nullptr;
  std::vector<std::string> unknownNames;  // unknownSettingWarnings() of the environment
};

// One line per problem, each naming its file and line or its variable; empty when all is clean.
std::vector<std::string> configurationProblems(const CheckInputs& in);

}  // namespace symmem

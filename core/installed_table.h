// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where tuned tables are installed (symmem-tune --install) and found when SYMMEM_TABLE is unset: a
// per-user directory, then a system one, each holding one file per machine, named by its fingerprint
// (a home directory shared by several kinds of node keeps each node's table apart). The choice among
// them is machine_fingerprint.h's chooseTable().
#include <string>
#include <vector>

#include "core/machine_fingerprint.h"

namespace symmem {

inline constexpr const char* kSystemTableDirectory = "/etc/nccl-symmem";

// $XDG_CONFIG_HOME/nccl-symmem (or ~/.config/nccl-symmem), from the user's configuration home as
// Settings read it; "" when there is none.
std::string userTableDirectory(const std::string& userConfigHome);

// The directories searched, in order: the user's (when known), then kSystemTableDirectory.
std::vector<std::string> installedTableDirectories(const std::string& userConfigHome);

// The file a table for `machine` is installed as in `directory`: <directory>/table-<machineKey>.txt.
std::string installedTablePath(const std::string& directory, const MachineFingerprint& machine);

// The tables in `directories`: per directory, the file for `here` first, then the files installed for
// other machines (at most a few, read only to say why they do not apply). Missing directories are skipped.
std::vector<InstalledTableFile> findInstalledTables(const std::vector<std::string>& directories,
                                                    const MachineFingerprint& here);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include "tools/tune/install.h"

#include <filesystem>
#include <system_error>

#include "core/installed_table.h"

namespace symmem {

std::string tuneInstallPath(TuneInstall where, const Settings& settings, const MachineFingerprint& machine,
                            std::string* error) {
  const std::string dir =
      where == TuneInstall::System ? std::string(kSystemTableDirectory) : userTableDirectory(settings.userConfigHome());
  if (dir.empty()) {
    *error = "--install: neither XDG_CONFIG_HOME nor HOME names an absolute directory (use --install-system or --out)";
    return {};
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    *error = "--install: cannot create " + dir + ": " + ec.message() +
             (where == TuneInstall::System ? " (--install-system needs root)" : "");
    return {};
  }
  return installedTablePath(dir, machine);
}

}  // namespace symmem

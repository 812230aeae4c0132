// SPDX-License-Identifier: Apache-2.0
#pragma once
// symmem-tune --install: the table goes where the plugin looks when SYMMEM_TABLE is unset
// (core/installed_table.h), named by this machine's fingerprint, which its `meta machine` line repeats.
#include <string>

#include "core/machine_fingerprint.h"
#include "core/settings.h"
#include "tools/tune/options.h"

namespace symmem {

// The file to write for `machine`, its directory created. "" with `error` set when there is no such
// directory (no $HOME for --install) or it cannot be created.
std::string tuneInstallPath(TuneInstall where, const Settings& settings, const MachineFingerprint& machine,
                            std::string* error);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The decision table a process runs with, and why: SYMMEM_TABLE, else the table symmem-tune
// --install wrote for this machine (core/installed_table.h), else the built-in one. The plugin's
// process state builds it once; symmem-info shows the same choice.
#include "core/decision_table.h"
#include "core/machine_fingerprint.h"
#include "core/settings.h"
#include "topology/model.h"

namespace symmem {

struct TableInForce {
  DecisionTable table;
  TableChoice choice;
  MachineFingerprint machine;   // this machine, as installed tables are keyed
  bool settingRefused = false;  // SYMMEM_TABLE names a file that cannot be used: built-in, choice.why says why
};

// The driver's major version of this node (/proc/driver/nvidia/version), 0 without a driver.
int thisDriverMajor();

// Chooses and reads the table. Logs one INFO line per installed table passed over (naming what
// differs) and one for an installed table used; a bad file is one WARN and the built-in table.
TableInForce tableInForce(const Settings& settings, const Topology& topology, int driverMajor);

}  // namespace symmem

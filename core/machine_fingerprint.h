// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which machine a tuned table belongs to, and which table is in force: SYMMEM_TABLE, else a table
// installed for this machine (symmem-tune --install), else the built-in one. A table tuned on other
// GPUs, another topology or another driver generation is not this machine's measurement, so it is
// ignored, and the choice says what differs. Pure: the files are found and read by installed_table.h.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace symmem {

// What a tuned table's numbers depend on: the GPU models and how many, the links between them, and
// the driver's major version (a new driver branch can move latencies).
struct MachineFingerprint {
  std::vector<std::string> gpuModels;  // per GPU, in the node's index order ("" where unknown)
  std::vector<std::string> links;      // the path of every pair a < b, row by row ("NV18", "PIX", ...)
  int driverMajor = 0;                 // 0: unknown

  bool operator==(const MachineFingerprint&) const = default;
};

// The fingerprint as one line, as a table file's `meta machine ...` line carries it:
// "gpus 2; models NVIDIA H200 | NVIDIA H200; links NV18; driver 580".
std::string machineLine(const MachineFingerprint& machine);
// The line back; nullopt when it is not one machineLine() wrote.
std::optional<MachineFingerprint> parseMachineLine(std::string_view line);

// 16 hex digits naming the machine in an installed table's file name (table-<key>.txt).
std::string machineKey(const MachineFingerprint& machine);

// What differs between the machine a table was tuned on and this one, in words ("" when the same):
// "8 GPUs there, 2 here", "GPU 0 is NVIDIA H100 there, NVIDIA H200 here", "the link between GPU 0 and
// GPU 1 is PIX there, NV18 here", "driver 570 there, 580 here".
std::string machineDifference(const MachineFingerprint& tableMachine, const MachineFingerprint& here);

// The driver's major version from /proc/driver/nvidia/version's text ("NVRM version: NVIDIA UNIX
// x86_64 Kernel Module  580.159.03 ..."); 0 when it says none.
int driverMajorFromProcText(std::string_view text);

// ---- which table is in force --------------------------------------------------------------------

// A table file found in one of the installed-table directories.
struct InstalledTableFile {
  std::string path;
  std::optional<MachineFingerprint> machine;  // from its `meta machine` line; nullopt: it has none
  std::string error;                          // not readable as a table file ("": fine)
};

enum class TableSource { BuiltIn, Setting, Installed };

struct TableChoice {
  TableSource source = TableSource::BuiltIn;
  std::string path;                  // the file for Setting and Installed
  std::string why;                   // one line: why this table
  std::vector<std::string> ignored;  // one line per installed table passed over, saying why
};

// SYMMEM_TABLE (`settingPath`) wins; else the first of `installed` (in search order) tuned for `here`;
// else the built-in table. `searched` names the directories looked in, for the message.
TableChoice chooseTable(const std::string& settingPath, const MachineFingerprint& here,
                        const std::vector<InstalledTableFile>& installed, const std::vector<std::string>& searched);

std::string_view tableSourceName(TableSource source);  // "built-in", "SYMMEM_TABLE", "installed"

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// symmem-stat's command line (docs/live-stats.md):
//
//   symmem-stat [PID...] [--once] [--json] [--prometheus] [--interval SECONDS] [--count N] [--dir DIR]
//   symmem-stat [PID...] --check [--dir DIR]
//   symmem-stat [PID...] --estimate CSV [--case NAME] [--interval SECONDS | --once] [--dir DIR]
//
// The table is live by default: refreshed every --interval until Ctrl-C or --count. --json and
// --prometheus write one snapshot; --json with --interval or --count writes one document per refresh
// (JSON Lines); --prometheus writes one exposition only (a textfile collector reads a whole file).
#include <sys/types.h>

#include <string>
#include <vector>

#include "tools/common/cli_values.h"

namespace symmem::stat {

enum class OutputForm { Table, Json, Prometheus, Check, Estimate };

// --estimate's default time between its two snapshots, in seconds.
inline constexpr double kEstimateSeconds = 5.0;

struct StatOptions {
  std::vector<pid_t> pids;  // empty: every process with a statistics file in `dir`
  OutputForm form = OutputForm::Table;
  int count = 0;  // refreshes; 0: until stopped
  double intervalSeconds = 1.0;
  std::string estimateCsv;   // --estimate: a symmem-tune or nccl-tests CSV (tools/stat/latency_csv.h)
  std::string caseName;      // --case: the case of an nccl-tests results file
  bool overInterval = true;  // --estimate: rates between two snapshots --interval apart (--once: since opened)
  std::string dir;           // "" until resolved: --dir, else SYMMEM_STATS_DIR, else /dev/shm
  bool help = false;
  bool version = false;
};

using StatArgsResult = ArgsResult<StatOptions>;

// `args` without the program name; `statsDirSetting` is SYMMEM_STATS_DIR ("" when unset).
StatArgsResult parseStatArgs(const std::vector<std::string>& args, const std::string& statsDirSetting);

std::string statUsage();
// "symmem-stat (nccl-symmem 0.1.0), statistics layout 1".
std::string statVersionText();

// "2", "0.5", "1.25": seconds from 0.1 to 3600, digits with at most 3 after a point; "" or why not.
std::string parseSecondsArg(const std::string& flag, const std::string& text, double& out);

}  // namespace symmem::stat

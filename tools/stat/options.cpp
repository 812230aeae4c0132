// SPDX-License-Identifier: Apache-2.0
#include "tools/stat/options.h"

#include <cctype>
#include <climits>

#include "core/call_stats_segment.h"
#include "core/printable_text.h"
#include "symmem/version.h"

namespace symmem::stat {

namespace {

const std::vector<std::string>& knownOptions() {
  static const std::vector<std::string> known = {"--once",     "--json", "--prometheus", "--check",
                                                 "--estimate", "--case", "--interval",   "--count",
                                                 "--dir",      "--help", "--version"};
  return known;
}

}  // namespace

std::string parseSecondsArg(const std::string& flag, const std::string& text, double& out) {
  const std::string bad = "bad " + flag + " '" + printableText(text) + "': expected seconds from 0.1 to 3600 (2, 0.5)";
  const size_t point = text.find('.');
  const std::string whole = text.substr(0, point);
  const std::string fraction = point == std::string::npos ? std::string() : text.substr(point + 1);
  auto digits = [](const std::string& s) {
    for (char c : s)
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    return true;
  };
  if (whole.empty() || whole.size() > 4 || !digits(whole) || !digits(fraction) || fraction.size() > 3 ||
      (point != std::string::npos && fraction.empty()))
    return bad;
  long millis = std::stol(whole) * 1000;
  if (!fraction.empty()) millis += std::stol(fraction + std::string(3 - fraction.size(), '0'));
  if (millis < 100 || millis > 3600 * 1000) return bad;
  out = static_cast<double>(millis) / 1000.0;
  return {};
}

StatArgsResult parseStatArgs(const std::vector<std::string>& args, const std::string& statsDirSetting) {
  StatArgsResult r;
  StatOptions& o = r.options;
  bool once = false, json = false, prometheus = false, check = false, intervalGiven = false, countGiven = false;
  bool estimate = false, caseGiven = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= args.size()) {
        r.error = a + " needs a value";
        return false;
      }
      out = args[++i];
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      o.help = true;
    } else if (a == "--version") {
      o.version = true;
    } else if (a == "--once") {
      once = true;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--prometheus") {
      prometheus = true;
    } else if (a == "--check") {
      check = true;
    } else if (a == "--estimate") {
      if (!value(o.estimateCsv)) return r;
      if (o.estimateCsv.empty())
        r.error = "--estimate needs a CSV file (symmem-tune --csv, or nccl-tests-configs' results.csv)";
      estimate = true;
    } else if (a == "--case") {
      if (!value(o.caseName)) return r;
      if (o.caseName.empty()) r.error = "--case needs a case name";
      caseGiven = true;
    } else if (a == "--interval") {
      if (!value(v)) return r;
      r.error = parseSecondsArg(a, v, o.intervalSeconds);
      intervalGiven = true;
    } else if (a == "--count") {
      if (!value(v)) return r;
      int64_t n = 0;
      r.error = parseCountArg(a, v, 1, INT_MAX, n);
      o.count = static_cast<int>(n);
      countGiven = true;
    } else if (a == "--dir") {
      if (!value(o.dir)) return r;
      if (o.dir.empty()) r.error = "--dir needs a directory";
    } else if (!a.empty() && a[0] != '-') {
      int64_t pid = 0;
      if (!parseCountArg("PID", a, 1, INT_MAX, pid).empty()) {
        r.error = "bad PID '" + printableText(a) + "': expected a process id (a whole number from 1)";
      } else {
        o.pids.push_back(static_cast<pid_t>(pid));
      }
    } else {
      r.error = unknownOptionMessage("symmem-stat", printableText(a), knownOptions());
    }
    if (!r.ok()) return r;
  }
  if (o.help || o.version) return r;
  if (json && prometheus) {
    r.error = "--json and --prometheus: choose one";
  } else if (check && (json || prometheus || once || intervalGiven || countGiven)) {
    r.error =
        "--check judges one snapshot and says so in lines of its own: it takes no --json, --prometheus, "
        "--once, --interval or --count";
  } else if (estimate && (json || prometheus || check || countGiven)) {
    r.error = "--estimate prints an estimate of its own: it takes no --json, --prometheus, --check or --count";
  } else if (caseGiven && !estimate) {
    r.error = "--case picks the case of an nccl-tests results file read by --estimate";
  } else if (once && (intervalGiven || countGiven)) {
    r.error = "--once takes one snapshot: --interval and --count do not apply to it";
  } else if (prometheus && (intervalGiven || countGiven)) {
    r.error =
        "--prometheus writes one exposition (a textfile collector reads a whole file): run it from a loop or a "
        "timer instead of --interval and --count (docs/live-stats.md)";
  }
  if (!r.ok()) return r;
  if (estimate) {
    o.form = OutputForm::Estimate;
    o.count = 1;
    o.overInterval = !once;
    if (!intervalGiven) o.intervalSeconds = kEstimateSeconds;
    if (o.dir.empty()) o.dir = stats::segmentDirectory(statsDirSetting);
    return r;
  }
  o.form = check        ? OutputForm::Check
           : json       ? OutputForm::Json
           : prometheus ? OutputForm::Prometheus
                        : OutputForm::Table;
  // One snapshot: --once, and --json or --prometheus unless asked to repeat.
  if (once || (o.form != OutputForm::Table && !intervalGiven && !countGiven)) o.count = 1;
  if (o.dir.empty()) o.dir = stats::segmentDirectory(statsDirSetting);
  return r;
}

std::string statUsage() {
  return "usage: symmem-stat [PID...] [--once] [--json] [--prometheus] [--interval SECONDS] [--count N] [--dir DIR]\n"
         "       symmem-stat [PID...] --check [--dir DIR]\n"
         "       symmem-stat [PID...] --estimate CSV [--case NAME] [--interval SECONDS | --once] [--dir DIR]\n"
         "What the nccl-symmem plugin does in running processes: for each communicator, its all-reduces by\n"
         "route (symmetric kernel or NCCL, and why), calls per second, sizes, eager or captured in a CUDA\n"
         "graph, and the GPU's own time of each symmetric kernel. Read from the files the plugin keeps in\n"
         "/dev/shm (docs/live-stats.md).\n"
         "  PID...        only these processes (default: every process with a statistics file)\n"
         "  --once        one table and exit (default: a live table, refreshed every interval, with\n"
         "                the calls per second over each interval, until Ctrl-C or --count)\n"
         "  --json        JSON: one document and exit; with --interval or --count one per refresh, one\n"
         "                a line\n"
         "  --prometheus  Prometheus's text format (node_exporter's textfile collector), one exposition\n"
         "  --check       are the all-reduces captured in CUDA graphs (decode steps) on the symmetric path?\n"
         "                One line per communicator, and why where they are not. Exit 0 yes, 3 no (some\n"
         "                on NCCL that need not be), 4 nothing captured yet\n"
         "  --estimate CSV  the all-reduce time the plugin saves each second: the job's executions over\n"
         "                --interval (default 5 s; --once: since each communicator was opened) x (stock NCCL\n"
         "                - the path taken) at each size, from a symmem-tune --csv file or the results.csv of\n"
         "                nccl-tests-configs/run.sh. Exit 0 with an estimate, 4 with nothing to estimate yet\n"
         "  --case NAME   the case of an nccl-tests results.csv to read times from (when it holds several)\n"
         "  --interval S  seconds between refreshes (default 1; 0.1 to 3600)\n"
         "  --count N     refresh N times, then exit\n"
         "  --dir DIR     where the files are (default: SYMMEM_STATS_DIR when set, else /dev/shm)\n"
         "  --version     the version of this tool and of the file layout it reads\n"
         "A file left by a process that ended is reported and left alone: the next process of its user\n"
         "that writes statistics in the folder removes it.\n"
         "Exit 0 when the statistics were shown (none running is an answer too), 1 when files were found\n"
         "but none could be read (or no PID asked for has one), 2 for a bad command line.\n";
}

std::string statVersionText() {
  return std::string("symmem-stat (nccl-symmem ") + SYMMEM_VERSION_STRING + "), statistics layout " +
         std::to_string(stats::kLayoutVersion);
}

}  // namespace symmem::stat

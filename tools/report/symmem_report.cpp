// SPDX-License-Identifier: Apache-2.0
// symmem-report: one folder to attach to an issue. It runs the tools beside it as child processes
// (symmem-info, symmem-health, symmem-tune, symmem-report-plots), keeps what they print and write,
// and assembles report.md (tools/report/text.h); every text passes through the Redactor
// (tools/report/redact.h) before it is written. docs/report.md describes the folder.
//
//   symmem-report [--out DIR] [--quick] [--gpus L] [--no-tune] [--timeout-s S]
//
// Exit 0 when the report was written, whatever the tools found (their verdicts are its content);
// 1 when it could not be written; 2 for a bad command line.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "core/call_stats_segment.h"
#include "tools/common/cli_values.h"
#include "tools/common/stats_gather.h"
#include "tools/common/stats_view.h"
#include "tools/report/facts.h"
#include "tools/report/folder.h"
#include "tools/report/redact.h"
#include "tools/report/run.h"
#include "tools/report/text.h"

extern char** environ;

namespace {

using namespace symmem;
using namespace symmem::report;

// Where the tools are found instead of the directory of symmem-report (tests, packaging).
constexpr const char* kToolsDirVariable = "SYMMEM_REPORT_TOOLS_DIR";
constexpr size_t kToolFileMaxBytes = size_t{16} << 20;  // a CSV or table a tool wrote
constexpr int kSteps = 4;

volatile std::sig_atomic_t gInterrupted = 0;
volatile std::sig_atomic_t gRunningGroup = 0;  // the process group of the tool running now, else 0
const ReportFolder* gFolder = nullptr;         // for the second stop signal's cleanup

// The first stop signal: the running tool is stopped and the report written with what finished. A
// second one ends symmem-report at once, as the user then means, but first removes the staging
// folder: it holds the tools' outputs before redaction.
extern "C" void onStopSignal(int signal) {
  if (gInterrupted == 0) {
    gInterrupted = signal;
    return;
  }
  if (const pid_t group = gRunningGroup; group > 0) kill(-group, SIGKILL);
  if (gFolder != nullptr) gFolder->removeStagingNow();
  std::signal(signal, SIG_DFL);
  raise(signal);  // delivered when this handler returns: the exit status says which signal ended it
}

struct Options {
  std::string out;
  bool quick = false;
  std::string gpus;
  bool noTune = false;
  std::optional<int> timeoutSeconds;
};

void usage(FILE* to) {
  std::fprintf(to,
               "usage: symmem-report [--out DIR] [--quick] [--gpus L] [--no-tune] [--timeout-s S]\n"
               "Writes one folder to attach to an issue: the topology (symmem-info), a P2P health check\n"
               "(symmem-health), the tuned table and latency curves (symmem-tune), plots, the versions and\n"
               "the exact commands, in report.md. Host, user names and paths are replaced (docs/report.md).\n"
               "  --out DIR      the folder to write (default: symmem-report-<UTC yyyymmdd-hhmmss> here);\n"
               "                 it must not exist, or be empty: nothing is ever overwritten\n"
               "  --quick        quicker, coarser health check and tune (their --quick)\n"
               "  --gpus L       the GPUs to check and tune, as nvidia-smi numbers them: 0,1,2,3\n"
               "  --no-tune      skip symmem-tune (the longest step)\n"
               "  --timeout-s S  the most seconds any one tool may run (default: symmem-info 120,\n"
               "                 symmem-health 900, symmem-tune 3600, plots 300; --quick: 300, 300, 1200, 300)\n"
               "Exit 0 when the report was written (whatever the tools found), 1 when it could not be, 2 for a\n"
               "bad command line. Ctrl-C stops the running tool and writes the report with what finished\n"
               "(a second Ctrl-C ends symmem-report at once).\n");
}

// 0: go on; 1: --help printed; 2: a bad command line (said on stderr).
int parseArgs(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "symmem-report: %s needs a value\n", a.c_str());
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 1;
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--no-tune") {
      o.noTune = true;
    } else if (a == "--out") {
      const char* v = value();
      if (v == nullptr) return 2;
      if (*v == '\0') {
        std::fprintf(stderr, "symmem-report: --out needs a folder name\n");
        return 2;
      }
      o.out = v;
    } else if (a == "--gpus") {
      const char* v = value();
      if (v == nullptr) return 2;
      std::vector<int> gpus;
      if (const std::string e = parseIndexListArg("--gpus", v, 63, gpus); !e.empty()) {
        std::fprintf(stderr, "symmem-report: %s\n", e.c_str());
        return 2;
      }
      o.gpus = v;
    } else if (a == "--timeout-s") {
      const char* v = value();
      if (v == nullptr) return 2;
      int64_t s = 0;
      if (const std::string e = parseCountArg("--timeout-s", v, 1, 7 * 24 * 3600, s); !e.empty()) {
        std::fprintf(stderr, "symmem-report: %s\n", e.c_str());
        return 2;
      }
      o.timeoutSeconds = static_cast<int>(s);
    } else {
      std::fprintf(stderr, "symmem-report: %s\n", unknownOptionMessage("symmem-report", a).c_str());
      return 2;
    }
  }
  return 0;
}

std::string utcNow(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  return std::strftime(buf, sizeof buf, format, &tm) > 0 ? std::string(buf) : std::string("unknown");
}

std::string baseName(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// The directory the tools are run from: SYMMEM_REPORT_TOOLS_DIR, else that of this executable.
std::string toolsDirectory(bool& overridden, std::string& problem) {
  if (const char* dir = std::getenv(kToolsDirVariable); dir != nullptr && *dir != '\0') {
    overridden = true;
    return dir;
  }
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    problem = std::string("the directory of symmem-report is unknown: readlink /proc/self/exe failed: ") +
              std::strerror(errno);
    return "";
  }
  exe[n] = '\0';
  std::string path(exe);
  return path.substr(0, path.rfind('/'));
}

// The tools' environment: ours, less the variable only symmem-report reads (the tools would warn
// that it is not a setting).
std::vector<std::string> childEnvironment() {
  std::vector<std::string> env;
  const std::string skip = std::string(kToolsDirVariable) + "=";
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, skip.c_str(), skip.size()) != 0) env.emplace_back(*e);
  return env;
}

// Runs the report's steps and keeps what they leave.
class Report {
 public:
  Report(const Options& options, ReportFolder& folder, const Redactor& redact)
      : options_(options), folder_(folder), redact_(redact), env_(childEnvironment()) {
    toolsDir_ = toolsDirectory(toolsDirOverridden_, toolsProblem_);
  }

  ReportInputs& inputs() { return in_; }
  const std::string& toolsDir() const { return toolsDir_; }
  bool toolsDirOverridden() const { return toolsDirOverridden_; }

  // Runs one tool (or records why it was not run), with its progress on stderr.
  ToolRun run(int step, const char* what, const std::string& tool, std::vector<std::string> args, int timeout) {
    std::fprintf(stderr, "[%d/%d] %s ...\n", step, kSteps, what);
    ToolRun result;
    if (gInterrupted != 0) {
      result.tool = tool;
      result.problem = "symmem-report was interrupted before it";
    } else if (toolsDir_.empty()) {
      result.tool = tool;
      result.end = RunEnd::CouldNotStart;
      result.problem = toolsProblem_;
    } else {
      RunRequest request;
      request.tool = tool;
      request.argv = {toolsDir_ + "/" + tool};
      request.argv.insert(request.argv.end(), args.begin(), args.end());
      request.env = env_;
      request.timeoutSeconds = options_.timeoutSeconds.value_or(timeout);
      request.runningGroup = &gRunningGroup;
      result = runTool(request, &gInterrupted);
    }
    const bool ran = result.end != RunEnd::NotRun && result.end != RunEnd::CouldNotStart;
    std::fprintf(stderr, "[%d/%d] %s: %s", step, kSteps, what, runEndText(result).c_str());
    if (ran) std::fprintf(stderr, ", %.1f s", result.seconds);
    std::fprintf(stderr, "\n");
    return result;
  }

  // An output that is the tool's stdout, written to the folder when it printed anything.
  Artifact fromStdout(const char* name, const ToolRun& run) {
    Artifact a;
    a.name = name;
    if (run.stdoutText.empty()) {
      a.missing =
          run.end == RunEnd::Exited ? run.tool + " printed nothing (" + runEndText(run) + ")" : whyNoOutput(run);
      return a;
    }
    a.present = true;
    a.text = run.stdoutText;
    store(a);
    return a;
  }

  // An output made here, written to the folder redacted.
  Artifact fromText(const char* name, std::string text) {
    Artifact a;
    a.name = name;
    a.present = true;
    a.text = std::move(text);
    store(a);
    return a;
  }

  // An output the tool wrote into the staging folder, copied into the folder redacted.
  Artifact fromStaging(const char* name, const ToolRun& run) {
    Artifact a;
    a.name = name;
    std::string text, error;
    if (!folder_.readStaged(name, kToolFileMaxBytes, text, error)) {
      a.missing = error.empty() ? whyNoOutput(run) : "not kept: " + error;
      return a;
    }
    a.present = true;
    a.text = std::move(text);
    store(a);
    return a;
  }

  std::string staged(const char* name) const { return folder_.stagedPath(name); }

  // The plugin's live statistics in the processes running it now, as symmem-stat --once shows them
  // (the table and the JSON), read in this process. Files of ended processes are named, not removed:
  // the report changes nothing on the machine.
  void liveStatistics() {
    LiveStatsSeen& seen = in_.liveStats;
    const char* dirSetting = std::getenv("SYMMEM_STATS_DIR");
    seen.dir = stats::segmentDirectory(dirSetting != nullptr ? dirSetting : "");
    const StatsGathered g = gatherStats({seen.dir, {}});
    seen.problem = g.dirProblem;
    seen.processes = static_cast<int>(g.processes.size());
    for (const stats::ProcessSnapshot& p : g.processes) seen.communicators += static_cast<int>(p.comms.size());
    seen.notes = g.notes;
    for (std::string& n : seen.notes) n = redact_(n);
    if (seen.processes > 0) {
      in_.liveStatsText = fromText("live-stats.txt", statsTable(g.processes, {}));
      in_.liveStatsJson = fromText("live-stats.json", statsJson(g.processes, {}, g.notes) + "\n");
    }
    std::fprintf(stderr, "symmem-report: %s\n", liveStatsSummary(seen).c_str());
  }

 private:
  void store(Artifact& a) {
    a.text = redact_(a.text);
    if (const std::string e = folder_.writeNew(a.name, a.text); !e.empty()) {
      std::fprintf(stderr, "symmem-report: %s\n", e.c_str());
      a.present = false;
      a.missing = "could not be written: " + e;
    }
  }

  const Options& options_;
  ReportFolder& folder_;
  const Redactor& redact_;
  std::vector<std::string> env_;
  std::string toolsDir_;
  bool toolsDirOverridden_ = false;
  std::string toolsProblem_;
  ReportInputs in_;
};

std::vector<std::string> pngsOf(const std::vector<FileSize>& files) {
  std::vector<std::string> pngs;
  for (const FileSize& f : files)
    if (f.name.size() > 4 && f.name.ends_with(".png")) pngs.push_back(f.name);
  return pngs;
}

// The check of the finished folder: no file may still hold the host, user, home, working-directory or
// folder strings, even inside a longer word. A text file that does is written again with them replaced
// wherever they stand; one that cannot be is removed. The PNGs hold pixels drawn from the redacted CSVs
// and are not read. One note per file acted on, for report.md.
std::vector<std::string> checkFinishedFolder(const ReportFolder& folder, const Redactor& redact) {
  std::vector<std::string> notes;
  for (const FolderEntry& f : folder.files()) {
    std::string text, error;
    if (!folder.readFile(f.name, kToolFileMaxBytes, text, error)) {
      notes.push_back(f.name + ": removed: it could not be read back for the check (" + error + ")");
      folder.remove(f.name);
      continue;
    }
    if (f.name.ends_with(".png") && text.starts_with("\x89PNG\r\n")) continue;
    const std::vector<std::string> left = redact.leftovers(text);
    if (left.empty()) continue;
    std::string what;
    for (const std::string& l : left) what += (what.empty() ? "" : ", ") + l;
    const std::string fixed = redact.redactAnywhere(text);
    std::string e = redact.leftovers(fixed).empty() ? folder.remove(f.name) : "it could not be replaced";
    if (e.empty()) e = folder.writeNew(f.name, fixed);
    if (e.empty()) {
      notes.push_back(f.name + ": " + what + " stood inside a longer word; replaced there too");
    } else {
      folder.remove(f.name);
      notes.push_back(f.name + ": removed: it held " + what + " (" + e + ")");
    }
  }
  return notes;
}

void catchStopSignals() {
  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  // No SA_RESTART: a wait returns at once to look at the flag. A second Ctrl-C ends the report at once
  // (onStopSignal).
  sa.sa_flags = 0;
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);
  // A closed terminal must not end the report half written; a tool's exit is read with waitpid.
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGCHLD, SIG_DFL);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (const int parsed = parseArgs(argc, argv, opt); parsed != 0) return parsed == 1 ? 0 : 2;
  const std::string created = utcNow("%Y-%m-%d %H:%M:%S UTC");
  if (opt.out.empty()) opt.out = "symmem-report-" + utcNow("%Y%m%d-%H%M%S");

  ReportFolder folder;
  if (std::string error; !folder.open(opt.out, error)) {
    std::fprintf(stderr, "symmem-report: %s\n", error.c_str());
    return 1;
  }
  const Redactor redact(gatherIdentity({folder.absolutePath(), folder.resolvedPath(), folder.stagingPath(),
                                        folder.stagingHandlePath(), folder.folderHandlePath()}));
  gFolder = &folder;
  catchStopSignals();

  Report report(opt, folder, redact);
  ReportInputs& in = report.inputs();
  in.createdUtc = created;
  in.invocation = commandLine(std::vector<std::string>(argv, argv + argc));
  in.toolsDir = report.toolsDir();
  in.toolsDirOverridden = report.toolsDirOverridden();
  in.folderName = baseName(folder.absolutePath());

  // First, while the processes that run the plugin are as the user found them.
  report.liveStatistics();

  std::vector<std::string> selection;
  if (opt.quick) selection.emplace_back("--quick");
  if (!opt.gpus.empty()) selection.insert(selection.end(), {"--gpus", opt.gpus});

  in.info = report.run(1, "topology (symmem-info)", "symmem-info", {}, 120);
  in.topology = report.fromStdout("topology.txt", in.info);
  in.check = report.run(1, "configuration check (symmem-info --check)", "symmem-info", {"--check"}, 120);

  std::vector<std::string> healthArgs = selection;
  healthArgs.insert(healthArgs.end(), {"--csv", report.staged("health.csv")});
  in.health = report.run(2, "health check (symmem-health)", "symmem-health", healthArgs, opt.quick ? 300 : 900);
  in.healthText = report.fromStdout("health.txt", in.health);
  in.healthCsv = report.fromStaging("health.csv", in.health);

  if (opt.noTune) {
    std::fprintf(stderr, "[3/%d] tune: skipped (--no-tune)\n", kSteps);
    in.tune.tool = "symmem-tune";
    in.tune.problem = "--no-tune";
  } else {
    std::vector<std::string> tuneArgs = selection;
    tuneArgs.insert(tuneArgs.end(), {"--out", report.staged("table.txt"), "--csv", report.staged("latency.csv")});
    in.tune = report.run(3, "tune (symmem-tune)", "symmem-tune", tuneArgs, opt.quick ? 1200 : 3600);
  }
  in.tableCheck.tool = "symmem-info";
  in.tableCheck.problem = "no tuned table to check";
  if (folder.stagedExists("table.txt"))
    in.tableCheck = report.run(3, "tuned table check (symmem-info --check --table)", "symmem-info",
                               {"--check", "--table", report.staged("table.txt")}, 120);
  in.tuneText = report.fromStdout("tune.txt", in.tune);
  in.table = report.fromStaging("table.txt", in.tune);
  in.latencyCsv = report.fromStaging("latency.csv", in.tune);
  folder.removeStaging();

  in.plots = report.run(4, "plots (symmem-report-plots)", "symmem-report-plots", {folder.folderHandlePath()}, 300);
  in.interrupted = gInterrupted != 0;

  in.versions = gatherVersions();
  for (Row& r : reportedEnvironment(environ)) {
    r.value = redact(r.value);
    in.environment.push_back(r);
  }

  // report.md lists itself with its own size: render until the size it states is the size it has.
  in.redactionNotes = checkFinishedFolder(folder, redact);
  for (const FolderEntry& f : folder.files()) in.files.push_back({f.name, f.bytes});
  in.pngs = pngsOf(in.files);
  in.files.push_back({"report.md", 0});
  std::sort(in.files.begin(), in.files.end(), [](const FileSize& a, const FileSize& b) { return a.name < b.name; });
  std::string md;
  for (int round = 0; round < 8; ++round) {
    md = redact(renderReport(in));
    if (!redact.leftovers(md).empty()) md = redact.redactAnywhere(md);
    auto self = std::find_if(in.files.begin(), in.files.end(), [](const FileSize& f) { return f.name == "report.md"; });
    if (self->bytes == md.size()) break;
    self->bytes = md.size();
  }
  if (const std::string e = folder.writeNew("report.md", md); !e.empty()) {
    std::fprintf(stderr, "symmem-report: %s: no report written\n", e.c_str());
    return 1;
  }
  uint64_t total = 0;
  for (const FileSize& f : in.files) total += f.bytes;
  std::fprintf(stderr, "symmem-report: wrote %s (%zu files, %s in all)%s; attach the folder to the issue\n",
               opt.out.c_str(), in.files.size(), formatSize(total).c_str(),
               in.interrupted ? ", interrupted: it holds what finished" : "");
  return 0;
}

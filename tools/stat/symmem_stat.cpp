// SPDX-License-Identifier: Apache-2.0
// symmem-stat: what the nccl-symmem plugin does in the processes that run it now, read from the
// statistics files they keep (core/call_stats_segment.h) and shown as a live table in the manner of
// `nvidia-smi dmon`, as JSON or in Prometheus's text format (tools/common/stats_view.h).
// docs/live-stats.md describes the columns, the files and the forms.
//
//   symmem-stat [PID...] [--once] [--json] [--prometheus] [--interval SECONDS] [--count N] [--dir DIR]
//   symmem-stat [PID...] --check [--dir DIR]
//   symmem-stat [PID...] --estimate CSV [--case NAME] [--interval SECONDS | --once] [--dir DIR]
//
// --check: 0 when every captured all-reduce takes the path the table gives it, 3 when some are on NCCL
// that need not be (each said why), 4 when nothing is captured yet. --estimate: 0 with an estimate, 4 with
// nothing to estimate yet, 2 for a CSV it cannot read. Otherwise: exit 0 when the statistics were shown
// (no process running the plugin is an answer too); 1 when files were found, or PIDs named, but none could be read; 2
// for a bad command line. Ctrl-C, SIGTERM and a closed pipe (`symmem-stat | head`) end it quietly, with exit 0.
#include <time.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "tools/common/stats_check.h"
#include "tools/common/stats_gather.h"
#include "tools/common/stats_view.h"
#include "tools/stat/estimate.h"
#include "tools/stat/options.h"

namespace {

using namespace symmem;
using namespace symmem::stat;

constexpr int kUsage = 2;
constexpr int kNothingRead = 1;
constexpr int kRowsBetweenHeadings = 20;  // the table's heading again after this many rows

volatile std::sig_atomic_t gStop = 0;

extern "C" void onStopSignal(int) { gStop = 1; }

void catchStopSignals() {
  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // A reader that went away (`| head`) is seen as a failed write and ends the loop.
  std::signal(SIGPIPE, SIG_IGN);
}

uint64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Sleeps until `deadline` (CLOCK_MONOTONIC ns) in short steps, so that a stop signal ends it soon.
void sleepUntil(uint64_t deadline) {
  while (gStop == 0) {
    const uint64_t now = monotonicNs();
    if (now >= deadline) return;
    const uint64_t step = std::min<uint64_t>(deadline - now, 100000000ull);
    timespec ts{static_cast<time_t>(step / 1000000000ull), static_cast<long>(step % 1000000000ull)};
    nanosleep(&ts, nullptr);
  }
}

// Whether stdout still takes what is written (false once its reader has gone).
bool flushed() { return std::fflush(stdout) == 0 && !std::ferror(stdout); }

class LiveView {
 public:
  explicit LiveView(const StatOptions& o) : o_(o) {}

  // One refresh; false when stdout is gone.
  bool refresh() {
    const StatsGathered g = gatherStats({o_.dir, o_.pids});
    if (!g.dirProblem.empty()) {
      say(g.dirProblem);
      failed_ = true;
      return true;
    }
    for (const std::string& n : g.notes) say(n);
    if (g.processes.empty() && (g.filesUnusable > 0 || !o_.pids.empty())) failed_ = true;
    if (!g.processes.empty()) shown_ = true;
    if (g.processes.empty() && o_.pids.empty() && g.filesUnusable == 0) {
      if (!saidNone_) std::fprintf(stderr, "symmem-stat: %s\n", noProcessText(o_.dir).c_str());
      saidNone_ = true;
    } else if (!g.processes.empty()) {
      saidNone_ = false;
    }
    switch (o_.form) {
      case OutputForm::Table:
        table(g);
        break;
      case OutputForm::Json:
        std::printf("%s\n", statsJson(g.processes, before_, g.notes).c_str());
        break;
      case OutputForm::Prometheus:
        std::fputs(statsPrometheus(g.processes).c_str(), stdout);
        break;
      case OutputForm::Check: {
        const StatsCheck check = checkCapturedPaths(g.processes);
        for (const std::string& line : check.lines) std::printf("%s\n", line.c_str());
        checkCode_ = checkExitCode(check.verdict);
        break;
      }
      case OutputForm::Estimate:  // runEstimate's, never a live view's
        break;
    }
    before_ = g.processes;
    return flushed();
  }

  int exitCode() const {
    if (!shown_ && failed_) return kNothingRead;
    return o_.form == OutputForm::Check ? checkCode_ : 0;
  }

 private:
  // A line for stderr, said once in a run.
  void say(const std::string& line) {
    if (said_.insert(line).second) std::fprintf(stderr, "symmem-stat: %s\n", line.c_str());
  }

  void table(const StatsGathered& g) {
    const std::vector<std::string> rows = statsTableRows(g.processes, before_);
    if (!rows.empty() && (first_ || rowsSinceHeading_ >= kRowsBetweenHeadings)) {
      std::fputs(statsTableHeader().c_str(), stdout);
      rowsSinceHeading_ = 0;
      first_ = false;
    }
    for (const std::string& r : rows) std::printf("%s\n", r.c_str());
    rowsSinceHeading_ += static_cast<int>(rows.size());
    for (const StatsNote& n : statsNotes(g.processes))
      if (notesShown_.insert(n.key).second) std::printf("%s\n", n.text.c_str());
  }

  const StatOptions& o_;
  std::vector<stats::ProcessSnapshot> before_;
  std::set<std::string> said_, notesShown_;
  bool first_ = true, shown_ = false, failed_ = false, saidNone_ = false;
  int rowsSinceHeading_ = 0;
  int checkCode_ = 0;
};

// --estimate: the CSV first (a bad one is answered at once), then two snapshots --interval apart.
int runEstimate(const StatOptions& o) {
  const LatencyTableRead table = readLatencyTable(o.estimateCsv, o.caseName);
  if (!table.ok()) {
    std::fprintf(stderr, "symmem-stat: %s\n", table.error.c_str());
    return kUsage;
  }
  StatsGathered g = gatherStats({o.dir, o.pids});
  std::vector<stats::ProcessSnapshot> before;
  if (g.dirProblem.empty() && !g.processes.empty() && o.overInterval) {
    std::fprintf(stderr, "symmem-stat: counting the all-reduces of %zu process(es) for %.1f s\n", g.processes.size(),
                 o.intervalSeconds);
    before = std::move(g.processes);
    sleepUntil(monotonicNs() + static_cast<uint64_t>(o.intervalSeconds * 1e9));
    if (gStop != 0) return 0;
    g = gatherStats({o.dir, o.pids});
  }
  if (!g.dirProblem.empty()) {
    std::fprintf(stderr, "symmem-stat: %s\n", g.dirProblem.c_str());
    return kNothingRead;
  }
  for (const std::string& n : g.notes) std::fprintf(stderr, "symmem-stat: %s\n", n.c_str());
  if (g.processes.empty()) {
    if (g.filesUnusable > 0 || !o.pids.empty()) return kNothingRead;
    std::fprintf(stderr, "symmem-stat: %s\n", noProcessText(o.dir).c_str());
  }
  const StatsEstimate e = estimateSavings(g.processes, before, table.table);
  for (const std::string& line : e.lines) std::printf("%s\n", line.c_str());
  return estimateExitCode(e);
}

}  // namespace

int main(int argc, char** argv) {
  const char* dirSetting = std::getenv("SYMMEM_STATS_DIR");
  const StatArgsResult parsed =
      parseStatArgs(std::vector<std::string>(argv + 1, argv + argc), dirSetting != nullptr ? dirSetting : "");
  if (!parsed.ok()) {
    std::fprintf(stderr, "symmem-stat: %s\n", parsed.error.c_str());
    if (parsed.error.find("--help") == std::string::npos)
      std::fprintf(stderr, "symmem-stat --help lists the options\n");
    return kUsage;
  }
  const StatOptions& o = parsed.options;
  if (o.help) {
    std::fputs(statUsage().c_str(), stdout);
    return 0;
  }
  if (o.version) {
    std::printf("%s\n", statVersionText().c_str());
    return 0;
  }
  catchStopSignals();
  if (o.form == OutputForm::Estimate) return runEstimate(o);
  LiveView view(o);
  const auto intervalNs = static_cast<uint64_t>(o.intervalSeconds * 1e9);
  uint64_t next = monotonicNs();
  for (int i = 0; (o.count == 0 || i < o.count) && gStop == 0; ++i) {
    if (i > 0) sleepUntil(next);
    if (gStop != 0) break;
    next += intervalNs;
    if (!view.refresh()) return 0;  // the reader of stdout has gone
  }
  return view.exitCode();
}

// SPDX-License-Identifier: Apache-2.0
// symmem-health: is this node's GPU peer-to-peer healthy and fast, and if not,
// why and what fixes it. docs/machine-check.md has the checks, the findings and
// their fixes.
//
// The parent never initialises CUDA: the plan comes from the topology (NVML),
// every measurement runs in a child process with a time limit
// (tools/health/probe.h), and the judging is a pure function of the numbers
// (tools/health/rules.h), which --judge applies to numbers recorded earlier.
#include <cstdio>
#include <string>
#include <vector>

#include "core/bounded_file.h"
#include "core/printable_text.h"
#include "plugin/process/process.h"
#include "tools/common/duration_text.h"
#include "tools/common/output_file.h"
#include "tools/common/rank_rendezvous.h"
#include "tools/health/csv.h"
#include "tools/health/plan.h"
#include "tools/health/probe.h"
#include "tools/health/rules.h"

namespace {

using namespace symmem;

constexpr int kUsage = 2;
constexpr int kCouldNotRun = 4;

int judgeAndPrint(const HealthMeasurements& m, const HealthOptions& o) {
  const HealthVerdict verdict = judgeHealth(m);
  std::printf("%s\n%s", healthTable(m).c_str(), verdictText(verdict).c_str());
  std::fflush(stdout);
  if (!o.csv.empty()) {
    if (const std::string e = writeFileByRename(o.csv, healthCsv(m)); !e.empty()) {
      std::fprintf(stderr, "symmem-health: %s\n", e.c_str());
      return kCouldNotRun;
    }
    std::fprintf(stderr, "symmem-health: wrote %s\n", o.csv.c_str());
  }
  return verdict.exitCode;
}

int judgeRecorded(const HealthOptions& o) {
  constexpr size_t kMaxBytes = size_t{4} << 20;
  const BoundedFileText file = readBoundedFile(o.judge, kMaxBytes);
  const std::string name = printableText(o.judge);
  if (!file.ok()) {
    std::fprintf(stderr, "symmem-health: cannot read %s\n", printableText(file.error).c_str());
    return kUsage;
  }
  HealthMeasurements m;
  std::string error;
  if (!parseHealthCsv(file.text, &m, &error)) {
    std::fprintf(stderr, "symmem-health: %s: %s\n", name.c_str(), error.c_str());
    return kUsage;
  }
  std::printf("symmem-health: judging the measurements recorded in %s\n", name.c_str());
  return judgeAndPrint(m, o);
}

}  // namespace

int main(int argc, char** argv) {
  const HealthArgsResult parsed = parseHealthArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.ok()) {
    std::fprintf(stderr, "symmem-health: %s\n", parsed.error.c_str());
    if (parsed.error.find("--help") == std::string::npos)
      std::fprintf(stderr, "symmem-health --help lists the options\n");
    return kUsage;
  }
  const HealthOptions& o = parsed.options;
  if (o.help) {
    std::printf("%s", healthUsage().c_str());
    return 0;
  }
  if (!o.csv.empty()) {
    if (const std::string why = tuneOutputProblem(o.csv); !why.empty()) {
      std::fprintf(stderr, "symmem-health: cannot write --csv %s: %s\n", o.csv.c_str(), why.c_str());
      return kUsage;
    }
  }
  if (!o.judge.empty()) return judgeRecorded(o);

  const Topology& topology = Process::get().topology();
  HealthPlan plan = planHealth(topology, o);
  explainNoGpu(&plan, harness::countGpuDeviceNodes());
  if (!plan.ok()) {
    std::fprintf(stderr, "%s\n", plan.error.c_str());
    if (plan.exitCode == 3 && !o.csv.empty()) {
      // An empty node is a result too: symmem-report shows it.
      if (const std::string e = writeFileByRename(o.csv, healthCsv(plan.skeleton)); !e.empty())
        std::fprintf(stderr, "symmem-health: %s\n", e.c_str());
    }
    return plan.exitCode;
  }
  std::fprintf(stderr,
               "symmem-health: %zu GPU%s, topology from %s; each step may take "
               "up to %d s (at most %s in all)\n",
               plan.gpus.size(), plan.gpus.size() == 1 ? "" : "s", topology.source().c_str(), o.timeoutSec,
               durationText(healthWorstCaseSec(plan, o)).c_str());
  const HealthProbeResult probe =
      runHealthProbe(plan, o, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  if (!probe.error.empty()) {
    std::fprintf(stderr, "%s\nsymmem-health: the check could not run; nothing was judged\n", probe.error.c_str());
    return kCouldNotRun;
  }
  return judgeAndPrint(probe.measurements, o);
}

// SPDX-License-Identifier: Apache-2.0
// symmem-tune: measures stock NCCL against the symmetric one-shot and two-shot all-reduce on this
// machine's GPUs and writes the table file the plugin reads (SYMMEM_TABLE). docs/tuning.md has the
// method and the options.
//
// The parent never initialises CUDA: it checks the machine from the topology (NVML), loads NCCL with
// dlopen, then forks one process per rank for each world size (tools/bench_ranks.h) and reads their
// medians back from shared memory. The choice of limits is tools/tune_crossover.h, a pure function.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "core/bounded_file.h"
#include "core/table_file.h"
#include "plugin/process.h"
#include "tools/bench_ranks.h"
#include "tools/nccl_library.h"
#include "tools/tune_crossover.h"
#include "tools/tune_measure.h"
#include "tools/tune_options.h"
#include "tools/tune_output.h"
#include "tools/tune_plan.h"
#include "tools/tune_report.h"
#include "tools/tune_table.h"
#include "topology/discover.h"

namespace {

using namespace symmem;

std::string commandLineOf(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    const bool quote = a.empty() || a.find_first_of(" \t'\"$") != std::string::npos;
    line += (i ? " " : "") + (quote ? "'" + a + "'" : a);
  }
  return line;
}

std::string utcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// A small text file, or "" when it is missing or not a small regular file (bounded: never blocks).
std::string fileText(const char* path) {
  constexpr size_t kMaxBytes = size_t{64} << 10;
  return readBoundedFile(path, kMaxBytes).text;
}

std::string methodLine(const TuneOptions& o, const std::vector<uint64_t>& sizes) {
  char margin[16];
  std::snprintf(margin, sizeof margin, "%g%%", o.margin * 100.0);
  return "CUDA graphs of " + std::to_string(o.callsPerBatch) + " calls (fewer above 256KiB), median of " +
         std::to_string(o.rounds) + " rounds x " + std::to_string(o.batchesPerRound) + " replays per path, " + o.dtype +
         " sum in place, sizes " + formatBytes(sizes.front()) + "-" + formatBytes(sizes.back()) + " x" +
         std::to_string(o.sizeStep) + ", margin " + margin;
}

template <class T>
T* mapShared() {
  void* mem = bench::mapSharedBetweenRanks(sizeof(T));
  return mem == nullptr ? nullptr : new (mem) T();
}

}  // namespace

int main(int argc, char** argv) {
  const TuneArgsResult parsed = parseTuneArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.ok()) {
    std::fprintf(stderr, "symmem-tune: %s\n", parsed.error.c_str());
    if (parsed.error.find("--help") == std::string::npos)
      std::fprintf(stderr, "symmem-tune --help lists the options\n");
    return 2;
  }
  const TuneOptions& o = parsed.options;
  if (o.help) {
    std::printf("%s", tuneUsage().c_str());
    return 0;
  }
  // Before the measurement, which can take an hour, not after it.
  if (const std::string why = tuneOutputProblem(o.out); !o.planOnly && !why.empty()) {
    std::fprintf(stderr, "symmem-tune: cannot write --out %s: %s\n", o.out.c_str(), why.c_str());
    return 2;
  }

  // Everything that can stop the run is checked here, before any fork and without CUDA.
  const Topology& topology = symmem::Process::get().topology();
  const TunePlan plan = planTuning(topology, o);
  if (!plan.ok()) {
    std::fprintf(stderr, "%s\n", plan.error.c_str());
    return 1;
  }
  const NcclLibrary nccl = loadNcclLibrary(o.ncclLibrary);
  if (!nccl.ok()) {
    const char* hint = nccl.handle == nullptr
                           ? ". Install NCCL 2.x, put its lib directory on LD_LIBRARY_PATH, or pass --nccl-lib PATH"
                           : "";
    std::fprintf(stderr, "symmem-tune: %s%s\n", nccl.error.c_str(), hint);
    return 1;
  }
  int ncclVersion = 0;
  nccl.getVersion(&ncclVersion);
  const std::string planText =
      describePlan(plan, topology, o) + "  NCCL " + ncclVersionText(ncclVersion) + " (" + o.ncclLibrary + ")\n";
  if (o.planOnly) {
    std::printf("%s", planText.c_str());
    return 0;
  }
  std::fprintf(stderr, "%s", planText.c_str());
  if (static_cast<int>(plan.sizes.size()) > kTuneMaxSizes) {
    std::fprintf(stderr, "symmem-tune: %zu sizes is more than %d\n", plan.sizes.size(), kTuneMaxSizes);
    return 2;
  }

  // Stock NCCL must be measured as stock: no tuner plugin (ours would route the small sizes to our kernels).
  if (const char* tuner = std::getenv("NCCL_TUNER_PLUGIN")) {
    std::fprintf(stderr, "symmem-tune: NCCL_TUNER_PLUGIN=%s is ignored while measuring stock NCCL\n", tuner);
    unsetenv("NCCL_TUNER_PLUGIN");
  }
  // As symmem-bench: NVLink SHARP (multicast) stays off unless the user sets it.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  // A plan from a topology file has no bus ids: ranks then use the index, counted as nvidia-smi does.
  setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);

  const auto start = std::chrono::steady_clock::now();
  const int stepsPerWorld = static_cast<int>(plan.sizes.size()) * kTunePaths * o.rounds;
  const int stepsTotal = plan.steps(o.rounds);
  std::vector<TunedWorld> tuned;
  std::vector<std::string> failures;
  TuneProvenance provenance;
  bool wrongResults = false;
  int stepsBefore = 0;
  for (const TuneWorld& world : plan.worlds) {
    bench::RankRendezvous* rendezvous = bench::mapRendezvous();
    TuneRankReport* report = mapShared<TuneRankReport>();
    if (rendezvous == nullptr || report == nullptr) {
      std::fprintf(stderr, "symmem-tune: cannot map memory shared with the ranks\n");
      return 1;
    }
    TuneRankJob job;
    job.world = &world;
    job.options = &o;
    job.sizes = &plan.sizes;
    job.nccl = &nccl;
    job.rendezvous = rendezvous;
    job.report = report;
    job.stepsBefore = stepsBefore;
    job.stepsTotal = stepsTotal;
    job.start = start;
    const int code = bench::runForkedRanks(
        world.nRanks, "symmem-tune", o.timeoutSec, [&](int rank) { return measureTuneRank(job, rank); }, true);
    stepsBefore += stepsPerWorld;
    const std::string key = "ranks=" + std::to_string(world.nRanks);
    if (code != 0) {
      const std::string why = report->error[0]              ? std::string(report->error)
                              : code == bench::kRanksNotRun ? std::string("the ranks could not be run (above)")
                                                            : "a rank exited with " + std::to_string(code);
      failures.push_back(key + ": " + why);
      continue;
    }
    const ComputeCapability cc{report->ccMajor[0], report->ccMinor[0]};
    bool sameCc = true;
    for (int r = 1; r < world.nRanks; ++r)
      sameCc = sameCc && report->ccMajor[r] == cc.major && report->ccMinor[r] == cc.minor;
    if (!sameCc || (provenance.capability.known() && provenance.capability != cc)) {
      failures.push_back(key + ": the GPUs report different compute capabilities");
      continue;
    }
    if (!provenance.capability.known()) {
      provenance.capability = cc;
      provenance.gpuName = report->deviceName;
      provenance.cudaRuntimeVersion = report->cudaRuntimeVersion;
      provenance.cudaDriverVersion = report->cudaDriverVersion;
    }
    std::vector<SizeMedians> medians;
    for (size_t s = 0; s < plan.sizes.size(); ++s) {
      SizeMedians m{plan.sizes[s], report->medianUs[s][0], report->medianUs[s][1], report->medianUs[s][2]};
      double* us[kTunePaths] = {&m.ncclUs, &m.oneShotUs, &m.twoShotUs};
      for (int path = 0; path < kTunePaths; ++path)
        if (report->wrong[s][path] != 0) {
          *us[path] = NAN;  // a path with wrong results is never chosen
          wrongResults = true;
          failures.push_back(key + ": " + tunePathName(path) + " gave wrong results at " + formatBytes(plan.sizes[s]));
        }
      medians.push_back(m);
    }
    TunedWorld result{world.nRanks, world.link, world.gpus, findCrossover(medians, o.margin)};
    std::printf("%s", summaryTable(result, cc, medians).c_str());
    std::fflush(stdout);
    tuned.push_back(std::move(result));
  }

  for (const std::string& f : failures) std::fprintf(stderr, "symmem-tune: %s\n", f.c_str());
  if (tuned.empty()) {
    std::fprintf(stderr, "symmem-tune: no world size was measured; %s not written\n", o.out.c_str());
    return 3;
  }
  provenance.kernelDriver = nvidiaDriverVersion(fileText("/proc/driver/nvidia/version"));
  provenance.ncclVersion = ncclVersion;
  provenance.topologySource = topology.source();
  provenance.nodeGpuCount = topology.gpuCount();
  provenance.date = utcNow();
  provenance.commandLine = commandLineOf(argc, argv);
  provenance.method = methodLine(o, plan.sizes);
  const std::vector<Thresholds> entries = tunedEntries(provenance.capability, tuned);
  std::string error;
  const std::string text = tunedTableText(entries, provenanceMeta(provenance, tuned), o.out, &error);
  if (text.empty()) {
    std::fprintf(stderr, "symmem-tune: %s\n", error.c_str());
    return 5;
  }
  std::ofstream out(o.out);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "symmem-tune: cannot write %s\n", o.out.c_str());
    return 1;
  }
  std::printf("\nwrote %s:\n", o.out.c_str());
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("entry ", 0) == 0) std::printf("  %s\n", line.c_str());
  std::printf("use it: SYMMEM_TABLE=%s NCCL_TUNER_PLUGIN=symmem <your NCCL program>\n", o.out.c_str());
  if (!failures.empty())
    std::fprintf(stderr, "symmem-tune: %zu problem(s) above; the table holds only what was measured cleanly\n",
                 failures.size());
  return wrongResults ? 4 : failures.empty() ? 0 : 3;
}

// SPDX-License-Identifier: Apache-2.0
// symmem-tune: measures stock NCCL, NCCL forced to each ring/tree x ll/ll128/simple configuration and
// the symmetric one-shot and two-shot all-reduce in each variant on this machine's GPUs, and writes the
// table file the plugin reads (SYMMEM_TABLE): symmetric bands for the small sizes, NCCL bands above.
// docs/tuning.md has the method and the options.
//
// The parent never initialises CUDA: it checks the machine from the topology (NVML), loads NCCL with
// dlopen, then for each world size forks one set of rank processes for stock NCCL and the kernels and
// one per NCCL configuration (tools/tune/measure.h), and reads their medians back from shared memory.
// The choice of bands is tools/tune/bands.h, a pure function.
#include <algorithm>
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
#include "core/machine_fingerprint.h"
#include "core/table_file.h"
#include "plugin/process/process.h"
#include "plugin/process/table_in_force.h"
#include "tools/common/nccl_library.h"
#include "tools/common/output_file.h"
#include "tools/common/rank_rendezvous.h"
#include "tools/common/version_text.h"
#include "tools/tune/bands.h"
#include "tools/tune/crossover.h"
#include "tools/tune/csv.h"
#include "tools/tune/install.h"
#include "tools/tune/measure.h"
#include "tools/tune/options.h"
#include "tools/tune/plan.h"
#include "tools/tune/summary.h"
#include "tools/tune/table.h"
#include "topology/discover.h"
#include "topology/fingerprint.h"
#include "topology/topology_file.h"

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
  std::string variants;
  for (SymVariant v : o.variants) variants.append(variants.empty() ? "" : ",").append(symVariantName(v));
  std::string configs = o.ncclConfigs == NcclConfigSet::Default ? "default"
                        : o.ncclConfigs == NcclConfigSet::All   ? "all"
                                                                : "";
  if (o.ncclConfigs == NcclConfigSet::List)
    for (TunePath p : o.ncclConfigList) configs.append(configs.empty() ? "" : ",").append(tunePathHeading(p));
  if (configs.empty()) configs = "none";
  return "CUDA graphs of " + std::to_string(o.callsPerBatch) + " calls (fewer above 256KiB), median of " +
         std::to_string(o.rounds) + " rounds x " + std::to_string(o.batchesPerRound) + " replays per path, " +
         std::string(dataTypeName(o.dtype)) + " sum in place, sizes " + formatBytes(sizes.front()) + "-" +
         formatBytes(sizes.back()) + " x" + std::to_string(o.sizeStep) + ", variants " +
         (variants.empty() ? "none" : variants) + ", NCCL configs " + configs + ", simplest path within a margin of " +
         margin + " of the fastest";
}

template <class T>
T* mapShared() {
  void* mem = harness::mapSharedBetweenRanks(sizeof(T));
  return mem == nullptr ? nullptr : new (mem) T();
}

// One set of forked ranks and what it left in its report.
struct RankSetRun {
  int code = 0;
  TuneRankReport* report = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  const TuneArgsResult parsed = parseTuneArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.ok()) {
    std::fprintf(stderr, "symmem-tune: %s\n", parsed.error.c_str());
    if (parsed.error.find("--help") == std::string::npos)
      std::fprintf(stderr, "symmem-tune --help lists the options\n");
    return 2;
  }
  TuneOptions o = parsed.options;
  if (o.help) {
    std::printf("%s", tuneUsage().c_str());
    return 0;
  }
  // The machine planned for: the one a topology file describes (--topo, planning only), else this node
  // as the plugin sees it; --cc gives its GPUs' capability.
  Topology topology;
  if (!o.topoFiles.empty()) {
    Expected<Topology> loaded = loadTopologyFiles(o.topoFiles);
    if (!loaded) {
      std::fprintf(stderr, "symmem-tune: --topo: %s\n", loaded.error().c_str());
      return 2;
    }
    topology = std::move(loaded).value();
  } else {
    topology = symmem::Process::get().topology();
  }
  if (o.cc)
    for (int g = 0; g < topology.gpuCount(); ++g) topology.gpu(g).capability = *o.cc;
  // The machine the table is for; --install names the file after it, where the plugin looks.
  const MachineFingerprint machine = fingerprintOf(topology, thisDriverMajor());
  if (o.install != TuneInstall::None) {
    std::string error;
    o.out = tuneInstallPath(o.install, symmem::Process::get().settings(), machine, &error);
    if (o.out.empty()) {
      std::fprintf(stderr, "symmem-tune: %s\n", error.c_str());
      return 2;
    }
  }
  // Before the measurement, which can take an hour, not after it.
  if (const std::string why = tuneOutputProblem(o.out); !o.planOnly && !why.empty()) {
    std::fprintf(stderr, "symmem-tune: cannot write --out %s: %s\n", o.out.c_str(), why.c_str());
    return 2;
  }
  if (const std::string why = o.csv.empty() ? "" : tuneOutputProblem(o.csv); !o.planOnly && !why.empty()) {
    std::fprintf(stderr, "symmem-tune: cannot write --csv %s: %s\n", o.csv.c_str(), why.c_str());
    return 2;
  }
  // Two spellings of one file ("./x.txt", "x.txt", a link): the table would replace the CSV.
  if (!o.csv.empty() && sameOutputFile(o.csv, o.out)) {
    std::fprintf(stderr, "symmem-tune: --csv %s and --out %s are the same file\n", o.csv.c_str(), o.out.c_str());
    return 2;
  }

  // Everything that can stop the run is checked here, before any fork and without CUDA.
  const TunePlan plan = planTuning(topology, o);
  if (!plan.ok()) {
    std::fprintf(stderr, "%s\n", plan.error.c_str());
    return 1;
  }
  const NcclLibrary nccl = loadNcclLibrary(o.ncclLibrary);
  if (!nccl.ok() && o.planOnly) {
    // A plan needs no NCCL (one made for another machine, on a laptop, least of all): say what the
    // measurement will need.
    std::printf("%s  NCCL: none here (%s); the measurement needs NCCL 2.x (--nccl-lib PATH)\n",
                describePlan(plan, topology, o).c_str(), nccl.error.c_str());
    return 0;
  }
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

  // Stock NCCL must be measured as stock: no tuner plugin (ours would route the small sizes to our kernels)
  // and no forced algorithm or protocol (the NCCL configurations set those in their own rank processes).
  for (const char* name : {"NCCL_TUNER_PLUGIN", "NCCL_ALGO", "NCCL_PROTO"})
    if (const char* value = std::getenv(name)) {
      std::fprintf(stderr, "symmem-tune: %s=%s is ignored while measuring stock NCCL\n", name, value);
      unsetenv(name);
    }
  // As symmem-bench: NVLink SHARP (multicast) stays off unless the user sets it.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  // A plan from a topology file has no bus ids: ranks then use the index, counted as nvidia-smi does.
  setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);

  const auto start = std::chrono::steady_clock::now();
  const int stepsTotal = plan.steps(o.rounds);
  std::vector<TunedWorld> tuned;
  std::vector<std::string> failures;  // what leaves a world or a path out of the table
  std::vector<std::string> notes;     // NCCL configurations that were not available: not failures
  TuneProvenance provenance;
  bool wrongResults = false;
  int stepsBefore = 0;
  for (const TuneWorld& world : plan.worlds) {
    const std::string key = "ranks=" + std::to_string(world.nRanks);
    const int sizeCount = static_cast<int>(plan.sizes.size());
    // One set of ranks: stock NCCL with the kernels, or one NCCL configuration alone.
    auto runSet = [&](TunePath ncclPath, const std::vector<TunePath>& symmetricPaths) {
      RankSetRun run;
      harness::RankRendezvous* rendezvous = harness::mapRendezvous();
      run.report = mapShared<TuneRankReport>();
      if (rendezvous == nullptr || run.report == nullptr) {
        std::fprintf(stderr, "symmem-tune: cannot map memory shared with the ranks\n");
        std::exit(1);
      }
      TuneRankJob job;
      job.world = &world;
      job.options = &o;
      job.sizes = &plan.sizes;
      job.nccl = &nccl;
      job.rendezvous = rendezvous;
      job.report = run.report;
      job.ncclPath = ncclPath;
      job.symmetricPaths = symmetricPaths;
      job.stepsBefore = stepsBefore;
      job.stepsTotal = stepsTotal;
      job.start = start;
      run.code = harness::runForkedRanks(
          world.nRanks, "symmem-tune", o.timeoutSec, [&](int rank) { return measureTuneRank(job, rank); }, true);
      stepsBefore += sizeCount * static_cast<int>(job.paths().size()) * o.rounds;
      return run;
    };
    auto whyFailed = [](const RankSetRun& run) {
      return run.report->error[0]                ? std::string(run.report->error)
             : run.code == harness::kRanksNotRun ? std::string("the ranks could not be run (above)")
             : run.code == 124                   ? std::string("the ranks ran past --timeout-s")
                                                 : "a rank exited with " + std::to_string(run.code);
    };

    TunedWorld result;
    result.nRanks = world.nRanks;
    result.link = world.link;
    result.gpus = world.gpus;
    result.paths = world.paths();
    result.times.resize(plan.sizes.size());
    for (size_t s = 0; s < plan.sizes.size(); ++s) result.times[s].bytes = plan.sizes[s];
    // The report's columns of `paths` into the world's times: sizes not done stay NaN; a path that gave
    // a wrong element at a size gets NaN there (it is never chosen).
    auto take = [&](const RankSetRun& run, const std::vector<TunePath>& paths) {
      const int done = std::clamp(run.report->sizesDone, 0, sizeCount);
      for (int s = 0; s < done; ++s)
        for (TunePath p : paths) {
          const auto c = static_cast<size_t>(tunePathIndex(p));
          SizeTimes& t = result.times[static_cast<size_t>(s)];
          if (run.report->wrong[s][c] != 0) {
            wrongResults = true;
            failures.push_back(key + ": " + tunePathLabel(p) + " gave wrong results at " +
                               formatBytes(plan.sizes[static_cast<size_t>(s)]));
            continue;
          }
          t.medianUs[c] = run.report->medianUs[s][c];
          t.minUs[c] = run.report->minUs[s][c];
          t.maxUs[c] = run.report->maxUs[s][c];
        }
      return done;
    };

    const RankSetRun stock = runSet(TunePath::Nccl, world.symmetricPaths);
    if (stock.code != 0) {
      failures.push_back(key + ": " + whyFailed(stock));
      stepsBefore += sizeCount * static_cast<int>(world.ncclConfigs.size()) * o.rounds;  // not run
      continue;
    }
    const TuneRankReport* report = stock.report;
    const ComputeCapability cc{report->ccMajor[0], report->ccMinor[0]};
    bool sameCc = true;
    for (int r = 1; r < world.nRanks; ++r)
      sameCc = sameCc && report->ccMajor[r] == cc.major && report->ccMinor[r] == cc.minor;
    if (!sameCc || (provenance.capability.known() && provenance.capability != cc)) {
      failures.push_back(key + ": the GPUs report different compute capabilities");
      stepsBefore += sizeCount * static_cast<int>(world.ncclConfigs.size()) * o.rounds;
      continue;
    }
    if (!provenance.capability.known()) {
      provenance.capability = cc;
      provenance.gpuName = report->deviceName;
      provenance.cudaRuntimeVersion = report->cudaRuntimeVersion;
      provenance.cudaDriverVersion = report->cudaDriverVersion;
    }
    std::vector<TunePath> stockPaths = {TunePath::Nccl};
    stockPaths.insert(stockPaths.end(), world.symmetricPaths.begin(), world.symmetricPaths.end());
    take(stock, stockPaths);

    for (TunePath config : world.ncclConfigs) {
      const RankSetRun run = runSet(config, {});
      const int done = take(run, {config});
      if (done >= sizeCount) continue;
      const std::string from = formatBytes(plan.sizes[static_cast<size_t>(done)]);
      if (run.code == 0)
        notes.push_back(key + ": " + tunePathLabel(config) + " refused at " + from + " (" + run.report->refusal +
                        "): not available from there on");
      else
        notes.push_back(key + ": " + tunePathLabel(config) + " not available from " + from + " (" + whyFailed(run) +
                        ")");
    }

    result.bands = chooseBands(result.times, world.nRanks, o.margin);
    std::printf("%s", summaryTable(result, cc).c_str());
    std::fflush(stdout);
    tuned.push_back(std::move(result));
  }

  for (const std::string& f : notes) std::fprintf(stderr, "symmem-tune: note: %s\n", f.c_str());
  for (const std::string& f : failures) std::fprintf(stderr, "symmem-tune: %s\n", f.c_str());
  if (tuned.empty()) {
    std::fprintf(stderr, "symmem-tune: no world size was measured; %s not written\n", o.out.c_str());
    return 3;
  }
  // The data first: it is worth keeping even when the table cannot be written.
  if (!o.csv.empty()) {
    if (const std::string e = writeFileByRename(o.csv, tuneCsvText(tuned, provenance.capability)); !e.empty()) {
      std::fprintf(stderr, "symmem-tune: %s\n", e.c_str());
      return 1;
    }
    std::printf("\nwrote %s (every median, one row per world, size and path)\n", o.csv.c_str());
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
  std::vector<std::string> meta = provenanceMeta(provenance, tuned);
  meta.push_back(machineLine(machine));
  const std::string text = tunedTableText(entries, meta, o.out, &error);
  if (text.empty()) {
    std::fprintf(stderr, "symmem-tune: %s\n", error.c_str());
    return 5;
  }
  if (const std::string e = writeFileByRename(o.out, text); !e.empty()) {
    std::fprintf(stderr, "symmem-tune: %s\n", e.c_str());
    return 1;
  }
  std::printf("\nwrote %s:\n", o.out.c_str());
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("entry ", 0) == 0 || line.rfind("sym ", 0) == 0 || line.rfind("band ", 0) == 0)
      std::printf("  %s\n", line.c_str());
  if (entries.size() < tuned.size())
    std::printf("  (a world where nothing was measured has no entry: it keeps the built-in one)\n");
  if (o.install != TuneInstall::None)
    std::printf("installed for this machine: NCCL_TUNER_PLUGIN=symmem <your NCCL program> uses it, no SYMMEM_TABLE\n");
  else
    std::printf("use it: SYMMEM_TABLE=%s NCCL_TUNER_PLUGIN=symmem <your NCCL program>\n", o.out.c_str());
  if (!failures.empty())
    std::fprintf(stderr, "symmem-tune: %zu problem(s) above; the table holds only what was measured cleanly\n",
                 failures.size());
  return wrongResults ? 4 : failures.empty() ? 0 : 3;
}

// SPDX-License-Identifier: Apache-2.0
// symmem-tune on CPU: its command line, the plan it makes from a topology (and the reasons it refuses
// to run), the table file it writes, what it prints, and the built binary's messages and exit codes.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/decision_table.h"
#include "core/symmetric_limits.h"
#include "core/table_file.h"
#include "tests/unit/temp_file.h"
#include "tools/nccl_library.h"
#include "tools/tune_options.h"
#include "tools/tune_plan.h"
#include "tools/tune_report.h"
#include "tools/tune_table.h"
#include "topology/topology_file.h"

namespace symmem {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

std::string fixture(const std::string& name) { return std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/" + name; }

TuneArgsResult parse(std::vector<std::string> args) { return parseTuneArgs(args); }

// ---- options ----------------------------------------------------------------------------------------

TEST(TuneOptions, DefaultsMeasureEveryPowerOfTwoFrom8BTo64MiB) {
  const TuneArgsResult r = parse({});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NEAR(r.options.margin, 0.05, 1e-12);
  EXPECT_EQ(r.options.out, "symmem-table.txt");
  const auto sizes = tuneSizes(r.options);
  ASSERT_EQ(sizes.size(), 24u);
  EXPECT_EQ(sizes.front(), 8u);
  EXPECT_EQ(sizes.back(), 64 * MiB);
  EXPECT_EQ(sizes[1], 16u);
}

TEST(TuneOptions, QuickTakesFewerSizesAndRepetitions) {
  const TuneArgsResult r = parse({"--quick"});
  ASSERT_TRUE(r.ok()) << r.error;
  const auto sizes = tuneSizes(r.options);
  EXPECT_EQ(sizes[1], 32u);
  EXPECT_EQ(sizes.size(), 12u);  // 8 B .. 32 MiB in x4 steps
  EXPECT_LT(r.options.rounds * r.options.batchesPerRound, 3 * 7);
  EXPECT_LT(r.options.callsPerBatch, 200);
  // An explicit count wins over --quick's, in either order.
  EXPECT_EQ(parse({"--reps", "9", "--quick"}).options.batchesPerRound, 9);
}

TEST(TuneOptions, ValuesAreParsed) {
  const TuneArgsResult r = parse({"--gpus", "2,3", "--ranks", "4,2", "--min", "1K", "--max", "1MiB", "--margin", "2.5%",
                                  "--out", "t.txt", "--dtype", "fp32", "--nccl-lib", "/opt/nccl/lib/libnccl.so.2"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.options.gpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(r.options.worldSizes, (std::vector<int>{2, 4}));
  EXPECT_EQ(r.options.minBytes, 1 * KiB);
  EXPECT_EQ(r.options.maxBytes, 1 * MiB);
  EXPECT_NEAR(r.options.margin, 0.025, 1e-12);
  EXPECT_EQ(r.options.out, "t.txt");
  EXPECT_EQ(tuneElementBytes(r.options), 4u);
  EXPECT_NEAR(parse({"--margin", "10"}).options.margin, 0.10, 1e-12);
}

TEST(TuneOptions, BadArgumentsSayWhatIsWrong) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"--frobnicate"}, "unknown option --frobnicate"},
      {{"--out"}, "--out needs a value"},
      {{"--gpus", "0,,1"}, "--gpus takes distinct GPU numbers"},
      {{"--gpus", "0,0"}, "--gpus takes distinct GPU numbers"},
      {{"--gpus", "-1"}, "--gpus takes distinct GPU numbers"},
      {{"--ranks", "1"}, "world sizes are 2..8"},
      {{"--ranks", "16"}, "world sizes are 2..8"},
      {{"--min", "3"}, "--min takes a power-of-two size"},
      {{"--max", "lots"}, "--max takes a power-of-two size"},
      {{"--min", "1M", "--max", "64K"}, "--min 1MiB is above --max 64KiB"},
      {{"--dtype", "fp32", "--min", "2"}, "smaller than one fp32 element"},
      {{"--margin", "50"}, "bad --margin '50': expected a percentage from 0 to below 50"},
      {{"--margin", "-1"}, "bad --margin '-1'"},
      {{"--margin", "five"}, "bad --margin 'five'"},
      {{"--reps", "0"}, "bad --reps '0': expected a whole number from 1 to 100000"},
      {{"--dtype", "fp8"}, "--dtype takes bf16, fp16 or fp32"},
  };
  for (const Case& c : cases) {
    const TuneArgsResult r = parse(c.args);
    EXPECT_FALSE(r.ok()) << c.args[0];
    EXPECT_NE(r.error.find(c.message), std::string::npos) << "got: " << r.error;
  }
}

TEST(TuneOptions, CallsPerGraphShrinkAboveQuarterMiB) {
  EXPECT_EQ(callsForSize(8, 200), 200);
  EXPECT_EQ(callsForSize(256 * KiB, 200), 200);
  EXPECT_EQ(callsForSize(1 * MiB, 200), 50);
  EXPECT_EQ(callsForSize(64 * MiB, 200), 10);
  EXPECT_EQ(callsForSize(64 * MiB, 4), 4);
}

// ---- plan ---------------------------------------------------------------------------------------------

Topology loadFixture(std::vector<std::string> files) {
  auto topo = loadTopologyFiles(files);
  EXPECT_TRUE(topo.ok()) << topo.error();
  return topo.ok() ? topo.value() : Topology();
}

TEST(TunePlan, EightGpuServerGetsTwoFourEightWithTheirLinks) {
  const Topology topo = loadFixture({fixture("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt")});
  const TunePlan plan = planTuning(topo, parse({}).options);
  ASSERT_TRUE(plan.ok()) << plan.error;
  ASSERT_EQ(plan.worlds.size(), 3u);
  EXPECT_EQ(plan.worlds[0].nRanks, 2);
  EXPECT_EQ(plan.worlds[0].gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(plan.worlds[0].link, LinkClass::PcieSameSwitch);
  EXPECT_EQ(plan.worlds[1].link, LinkClass::PcieSameRoot);
  EXPECT_EQ(plan.worlds[2].nRanks, 8);
  EXPECT_EQ(plan.worlds[2].link, LinkClass::PcieCrossSocket);
  EXPECT_EQ(plan.steps(3), 3 * 24 * 3 * 3);
  ASSERT_FALSE(plan.warnings.empty());
  EXPECT_NE(plan.warnings[0].find("P2P is not known"), std::string::npos);
  const std::string text = describePlan(plan, topo, parse({}).options);
  EXPECT_NE(text.find("ranks=8 on GPUs 0,1,2,3,4,5,6,7: link pcie-sys"), std::string::npos) << text;
}

TEST(TunePlan, ChosenGpusDecideTheWorldsAndTheirLink) {
  const Topology topo = loadFixture({fixture("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt")});
  const TunePlan plan = planTuning(topo, parse({"--gpus", "4,5,6"}).options);
  ASSERT_TRUE(plan.ok()) << plan.error;
  ASSERT_EQ(plan.worlds.size(), 2u);  // 2 and the count, 3
  EXPECT_EQ(plan.worlds[1].nRanks, 3);
  EXPECT_EQ(plan.worlds[1].gpus, (std::vector<int>{4, 5, 6}));
}

TEST(TunePlan, DefaultWorldSizes) {
  EXPECT_EQ(defaultWorldSizes(1), std::vector<int>{});
  EXPECT_EQ(defaultWorldSizes(2), (std::vector<int>{2}));
  EXPECT_EQ(defaultWorldSizes(3), (std::vector<int>{2, 3}));
  EXPECT_EQ(defaultWorldSizes(6), (std::vector<int>{2, 4, 6}));
  EXPECT_EQ(defaultWorldSizes(8), (std::vector<int>{2, 4, 8}));
  EXPECT_EQ(defaultWorldSizes(16), (std::vector<int>{2, 4, 8}));  // the kernels take at most 8 ranks
}

TEST(TunePlan, RefusesWithoutGpusWithOneGpuAndWithoutP2p) {
  const TunePlan none = planTuning(Topology(), parse({}).options);
  EXPECT_EQ(none.error.rfind("symmem-tune: no CUDA GPU found", 0), 0u) << none.error;

  const Topology two = loadFixture({fixture("rtx-5090-x2-wrx80-phb.topo.txt")});
  const TunePlan one = planTuning(two, parse({"--gpus", "1"}).options);
  EXPECT_NE(one.error.find("needs at least 2 GPUs"), std::string::npos) << one.error;
  const TunePlan missing = planTuning(two, parse({"--gpus", "0,2"}).options);
  EXPECT_NE(missing.error.find("--gpus names GPU2, but this machine has 2 GPUs"), std::string::npos) << missing.error;
  const TunePlan tooMany = planTuning(two, parse({"--ranks", "4"}).options);
  EXPECT_NE(tooMany.error.find("--ranks 4 needs 4 GPUs; 2 are chosen"), std::string::npos) << tooMany.error;

  // The 5090 pair reports GNS (GPU not supported) for P2P: the message names the pair.
  const Topology noP2p =
      loadFixture({fixture("rtx-5090-x2-wrx80-phb.topo.txt"), fixture("rtx-5090-x2-wrx80-phb.p2p-rw.txt")});
  const TunePlan refused = planTuning(noP2p, parse({}).options);
  EXPECT_NE(refused.error.find("no P2P between GPU0 and GPU1"), std::string::npos) << refused.error;
}

TEST(TunePlan, MixedCapabilitiesAreRefused) {
  std::vector<GpuInfo> gpus(2);
  gpus[0].index = 0;
  gpus[0].capability = {9, 0};
  gpus[1].index = 1;
  gpus[1].capability = {8, 0};
  Topology topo(gpus);
  topo.setPath(0, 1, PathKind::Pix);
  const TunePlan plan = planTuning(topo, parse({}).options);
  EXPECT_NE(plan.error.find("differ in compute capability (GPU0 is 9.0, GPU1 is 8.0)"), std::string::npos)
      << plan.error;
}

TEST(TunePlan, UnknownLinkIsRefused) {
  std::vector<GpuInfo> gpus(2);
  gpus[1].index = 1;
  const TunePlan plan = planTuning(Topology(gpus), parse({}).options);
  EXPECT_NE(plan.error.find("link class of GPUs 0,1 is unknown"), std::string::npos) << plan.error;
}

// ---- the table file --------------------------------------------------------------------------------

std::vector<TunedWorld> twoWorlds() {
  TunedWorld a{2, LinkClass::PcieSameSwitch, {0, 1}, {}};
  a.crossover.oneShotMaxBytes = 64 * KiB;
  a.crossover.twoShotMaxBytes = 1 * MiB;
  TunedWorld b{4, LinkClass::PcieSameRoot, {0, 1, 2, 3}, {}};  // nothing won: both paths off
  return {a, b};
}

TuneProvenance sampleProvenance() {
  TuneProvenance p;
  p.gpuName = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
  p.capability = {12, 0};
  p.kernelDriver = "580.95.05";
  p.cudaRuntimeVersion = 13000;
  p.cudaDriverVersion = 13000;
  p.ncclVersion = 22809;
  p.topologySource = "nvml";
  p.nodeGpuCount = 8;
  p.date = "2026-01-02T03:04:05Z";
  p.commandLine = "symmem-tune --quick --out 'my table#1.txt'";
  p.method = "CUDA graphs";
  return p;
}

TEST(TuneTable, WrittenTableReadsBackAndTheDecisionTableUsesIt) {
  const auto worlds = twoWorlds();
  const auto meta = provenanceMeta(sampleProvenance(), worlds);
  std::string error;
  const std::string text = tunedTableText(tunedEntries({12, 0}, worlds), meta, "t.txt", &error);
  ASSERT_FALSE(text.empty()) << error;
  EXPECT_NE(text.find("entry cc=12.0 link=pcie-switch ranks=2 oneshot=64KiB twoshot=1MiB\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("entry cc=12.0 link=pcie-root ranks=4 oneshot=0B twoshot=0B\n"), std::string::npos) << text;

  testing::TempFile file(text, "symmem-tune-table");
  ASSERT_TRUE(file.ok());
  const TableFileResult read = readTableFile(file.path());
  ASSERT_TRUE(read.ok()) << read.error;
  DecisionTable table = DecisionTable::builtIn();
  applyTableFile(read, table);
  const TableLookup two = table.thresholdsFor({12, 0}, LinkClass::PcieSameSwitch, 2);
  ASSERT_NE(two.entry, nullptr);
  EXPECT_EQ(two.entry->oneShotMaxBytes, 64 * KiB);
  EXPECT_EQ(two.entry->twoShotMaxBytes, 1 * MiB);
  const TableLookup four = table.thresholdsFor({12, 0}, LinkClass::PcieSameRoot, 4);
  ASSERT_NE(four.entry, nullptr);
  EXPECT_EQ(four.entry->oneShotMaxBytes, 0u);
  // A world size that was not measured keeps its built-in entry.
  EXPECT_EQ(table.thresholdsFor({12, 0}, LinkClass::PcieSameSwitch, 8).entry->oneShotMaxBytes,
            DecisionTable::builtIn().thresholdsFor({12, 0}, LinkClass::PcieSameSwitch, 8).entry->oneShotMaxBytes);
}

// A machine where one-shot wins up to 1 GiB at 8 ranks would need 24 GiB of buffer per GPU: the
// written entry is brought within what the setup takes, so the table still reads back.
TEST(TuneTable, EntriesStayWithinTheSymmetricLimits) {
  std::vector<TunedWorld> worlds(2);
  worlds[0].nRanks = 8;
  worlds[0].link = LinkClass::NvLink;
  worlds[0].crossover.oneShotMaxBytes = 1ull << 30;
  worlds[1].nRanks = 2;
  worlds[1].link = LinkClass::NvLink;
  worlds[1].crossover.oneShotMaxBytes = 1 * MiB;
  worlds[1].crossover.twoShotMaxBytes = 1ull << 30;
  const std::vector<Thresholds> entries = tunedEntries({12, 0}, worlds);
  ASSERT_EQ(entries.size(), 2u);
  for (const Thresholds& t : entries)
    EXPECT_EQ(symmetricLimitProblem(t.nRanks, t.oneShotMaxBytes, t.twoShotMaxBytes), "") << t.nRanks;
  EXPECT_EQ(entries[0].oneShotMaxBytes, 64 * MiB);  // the largest power of two within the cap
  EXPECT_EQ(entries[1].oneShotMaxBytes, 1 * MiB);   // untouched where it fits
  EXPECT_EQ(entries[1].twoShotMaxBytes, 256 * MiB);
  std::string error;
  EXPECT_NE(tunedTableText(entries, {}, "t.txt", &error), "") << error;
}

TEST(TuneTable, ProvenanceLinesNameTheMachineAndTheRun) {
  const auto meta = provenanceMeta(sampleProvenance(), twoWorlds());
  auto has = [&](const std::string& s) {
    for (const std::string& m : meta)
      if (m.find(s) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("gpu NVIDIA RTX PRO 6000 Blackwell Server Edition, capability 12.0, driver 580.95.05"));
  EXPECT_TRUE(has("cuda runtime 13.0, driver API 13.0, nccl 2.28.9"));
  EXPECT_TRUE(has("topology nvml, 8 GPUs; ranks=2 pcie-switch (GPUs 0,1) ranks=4 pcie-root (GPUs 0,1,2,3)"));
  EXPECT_TRUE(has("2026-01-02T03:04:05Z"));
  EXPECT_TRUE(has("method CUDA graphs"));
  // '#' would start a comment in the file: the command line keeps everything else.
  EXPECT_TRUE(has("command symmem-tune --quick --out 'my table 1.txt'"));
  // And the meta lines survive the file unchanged.
  const TableFileResult back = parseTableText(formatTable({}, meta), "m.txt");
  ASSERT_TRUE(back.ok()) << back.error;
  EXPECT_EQ(back.meta, meta);
}

TEST(TuneTable, VersionsAndDriverText) {
  EXPECT_EQ(ncclVersionText(22809), "2.28.9");
  EXPECT_EQ(ncclVersionText(21903), "2.19.3");
  EXPECT_EQ(ncclVersionText(2804), "2.8.4");
  EXPECT_EQ(cudaVersionText(13000), "13.0");
  EXPECT_EQ(cudaVersionText(12080), "12.8");
  EXPECT_EQ(
      nvidiaDriverVersion("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Wed Jan  8 19:43:54 UTC 2025\n"
                          "GCC version:  gcc version 12.3.0\n"),
      "570.86.15");
  EXPECT_EQ(nvidiaDriverVersion("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build\n"),
            "580.95.05");
  EXPECT_EQ(nvidiaDriverVersion(""), "");
  EXPECT_EQ(metaSafe("a\tb#c\n"), "a b c");
}

TEST(TuneTable, ATableThatDoesNotReadBackIsRefused) {
  Thresholds bad;
  bad.cc = {12, 0};
  bad.link = LinkClass::PcieSameSwitch;
  bad.nRanks = 2;
  bad.oneShotMaxBytes = 1 * MiB;
  bad.twoShotMaxBytes = 64 * KiB;  // below the one-shot limit: the file format forbids it
  std::string error;
  EXPECT_EQ(tunedTableText({bad}, {}, "bad.txt", &error), "");
  EXPECT_NE(error.find("does not read back"), std::string::npos) << error;
}

// ---- what it prints ------------------------------------------------------------------------------------

TEST(TuneReport, ProgressAndDurations) {
  EXPECT_EQ(durationText(42), "42s");
  EXPECT_EQ(durationText(185), "3m05s");
  EXPECT_EQ(durationText(3720), "1h02m");
  const std::string first = progressLine(0, 10, 0.4, 2, "nccl", 64 * KiB, 0, 3);
  EXPECT_EQ(first, "[1/10] ranks=2 nccl 64KiB (round 1/3), 0s elapsed");
  const std::string later = progressLine(4, 10, 40, 4, "two-shot", 8, 1, 3);
  EXPECT_EQ(later, "[5/10] ranks=4 two-shot 8B (round 2/3), 40s elapsed, about 1m00s left");
}

TEST(TuneReport, SummaryShowsEveryPathAndTheChoice) {
  std::vector<SizeMedians> medians = {{8, 20.0, 5.0, 9.0}, {16, 20.0, 30.0, 10.0}, {32, 20.0, 30.0, NAN}};
  TunedWorld world{2, LinkClass::NvLink, {0, 1}, findCrossover(medians)};
  const std::string text = summaryTable(world, {9, 0}, medians);
  EXPECT_NE(text.find("ranks=2 link=nvlink cc=9.0 (GPUs 0,1)"), std::string::npos) << text;
  EXPECT_NE(text.find("        8B        20.00         5.00         9.00  one-shot"), std::string::npos) << text;
  EXPECT_NE(text.find("       16B        20.00        30.00        10.00  two-shot"), std::string::npos) << text;
  EXPECT_NE(text.find("       32B        20.00        30.00            -  nccl"), std::string::npos) << text;
  EXPECT_NE(text.find("limits: one-shot up to 8B, two-shot up to 16B"), std::string::npos) << text;
}

// ---- the built binary --------------------------------------------------------------------------------

struct ToolRun {
  int exitCode = -1;
  std::string out;
};

ToolRun runTune(const std::string& args, const std::string& env = "") {
  const std::string cmd =
      "env -u SYMMEM_TOPO_FILE -u NCCL_TUNER_PLUGIN " + env + " '" + SYMMEM_TUNE_PATH + "' " + args + " 2>&1";
  ToolRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool has(const ToolRun& r, const std::string& s) { return r.out.find(s) != std::string::npos; }

bool machineHasGpuDevice() {
  struct stat st;
  return stat("/dev/nvidia0", &st) == 0 || stat("/dev/nvidiactl", &st) == 0;
}

TEST(TuneTool, NoGpuIsAClearErrorAndWritesNothing) {
  if (machineHasGpuDevice()) GTEST_SKIP() << "this machine has an NVIDIA device; the no-GPU path is not reachable";
  const std::string out = "/tmp/symmem-tune-test-no-gpu.txt";
  std::remove(out.c_str());
  const ToolRun r = runTune("--out " + out);
  EXPECT_EQ(r.exitCode, 1) << r.out;
  EXPECT_EQ(r.out.rfind("symmem-tune: no CUDA GPU found", 0), 0u) << r.out;
  struct stat st;
  EXPECT_NE(stat(out.c_str(), &st), 0) << "no table may be written";
}

TEST(TuneTool, BadArgumentsExitWithUsage) {
  const ToolRun r = runTune("--ranks 1");
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_TRUE(has(r, "symmem-tune: --ranks 1: world sizes are 2..8")) << r.out;
  EXPECT_TRUE(has(r, "symmem-tune --help lists the options")) << r.out;
  const ToolRun help = runTune("--help");
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_TRUE(has(help, "--margin"));
}

TEST(TuneTool, OneGpuNoP2pAndMissingNcclAreClearErrors) {
  testing::TempFile oneGpu("\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-63\t0\n", "symmem-tune-one-gpu");
  ASSERT_TRUE(oneGpu.ok());
  const ToolRun one = runTune("", "SYMMEM_TOPO_FILE=" + oneGpu.path());
  EXPECT_EQ(one.exitCode, 1) << one.out;
  EXPECT_TRUE(has(one, "symmem-tune: needs at least 2 GPUs; this machine has 1 (GPU0)")) << one.out;

  const ToolRun noP2p = runTune("", "SYMMEM_TOPO_FILE=" + fixture("rtx-5090-x2-wrx80-phb.topo.txt") + "," +
                                        fixture("rtx-5090-x2-wrx80-phb.p2p-rw.txt"));
  EXPECT_EQ(noP2p.exitCode, 1) << noP2p.out;
  EXPECT_TRUE(has(noP2p, "symmem-tune: no P2P between GPU0 and GPU1")) << noP2p.out;

  const ToolRun noNccl =
      runTune("--nccl-lib /nonexistent/libnccl.so.2", "SYMMEM_TOPO_FILE=" + fixture("rtx-5090-x2-wrx80-phb.topo.txt"));
  EXPECT_EQ(noNccl.exitCode, 1) << noNccl.out;
  EXPECT_TRUE(has(noNccl, "symmem-tune: cannot load NCCL (/nonexistent/libnccl.so.2)")) << noNccl.out;
  EXPECT_TRUE(has(noNccl,
                  "cannot open shared object file: No such file or directory. Install NCCL 2.x, put its lib "
                  "directory on LD_LIBRARY_PATH, or pass --nccl-lib PATH"))
      << noNccl.out;
}

TEST(TuneNcclLibrary, SaysWhyALibraryCannotServe) {
  const NcclLibrary missing = loadNcclLibrary("/nonexistent/libnccl.so.2");
  EXPECT_EQ(missing.handle, nullptr);
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.error.rfind("cannot load NCCL (/nonexistent/libnccl.so.2): ", 0), 0u) << missing.error;

  // Loads, but is no NCCL: the first entry point it lacks is named.
  NcclLibrary notNccl = loadNcclLibrary("libc.so.6");
  EXPECT_NE(notNccl.handle, nullptr);
  EXPECT_EQ(notNccl.error, "libc.so.6 has no ncclGetVersion: not a usable NCCL 2.x");
  unloadNcclLibrary(notNccl);
  EXPECT_EQ(notNccl.handle, nullptr);
  EXPECT_FALSE(notNccl.ok());
}

TEST(TuneNcclLibrary, ResolvesEveryEntryPointOfARealNccl) {
  NcclLibrary nccl = loadNcclLibrary("libnccl.so.2");
  if (nccl.handle == nullptr) GTEST_SKIP() << "no libnccl.so.2 on the library path";
  ASSERT_TRUE(nccl.ok()) << nccl.error;
  ASSERT_NE(nccl.getVersion, nullptr);
  ASSERT_NE(nccl.getErrorString, nullptr);
  int code = 0;
  ASSERT_EQ(nccl.getVersion(&code), ncclSuccess);
  EXPECT_EQ(ncclVersionText(code).rfind("2.", 0), 0u) << code;
  EXPECT_STREQ(nccl.getErrorString(ncclSuccess), "no error");
  unloadNcclLibrary(nccl);
  EXPECT_EQ(nccl.getVersion, nullptr);
}

TEST(TuneTool, PlanPrintsWhatWouldBeMeasured) {
  void* nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (nccl == nullptr) GTEST_SKIP() << "no libnccl.so.2 on the library path";
  dlclose(nccl);
  const ToolRun r =
      runTune("--plan --quick --ranks 2,8",
              "SYMMEM_TOPO_FILE=" + fixture("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt"));
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r, "ranks=2 on GPUs 0,1: link pcie-switch")) << r.out;
  EXPECT_TRUE(has(r, "ranks=8 on GPUs 0,1,2,3,4,5,6,7: link pcie-sys")) << r.out;
  EXPECT_TRUE(has(r, "x4 steps (12 sizes)")) << r.out;
  EXPECT_TRUE(has(r, "NCCL 2.")) << r.out;
}

}  // namespace
}  // namespace symmem

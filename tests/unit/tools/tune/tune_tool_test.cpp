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
#include "tests/unit/tool_run.h"
#include "tools/common/nccl_library.h"
#include "tools/tune/bands.h"
#include "tools/tune/options.h"
#include "tools/tune/plan.h"
#include "tools/tune/summary.h"
#include "tools/tune/table.h"
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
  // One vocabulary with core and NCCL: its names and the short ones are the same types.
  EXPECT_EQ(parse({"--dtype", "float"}).options.dtype, DataType::Float32);
  EXPECT_EQ(parse({"--dtype", "half"}).options.dtype, DataType::Float16);
  EXPECT_EQ(parse({"--dtype", "bfloat16"}).options.dtype, DataType::Bfloat16);
  EXPECT_EQ(parse({"--dtype", "bf16"}).options.dtype, DataType::Bfloat16);
  EXPECT_EQ(parse({}).options.dtype, DataType::Bfloat16);
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
      {{"--dtype", "fp32", "--min", "2"}, "smaller than one float element"},
      {{"--margin", "50"}, "bad --margin '50': expected a percentage from 0 to below 50"},
      {{"--margin", "-1"}, "bad --margin '-1'"},
      {{"--margin", "five"}, "bad --margin 'five'"},
      {{"--reps", "0"}, "bad --reps '0': expected a whole number from 1 to 100000"},
      {{"--dtype", "fp8"}, "bad --dtype 'fp8': expected bfloat16 (or bf16), half (fp16) or float (fp32)"},
      {{"--dtype", "bfloat61"}, "(did you mean bfloat16?)"},
      {{"--dtype", "double"}, "(the measured all-reduce has no double kernel)"},
  };
  for (const Case& c : cases) {
    const TuneArgsResult r = parse(c.args);
    EXPECT_FALSE(r.ok()) << c.args[0];
    EXPECT_NE(r.error.find(c.message), std::string::npos) << "got: " << r.error;
  }
}

TEST(TuneOptions, VariantsAndNcclConfigsNarrowWhatIsTimed) {
  const TuneOptions defaults = parse({}).options;
  EXPECT_EQ(defaults.variants,
            (std::vector<SymVariant>{SymVariant::Push, SymVariant::Pull, SymVariant::Staged, SymVariant::Halves}));
  EXPECT_EQ(defaults.ncclConfigs, NcclConfigSet::Default);
  EXPECT_EQ(symmetricPathsFor(defaults),
            (std::vector<TunePath>{TunePath::OneShotPush, TunePath::OneShotPull, TunePath::OneShotStaged,
                                   TunePath::OneShotHalves, TunePath::TwoShotPush, TunePath::TwoShotPull,
                                   TunePath::TwoShotStaged, TunePath::TwoShotHalves}));
  // LL128 only where the link is NVLink: on PCIe NCCL leaves it off, a band for it would not apply.
  const std::vector<TunePath> pcie = {TunePath::NcclRingLL, TunePath::NcclRingSimple, TunePath::NcclTreeLL,
                                      TunePath::NcclTreeSimple};
  for (LinkClass link : {LinkClass::PcieSameSwitch, LinkClass::PcieSameRoot, LinkClass::PcieCrossSocket})
    EXPECT_EQ(ncclConfigsFor(defaults, link), pcie) << linkClassName(link);
  EXPECT_EQ(ncclConfigsFor(defaults, LinkClass::NvLink).size(), 6u);
  const TuneOptions all = parse({"--nccl-configs", "all"}).options;
  EXPECT_EQ(ncclConfigsFor(all, LinkClass::PcieCrossSocket).size(), 6u) << "all: LL128 on PCIe too";
  EXPECT_TRUE(ncclConfigsFor(parse({"--nccl-configs", "none"}).options, LinkClass::NvLink).empty());

  const TuneArgsResult r =
      parse({"--variants", "staged,push", "--nccl-configs", "tree/simple,Ring/LL", "--csv", "m.csv"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.options.variants, (std::vector<SymVariant>{SymVariant::Push, SymVariant::Staged}));
  EXPECT_EQ(symmetricPathsFor(r.options), (std::vector<TunePath>{TunePath::OneShotPush, TunePath::OneShotStaged,
                                                                 TunePath::TwoShotPush, TunePath::TwoShotStaged}));
  EXPECT_EQ(ncclConfigsFor(r.options, LinkClass::PcieSameSwitch),
            (std::vector<TunePath>{TunePath::NcclRingLL, TunePath::NcclTreeSimple}))
      << "a list is taken as given, LL128 too, in the candidates' order";
  EXPECT_EQ(ncclConfigsFor(parse({"--nccl-configs", "ring/ll128"}).options, LinkClass::PcieSameSwitch),
            (std::vector<TunePath>{TunePath::NcclRingLL128}));
  EXPECT_EQ(r.options.csv, "m.csv");

  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case bad[] = {
      {{"--variants", "push,push"}, "bad --variants 'push,push': 'push' named twice"},
      {{"--variants", "push,"}, "bad --variants 'push,': empty name"},
      {{"--variants", "fast"}, "bad --variants 'fast': no variant 'fast'"},
      {{"--nccl-configs", "ring"}, "bad --nccl-configs 'ring': no configuration 'ring'"},
      {{"--nccl-configs", "nvls/simple"}, "no configuration 'nvls/simple'"},
      {{"--nccl-configs", "ring/ll,RING/LL"}, "'ring/ll' named twice"},
      {{"--nccl-configs", ""}, "bad --nccl-configs '': no configuration ''"},
      {{"--csv", ""}, "--csv needs a file name"},
      {{"--csv", "t.txt", "--out", "t.txt"}, "--csv and --out name the same file (t.txt)"},
  };
  for (const Case& c : bad) {
    const TuneArgsResult e = parse(c.args);
    EXPECT_FALSE(e.ok()) << c.args[0];
    EXPECT_NE(e.error.find(c.message), std::string::npos) << "got: " << e.error;
  }
}

TEST(TuneOptions, TopoAndCcPlanForAnotherMachineOnly) {
  const TuneArgsResult r = parse({"--plan", "--topo", "a.topo.txt,a.p2p-rw.txt", "--cc", "sm_120"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.options.topoFiles, (std::vector<std::string>{"a.topo.txt", "a.p2p-rw.txt"}));
  ASSERT_TRUE(r.options.cc.has_value());
  EXPECT_EQ(r.options.cc->str(), "12.0");
  EXPECT_EQ(parse({"--topo", "a.txt"}).error,
            "--topo plans only (add --plan): a measurement runs on this machine's own GPUs");
  EXPECT_EQ(parse({"--cc", "9.0"}).error,
            "--cc plans only (add --plan): a measurement runs on this machine's own GPUs");
  EXPECT_EQ(parse({"--plan", "--topo", "a.txt,"}).error, "--topo takes FILE or FILE,P2P_FILE, not 'a.txt,'");
  EXPECT_EQ(parse({"--plan", "--topo", ""}).error, "--topo takes FILE or FILE,P2P_FILE, not ''");
  EXPECT_EQ(parse({"--plan", "--cc", "twelve"}).error, std::string("--cc 'twelve': ") + kCapabilityForms);
  EXPECT_EQ(parse({"--plan", "--topo", "a.txt", "--install"}).error,
            "--install writes this machine's table; --topo plans for another machine");
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
  // Per world: stock NCCL, four configs (no LL128 on PCIe), six flat kernels, and the two halves kernels
  // where the ranks form two halves of 2 or more (4 and 8 ranks; 2 ranks share one switch).
  EXPECT_EQ(plan.worlds[0].paths().size(), 11u);
  EXPECT_EQ(plan.worlds[1].paths().size(), 13u);
  EXPECT_EQ(plan.worlds[2].paths().size(), 13u);
  for (const TuneWorld& w : plan.worlds) EXPECT_EQ(w.rankSets(), 5);
  EXPECT_EQ(plan.steps(3), 24 * (11 + 13 + 13) * 3);
  ASSERT_EQ(plan.warnings.size(), 2u);
  EXPECT_NE(plan.warnings[0].find("P2P is not known"), std::string::npos);
  EXPECT_EQ(plan.warnings[1],
            "halves skipped at 2 ranks: no halves on these GPUs (every pair shares one PCIe switch: there is no middle "
            "to cross); --halves declares them");
  const std::string text = describePlan(plan, topo, parse({}).options);
  EXPECT_NE(text.find("ranks=8 on GPUs 0,1,2,3,4,5,6,7: link pcie-sys; paths stock ring/ll ring/simple tree/ll "
                      "tree/simple 1s-push 1s-pull 1s-staged 1s-halves 2s-push 2s-pull 2s-staged 2s-halves\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ranks=2 on GPUs 0,1: link pcie-switch; paths stock ring/ll ring/simple tree/ll tree/simple "
                      "1s-push 1s-pull 1s-staged 2s-push 2s-pull 2s-staged\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  note: halves skipped at 2 ranks: no halves on these GPUs"), std::string::npos) << text;
  EXPECT_NE(text.find("  estimate: about "), std::string::npos) << text;
  EXPECT_NE(text.find(" of measuring (15 set(s) of ranks, 2664 timed steps"), std::string::npos) << text;
}

// A plan for `n` NVLink GPUs (no topology file needed).
TunePlan nvlinkPlan(int n, const std::vector<std::string>& args) {
  std::vector<GpuInfo> gpus(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) gpus[static_cast<size_t>(i)].index = i, gpus[static_cast<size_t>(i)].capability = {9, 0};
  Topology topo(gpus);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b) topo.setPath(a, b, PathKind::NvLink);
  const TunePlan plan = planTuning(topo, parse(args).options);
  EXPECT_TRUE(plan.ok()) << plan.error;
  return plan;
}

double estimateFor(int n, const std::vector<std::string>& args) {
  return estimateTuneSeconds(nvlinkPlan(n, args), parse(args).options);
}

// The halves candidates run where the ranks form two halves of 2 or more; elsewhere one note says why
// and they are neither measured nor chosen. --halves declares them where the topology has none.
TEST(TunePlan, HalvesAreTimedOnlyWhereTheRanksHaveThem) {
  const TunePlan flat = nvlinkPlan(4, {});
  ASSERT_EQ(flat.worlds.size(), 2u);
  for (const TuneWorld& w : flat.worlds) {
    EXPECT_FALSE(w.halves.ok);
    for (TunePath p : w.paths()) EXPECT_NE(tunePathHeading(p).substr(3), "halves") << tunePathName(p);
  }
  ASSERT_EQ(flat.warnings.size(), 3u);  // P2P not known, then one line per world
  EXPECT_NE(flat.warnings[1].find("halves skipped at 2 ranks: no halves on these GPUs"), std::string::npos);
  EXPECT_EQ(flat.warnings[2],
            "halves skipped at 4 ranks: no halves on these GPUs (GPU 0 and GPU 1 are joined by NVLink: halves are "
            "for PCIe-only communicators); --halves declares them");

  const TunePlan declared = nvlinkPlan(4, {"--halves", "0,1,0,1"});
  ASSERT_EQ(declared.worlds.size(), 1u) << "without --ranks, the declared world alone";
  const TuneWorld& w = declared.worlds[0];
  EXPECT_EQ(w.nRanks, 4);
  ASSERT_TRUE(w.halves.ok);
  EXPECT_TRUE(w.halves.declared);
  EXPECT_EQ(w.halves.halfOf, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(w.symmetricPaths.back(), TunePath::TwoShotHalves);
  EXPECT_EQ(w.symmetricPaths.size(), 8u);

  // Asked for alone where there are none: nothing symmetric left to time, still said once.
  const TunePlan only = nvlinkPlan(2, {"--variants", "halves"});
  ASSERT_EQ(only.worlds.size(), 1u);
  EXPECT_TRUE(only.worlds[0].symmetricPaths.empty());
  ASSERT_EQ(only.warnings.size(), 2u);
  EXPECT_NE(only.warnings[1].find("halves skipped at 2 ranks: no halves on these GPUs"), std::string::npos);
}

TEST(TuneOptions, HalvesDeclareTheWorldOfTheirLength) {
  TuneArgsResult r = parse({"--halves", "0,0,1,1"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.options.halves, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(r.options.worldSizes, std::vector<int>{4});
  r = parse({"--ranks", "2,4,8", "--halves", "0,0,1,1"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.options.worldSizes, (std::vector<int>{2, 4, 8}));
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"--halves", "0,1"}, "bad --halves '0,1': halves need an even number of ranks from 4 to 8, not 2"},
      {{"--halves", "1,0,1,0"}, "bad --halves '1,0,1,0': rank 0 must be in half 0"},
      {{"--halves", "0,0,1"}, "bad --halves '0,0,1': halves need an even number of ranks from 4 to 8, not 3"},
      {{"--ranks", "2,8", "--halves", "0,0,1,1"}, "--halves names 4 ranks; --ranks has no world of 4"},
      {{"--halves", "0,0,1,1", "--variants", "push,pull"},
       "--halves declares halves for the halves variant, which --variants leaves out"},
      {{"--halves"}, "--halves needs a value"},
  };
  for (const Case& c : cases) {
    const TuneArgsResult bad = parse(c.args);
    EXPECT_FALSE(bad.ok()) << c.args.back();
    EXPECT_NE(bad.error.find(c.message), std::string::npos) << "got: " << bad.error << "\nwanted: " << c.message;
  }
}

TEST(TunePlan, TheEstimateGrowsWithTheWork) {
  const double base = estimateFor(2, {});
  EXPECT_GT(base, 0);
  EXPECT_LT(estimateFor(2, {"--quick"}), base);
  EXPECT_LT(estimateFor(2, {"--max", "1M"}), base) << "fewer sizes";
  EXPECT_GT(estimateFor(2, {"--rounds", "6"}), base);
  EXPECT_GT(estimateFor(2, {"--reps", "20"}), base);
  EXPECT_GT(estimateFor(2, {"--iters", "400"}), base);
  EXPECT_LT(estimateFor(2, {"--nccl-configs", "none"}), base) << "fewer sets of ranks";
  EXPECT_LT(estimateFor(2, {"--variants", "push"}), base) << "fewer kernels";
  EXPECT_GT(estimateFor(4, {"--ranks", "2,4"}), base) << "more worlds";
  // Larger messages cost more per call; PCIe more than NVLink.
  for (uint64_t b = 8; b < (64ull << 20); b *= 2) {
    EXPECT_LT(guessedCallUs(b, LinkClass::NvLink), guessedCallUs(b * 2, LinkClass::NvLink)) << b;
    EXPECT_LT(guessedCallUs(b, LinkClass::NvLink), guessedCallUs(b, LinkClass::PcieSameSwitch)) << b;
  }
}

TEST(TunePlan, TheEstimateIsPlausible) {
  // What the previous version timed on 2x H200 (stock NCCL, one-shot and two-shot push, 24 sizes, 3
  // rounds of 7 replays): about 6 s of measuring, 10 s in all. The model, for that work, within a factor
  // of three of the 10 s; the default run (7 sets of ranks, 13 paths) then takes about 4x as long.
  const double previous = estimateFor(2, {"--variants", "push", "--nccl-configs", "none"});
  EXPECT_GT(previous, 10.0 / 3) << previous;
  EXPECT_LT(previous, 10.0 * 3) << previous;
  const double full = estimateFor(2, {});
  EXPECT_GT(full, 2 * previous);
  EXPECT_LT(full, 10 * previous);
  // Every set of ranks pays at least its start.
  EXPECT_GE(full, nvlinkPlan(2, {}).worlds[0].rankSets() * kRankSetStartSec);
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
  TunedWorld a{2, LinkClass::PcieSameSwitch, {0, 1}, {}, {}, {}};
  a.bands.measured = true;
  a.bands.symBands = {{64 * KiB, SymAlgo::OneShot, SymVariant::Push}, {1 * MiB, SymAlgo::TwoShot, SymVariant::Push}};
  TunedWorld b{4, LinkClass::PcieSameRoot, {0, 1, 2, 3}, {}, {}, {}};  // NCCL won everywhere: both paths off
  b.bands.measured = true;
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

// What the bands make of medians where one-shot wins up to 1 GiB (8 ranks: cut to fit the buffers) and
// where variants and NCCL configs win: the written entries stay within what the setup takes and read back.
TEST(TuneTable, EntriesStayWithinTheSymmetricLimitsAndReadBack) {
  std::vector<SizeTimes> times;
  for (uint64_t b = 1 * MiB; b <= 1024 * MiB; b *= 2) {
    SizeTimes t;
    t.bytes = b;
    t.setMedian(TunePath::Nccl, 100 + static_cast<double>(b) / 1e4);
    t.setMedian(TunePath::NcclTreeSimple, 100 + static_cast<double>(b) / 2e4);
    t.setMedian(TunePath::OneShotPull, 5 + static_cast<double>(b) / 2e4);
    t.setMedian(TunePath::TwoShotStaged, b > 8 * MiB ? 4 + static_cast<double>(b) / 3e4 : 1e9);
    times.push_back(t);
  }
  std::vector<TunedWorld> worlds(2);
  worlds[0].nRanks = 8;
  worlds[1].nRanks = 2;
  for (TunedWorld& w : worlds) {
    w.link = LinkClass::NvLink;
    w.bands = chooseBands(times, w.nRanks);
  }
  const std::vector<Thresholds> entries = tunedEntries({12, 0}, worlds);
  ASSERT_EQ(entries.size(), 2u);
  for (const Thresholds& t : entries) {
    EXPECT_EQ(symmetricLimitProblem(t.nRanks, t.oneShotMaxBytes, t.twoShotMaxBytes), "") << t.nRanks;
    EXPECT_GT(t.numSymBands, 0) << t.nRanks;
    EXPECT_GT(t.numBands, 0) << t.nRanks << ": the sizes cut from the symmetric range get tree/simple";
  }
  std::string error;
  const std::string text = tunedTableText(entries, {}, "t.txt", &error);
  ASSERT_NE(text, "") << error;
  EXPECT_NE(text.find("sym cc=12.0 link=nvlink ranks=8 upto=8MiB algo=oneshot variant=pull\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("band cc=12.0 link=nvlink ranks=8 coll=allreduce upto=1GiB algo=tree proto=simple channels=0\n"),
            std::string::npos)
      << text;
}

TEST(TuneTable, AChangedNcclBandIsCaughtByTheReadBack) {
  // Bands out of order: the file reads them back sorted, so the entry that comes back is not the one
  // written, and the check says so instead of writing a table that means something else.
  Thresholds t;
  t.cc = {12, 0};
  t.link = LinkClass::PcieSameSwitch;
  t.nRanks = 2;
  t.bands[0] = {Collective::AllReduce, 256 * KiB, NcclAlgo::Ring, NcclProto::LL, 0};
  t.bands[1] = {Collective::AllReduce, 64 * KiB, NcclAlgo::Tree, NcclProto::LL, 0};
  t.numBands = 2;
  std::string error;
  EXPECT_EQ(tunedTableText({t}, {}, "bad.txt", &error), "");
  EXPECT_EQ(error, "the table symmem-tune made does not read back: entry 1 changed");
  std::swap(t.bands[0], t.bands[1]);
  EXPECT_NE(tunedTableText({t}, {}, "good.txt", &error), "") << error;
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

TEST(TuneTable, MetaLinesHoldOneLineWithoutComments) { EXPECT_EQ(metaSafe("a\tb#c\n"), "a b c"); }

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

TEST(TuneReport, ProgressLines) {
  const std::string first = progressLine(0, 10, 0.4, 2, "nccl", 64 * KiB, 0, 3);
  EXPECT_EQ(first, "[1/10] ranks=2 nccl 64KiB (round 1/3), 0s elapsed");
  const std::string later = progressLine(4, 10, 40, 4, tunePathLabel(TunePath::NcclTreeLL), 8, 1, 3);
  EXPECT_EQ(later, "[5/10] ranks=4 NCCL tree/ll 8B (round 2/3), 40s elapsed, about 1m00s left");
}

TEST(TuneReport, SummaryShowsEveryPathTimedAndTheChoice) {
  TunedWorld world;
  world.nRanks = 2;
  world.link = LinkClass::NvLink;
  world.gpus = {0, 1};
  world.paths = {TunePath::Nccl, TunePath::NcclRingLL, TunePath::OneShotPush, TunePath::TwoShotPush};
  auto at = [](uint64_t bytes, double nccl, double ringLl, double one, double two) {
    SizeTimes t;
    t.bytes = bytes;
    t.setMedian(TunePath::Nccl, nccl);
    t.setMedian(TunePath::NcclRingLL, ringLl);
    t.setMedian(TunePath::OneShotPush, one);
    t.setMedian(TunePath::TwoShotPush, two);
    return t;
  };
  world.times = {at(8, 20.0, 21.0, 5.0, 9.0), at(16, 20.0, 21.0, 30.0, 10.0), at(32, 20.0, 12.0, 30.0, NAN),
                 at(64, 20.0, 30.0, 30.0, NAN)};
  world.bands = chooseBands(world.times, 2);
  const std::string text = summaryTable(world, {9, 0});
  EXPECT_NE(text.find("ranks=2 link=nvlink cc=9.0 (GPUs 0,1)"), std::string::npos) << text;
  EXPECT_NE(text.find("      size       stock     ring/ll     1s-push     2s-push  chosen       why\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("        8B       20.00       21.00        5.00        9.00  1s-push      one-shot push 5.00 us < "
                "0.95 x stock NCCL 20.00 us\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("       16B       20.00       21.00       30.00       10.00  2s-push "), std::string::npos)
      << text;
  EXPECT_NE(text.find("       32B       20.00       12.00       30.00           -  ring/ll      NCCL ring/ll 12.00 us"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("       64B       20.00       30.00       30.00           -  stock "), std::string::npos) << text;
  EXPECT_NE(text.find("symmetric bands: one-shot push up to 8B, two-shot push up to 16B\n"), std::string::npos) << text;
  EXPECT_NE(text.find("NCCL bands: stock NCCL up to 16B, NCCL ring/ll up to 32B; above them NCCL untouched\n"),
            std::string::npos)
      << text;
}

// ---- the built binary --------------------------------------------------------------------------------

using testing::ToolRun;

ToolRun runTune(const std::string& args, const std::string& env = "") {
  return testing::runTool("env -u SYMMEM_TOPO_FILE -u NCCL_TUNER_PLUGIN " + env + " '" + SYMMEM_TUNE_PATH + "' " +
                          args);
}

bool has(const ToolRun& r, const std::string& s) { return r.has(s); }

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
  EXPECT_TRUE(has(r, "  estimate: about ")) << r.out;
  EXPECT_TRUE(has(r, "; paths stock ring/ll ring/simple tree/ll tree/simple 1s-push")) << r.out;
  EXPECT_TRUE(has(r, "NCCL 2.")) << r.out;
}

// Planning before the box arrives: a topology file and a capability, no GPU and no NCCL needed.
TEST(TuneTool, PlansForATopologyFileWithoutAGpuOrNccl) {
  const std::string topo = fixture("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  const ToolRun r = runTune("--plan --quick --topo " + topo + " --cc 12.0 --nccl-lib /nonexistent/libnccl.so.2");
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r, "symmem-tune: GPUs 0,1,2,3,4,5,6,7 of 8, capability 12.0, topology from " + topo + "\n")) << r.out;
  EXPECT_TRUE(has(r, "ranks=2 on GPUs 0,1: link pcie-switch")) << r.out;
  EXPECT_TRUE(has(r, "ranks=8 on GPUs 0,1,2,3,4,5,6,7: link pcie-sys")) << r.out;
  EXPECT_TRUE(has(r, "  estimate: about ")) << r.out;
  EXPECT_TRUE(has(r, "  NCCL: none here (cannot load NCCL (/nonexistent/libnccl.so.2)")) << r.out;
  EXPECT_TRUE(has(r, "the measurement needs NCCL 2.x (--nccl-lib PATH)")) << r.out;

  // The topology file wins over SYMMEM_TOPO_FILE; its P2P matrix goes after a comma.
  const ToolRun p2p = runTune("--plan --topo " + fixture("rtx-5090-x2-wrx80-phb.topo.txt") + "," +
                                  fixture("rtx-5090-x2-wrx80-phb.p2p-rw.txt") + " --cc 12.0",
                              "SYMMEM_TOPO_FILE=" + topo);
  EXPECT_EQ(p2p.exitCode, 1) << p2p.out;
  EXPECT_TRUE(has(p2p, "symmem-tune: no P2P between GPU0 and GPU1")) << p2p.out;

  // Without --cc the capability is what the measurement would ask CUDA for.
  const ToolRun noCc = runTune("--plan --topo " + topo + " --nccl-lib /nonexistent/libnccl.so.2");
  EXPECT_EQ(noCc.exitCode, 0) << noCc.out;
  EXPECT_TRUE(has(noCc, "capability unknown (--cc X.Y gives it)")) << noCc.out;

  const ToolRun missing = runTune("--plan --topo /nonexistent/box.topo.txt");
  EXPECT_EQ(missing.exitCode, 2) << missing.out;
  EXPECT_EQ(missing.out.rfind("symmem-tune: --topo: ", 0), 0u) << missing.out;
  EXPECT_TRUE(has(missing, "/nonexistent/box.topo.txt")) << missing.out;
}

}  // namespace
}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "core/table_file.h"
#include "plugin/tuner/tuner.h"
#include "tests/unit/nccl_cost_table.h"
#include "tools/tune/bands.h"
#include "tools/tune/table.h"

namespace symmem {
namespace {

constexpr float kIgnore = -1.0f;
using CostTable = testing::NcclCostTable;

// As after every rank's tuner declared the same bands in the communicator's agreement (the agreement
// itself: tests/unit/rendezvous_test.cpp, RendezvousBands).
void agreeOnBands(TunerComm& comm) { comm.bandsChecked->store(1); }

Decision tuned(NcclAlgo a, NcclProto p, int ch) { return Decision{Path::NcclTuned, a, p, ch, Reason::TableBand}; }

TEST(TunerCostTable, ForcesTheBandsChoice) {
  CostTable t;
  int nChannels = 0;
  EXPECT_TRUE(applyToCostTable(tuned(NcclAlgo::Tree, NcclProto::Simple, 0), t.raw(), 7, 3, &nChannels));
  EXPECT_EQ(t.ncclChoice(), std::make_pair(0, 2));
  EXPECT_EQ(nChannels, 0) << "nChannels stays 0 (NCCL's choice) unless the band sets it";
  EXPECT_EQ(t.ignoredCount(), 17);
}

TEST(TunerCostTable, NeverValidatesAnIgnoredEntry) {
  for (int a = 0; a < kNcclNumAlgos; ++a)
    for (int p = 0; p < kNcclNumProtos; ++p) {
      CostTable t;
      const bool wasIgnored = t.cells[a][p] < 0;
      int nChannels = 0;
      const bool changed =
          applyToCostTable(tuned(static_cast<NcclAlgo>(a), static_cast<NcclProto>(p), 4), t.raw(), 7, 3, &nChannels);
      EXPECT_EQ(t.ignoredCount(), 17) << a << "/" << p;
      EXPECT_EQ(changed, !wasIgnored);
      EXPECT_EQ(nChannels, wasIgnored ? 0 : 4) << "channels only change with an applied choice";
      if (wasIgnored)
        EXPECT_EQ(t.ncclChoice(), std::make_pair(1, 0)) << "NCCL's own choice is kept";
      else
        EXPECT_EQ(t.ncclChoice(), std::make_pair(a, p));
    }
}

TEST(TunerCostTable, PartialChoicePicksTheCheapestMatchingCell) {
  CostTable t;
  EXPECT_TRUE(applyToCostTable(tuned(NcclAlgo::Any, NcclProto::Simple, 0), t.raw(), 7, 3, nullptr));
  EXPECT_EQ(t.ncclChoice(), std::make_pair(1, 2)) << "ring/simple (25) is cheaper than tree/simple (30)";
  CostTable u;
  EXPECT_TRUE(applyToCostTable(tuned(NcclAlgo::Tree, NcclProto::Any, 0), u.raw(), 7, 3, nullptr));
  EXPECT_EQ(u.ncclChoice(), std::make_pair(0, 0));
}

TEST(TunerCostTable, IndexesAsNumAlgoByNumProto) {
  // A narrower table (e.g. an NCCL with fewer protocols) must be indexed with its own row length.
  float cells[7][2];
  for (auto& row : cells) row[0] = row[1] = kIgnore;
  cells[1][1] = 5.0f;  // ring, protocol 1
  cells[0][1] = 7.0f;
  EXPECT_TRUE(
      applyToCostTable(tuned(NcclAlgo::Tree, NcclProto::LL128, 0), reinterpret_cast<float**>(cells), 7, 2, nullptr));
  EXPECT_EQ(cells[0][1], 0.0f);
  EXPECT_EQ(cells[1][1], 5.0f);
}

TEST(TunerCostTable, LeavesEverythingForOtherPaths) {
  CostTable t;
  int nChannels = 0;
  for (Path p : {Path::NcclUntouched, Path::SymOneShot, Path::SymTwoShot}) {
    Decision d = tuned(NcclAlgo::Tree, NcclProto::LL, 8);
    d.path = p;
    EXPECT_FALSE(applyToCostTable(d, t.raw(), 7, 3, &nChannels));
  }
  EXPECT_EQ(t.ncclChoice(), std::make_pair(1, 0));
  EXPECT_EQ(nChannels, 0);
  EXPECT_FALSE(applyToCostTable(tuned(NcclAlgo::Tree, NcclProto::LL, 0), nullptr, 7, 3, &nChannels));
}

// A cost table of NCCL's real size (float[7][3]) at the start of a larger buffer whose remaining cells
// are cheap, valid-looking costs. A tuner that believes an oversized numAlgo or numProto indexes past
// the table and zeroes one of those cells (a heap overflow in NCCL's process); it must touch nothing.
struct GuardedCostTable {
  static constexpr int kRealCells = abi::kNumAlgorithms * abi::kNumProtocols;
  static constexpr int kGuardCells = 64 * 64;
  float cells[kRealCells + kGuardCells];

  GuardedCostTable() {
    for (int i = 0; i < kRealCells; ++i) cells[i] = kIgnore;
    cells[1 * abi::kNumProtocols + 0] = 10.0f;  // ring/ll: the only cell NCCL offers
    for (int i = kRealCells; i < kRealCells + kGuardCells; ++i) cells[i] = 0.5f;
  }
  float** raw() { return reinterpret_cast<float**>(cells); }
  int guardCellsChanged() const {
    int n = 0;
    for (int i = kRealCells; i < kRealCells + kGuardCells; ++i) n += cells[i] != 0.5f;
    return n;
  }
  int realCellsChanged() const {
    int n = 0;
    for (int i = 0; i < kRealCells; ++i) n += cells[i] != (i == 1 * abi::kNumProtocols ? 10.0f : kIgnore);
    return n;
  }
};

TEST(TunerCostTable, OversizedDimensionsTouchNothingBeyondTheTable) {
  const Decision any = tuned(NcclAlgo::Any, NcclProto::Any, 4);
  for (auto [numAlgo, numProto] : std::vector<std::pair<int, int>>{{7, 8}, {7, 64}, {64, 3}, {64, 64}, {8, 4}}) {
    GuardedCostTable t;
    int nChannels = 0;
    EXPECT_FALSE(applyToCostTable(any, t.raw(), numAlgo, numProto, &nChannels)) << numAlgo << "x" << numProto;
    EXPECT_EQ(t.guardCellsChanged(), 0) << numAlgo << "x" << numProto;
    EXPECT_EQ(t.realCellsChanged(), 0) << "a shape NCCL's ABI does not have is left alone: " << numAlgo << "x"
                                       << numProto;
    EXPECT_EQ(nChannels, 0);
  }
  // The ABI's own shape still works on the same buffer.
  GuardedCostTable t;
  EXPECT_TRUE(applyToCostTable(any, t.raw(), abi::kNumAlgorithms, abi::kNumProtocols, nullptr));
  EXPECT_EQ(t.cells[1 * abi::kNumProtocols + 0], 0.0f);
  EXPECT_EQ(t.guardCellsChanged(), 0);
}

TEST(TunerCostTable, TheAbiLimitsAreNcclsAndTheDecisionsVocabulary) {
  EXPECT_EQ(abi::kNumAlgorithms, 7);  // NCCL_NUM_ALGORITHMS: tree ring collnet_direct collnet_chain nvls nvls_tree pat
  EXPECT_EQ(abi::kNumProtocols, 3);   // NCCL_NUM_PROTOCOLS: ll ll128 simple
  EXPECT_EQ(abi::kNumAlgorithms, kNcclNumAlgos);
  EXPECT_EQ(abi::kNumProtocols, kNcclNumProtos);
  EXPECT_TRUE(costTableShapeKnown(7, 3));
  EXPECT_TRUE(costTableShapeKnown(7, 2));
  EXPECT_FALSE(costTableShapeKnown(7, 4));
  EXPECT_FALSE(costTableShapeKnown(8, 3));
  EXPECT_FALSE(costTableShapeKnown(0, 3));
  EXPECT_FALSE(costTableShapeKnown(7, -1));
}

TEST(TunerCostTable, GetCollInfoWithAnOversizedTableLeavesItAlone) {
  ProcessContext process;
  process.node.cc = {12, 0};
  process.node.link = LinkClass::PcieCrossSocket;
  process.node.allPairsP2p = true;
  DecisionTable table = DecisionTable::builtIn();
  Thresholds e = *table.thresholdsFor({12, 0}, LinkClass::PcieCrossSocket, 8).entry;
  e.bands[0] = {Collective::AllReduce, 1 << 20, NcclAlgo::Ring, NcclProto::Any, 0};
  e.numBands = 1;
  table.set(e);
  process.table = &table;
  TunerComm comm = makeTunerComm(process, 1, 8, 1);
  agreeOnBands(comm);
  ASSERT_TRUE(comm.active);
  GuardedCostTable t;
  int nChannels = 0;
  const int allReduce = static_cast<int>(Collective::AllReduce);
  EXPECT_EQ(tuner::getCollInfo(&comm, allReduce, 1024, 1, t.raw(), 7, 30, 0, &nChannels), abi::kSuccess);
  EXPECT_EQ(t.guardCellsChanged() + t.realCellsChanged(), 0);
  EXPECT_EQ(tuner::getCollInfo(&comm, allReduce, 1024, 1, t.raw(), 7, 3, 0, &nChannels), abi::kSuccess);
  EXPECT_EQ(t.cells[1 * abi::kNumProtocols + 0], 0.0f) << "with NCCL's shape the band applies";
}

TEST(TunerComm, MultiNodeAndUnknownFactsStayInactive) {
  ProcessContext process;
  process.node.cc = {12, 0};
  process.node.link = LinkClass::PcieCrossSocket;
  process.node.allPairsP2p = true;
  DecisionTable table = DecisionTable::builtIn();
  Thresholds e = *table.thresholdsFor({12, 0}, LinkClass::PcieCrossSocket, 8).entry;
  e.bands[0] = {Collective::AllReduce, 1 << 20, NcclAlgo::Ring, NcclProto::LL, 0};
  e.numBands = 1;
  table.set(e);
  process.table = &table;

  EXPECT_TRUE(makeTunerComm(process, 1, 8, 1).active);
  EXPECT_FALSE(makeTunerComm(process, 1, 8, 2).active) << "multi-node: untouched";
  // 4294967304 ranks is not 8 ranks (nor 4294967297 nodes 1): a count no int holds leaves NCCL alone.
  EXPECT_FALSE(makeTunerComm(process, 1, 4294967304ull, 1).active) << "a truncated count read as 8 ranks";
  EXPECT_FALSE(makeTunerComm(process, 1, 8, 4294967297ull).active) << "a truncated count read as 1 node";
  EXPECT_FALSE(makeTunerComm(process, 1, 1, 1).active);
  EXPECT_FALSE(makeTunerComm(process, 1, 4, 1).active) << "entry without bands: nothing to do";
  ProcessContext unknown = process;
  unknown.node.link = LinkClass::Unknown;
  EXPECT_FALSE(makeTunerComm(unknown, 1, 8, 1).active);
  ProcessContext mixed = process;
  mixed.node.mixedCapabilities = true;
  EXPECT_FALSE(makeTunerComm(mixed, 1, 8, 1).active) << "mixed GPUs: ranks could disagree";
  ProcessContext off = process;
  off.policy.tuner = false;
  EXPECT_FALSE(makeTunerComm(off, 1, 8, 1).active);
}

// A table symmem-tune writes, loaded the way the plugin loads SYMMEM_TABLE, steers NCCL by default (no
// setting needed). The case: 8x RTX PRO 6000 on dual AMD Turin, where NCCL's fixed AMD host bandwidth
// makes it pick Simple over LL; forcing LL took 32 KiB from 48.2 to 26.2 us (NVIDIA/nccl#2036).
TEST(TunerCostTable, ATunedRingLlBandFromTheTableFileReachesNcclsCostTable) {
  std::vector<SizeTimes> times(2);
  times[0].bytes = 16 * 1024;
  times[0].setMedian(TunePath::Nccl, 40.0);
  times[0].setMedian(TunePath::NcclRingLL, 39.0);
  times[0].setMedian(TunePath::OneShotPull, 15.0);
  times[1].bytes = 32 * 1024;
  times[1].setMedian(TunePath::Nccl, 48.2);
  times[1].setMedian(TunePath::NcclRingLL, 26.2);
  times[1].setMedian(TunePath::NcclRingSimple, 48.0);
  times[1].setMedian(TunePath::OneShotPull, 30.0);
  TunedWorld world;
  world.nRanks = 8;
  world.link = LinkClass::PcieCrossSocket;
  world.bands = chooseBands(times, 8);
  std::string error;
  const std::string text = tunedTableText(tunedEntries({12, 0}, {world}), {"test"}, "turin.txt", &error);
  ASSERT_FALSE(text.empty()) << error;
  ASSERT_NE(text.find("band cc=12.0 link=pcie-sys ranks=8 coll=allreduce upto=32KiB algo=ring proto=ll channels=0"),
            std::string::npos)
      << text;

  // As plugin/process/process.h builds it: the built-in table with the file applied, default settings.
  const TableFileResult file = parseTableText(text, "turin.txt");
  ASSERT_TRUE(file.ok()) << file.error;
  DecisionTable table = DecisionTable::builtIn();
  applyTableFile(file, table);
  ProcessContext process;
  process.node.cc = {12, 0};
  process.node.link = LinkClass::PcieCrossSocket;
  process.node.allPairsP2p = true;
  process.table = &table;
  ASSERT_TRUE(process.policy.tuner) << "the tuner is on by default";
  TunerComm comm = makeTunerComm(process, 7, 8, 1);
  agreeOnBands(comm);
  ASSERT_TRUE(comm.active);

  // NCCL's own choice on that box: ring/simple (its model puts LL above Simple).
  const int allReduce = static_cast<int>(Collective::AllReduce);
  auto simpleFirst = [] {
    CostTable t;
    t.cells[0][0] = 32.0f;  // tree/ll
    t.cells[1][0] = 30.0f;  // ring/ll
    t.cells[1][2] = 20.0f;  // ring/simple
    return t;
  };
  CostTable t = simpleFirst();
  ASSERT_EQ(t.ncclChoice(), std::make_pair(1, 2));
  int nChannels = 0;
  EXPECT_EQ(tuner::getCollInfo(&comm, allReduce, 32 * 1024, 1, t.raw(), 7, 3, 0, &nChannels), abi::kSuccess);
  EXPECT_EQ(t.ncclChoice(), std::make_pair(1, 0)) << "the band's ring/ll";
  EXPECT_EQ(nChannels, 0);
  // In the symmetric range (calls the kernels do not take reach NCCL there) and above the last measured
  // size, NCCL's own choice stays.
  for (size_t bytes : {size_t{8 * 1024}, size_t{64 * 1024}}) {
    CostTable u = simpleFirst();
    EXPECT_EQ(tuner::getCollInfo(&comm, allReduce, bytes, 1, u.raw(), 7, 3, 0, &nChannels), abi::kSuccess);
    EXPECT_EQ(u.ncclChoice(), std::make_pair(1, 2)) << bytes;
  }
}

// NCCL's v7 constants around a v5-shaped copy: every member in its own slot, the Rubin row kept,
// nothing outside the struct touched.
struct GuardedConstantsV7 {
  double before[4];
  abi::TunerConstantsV7 c;
  double after[4];
};
static_assert(offsetof(GuardedConstantsV7, c) == sizeof(double[4]) &&
              sizeof(GuardedConstantsV7) == sizeof(abi::TunerConstantsV7) + sizeof(double[8]));

double* flat(abi::TunerConstantsV7& c) { return reinterpret_cast<double*>(&c); }
const double* flat(const abi::TunerConstantsV7& c) { return reinterpret_cast<const double*>(&c); }
double* flat(abi::TunerConstantsV5& c) { return reinterpret_cast<double*>(&c); }

// Calls f(v7 table, v5 table) for each [compcap][scale] bandwidth table, by name.
template <typename F>
void forEachBandwidthTable(abi::TunerConstantsV7& v7, abi::TunerConstantsV5& v5, F f) {
  f(v7.llMaxBws, v5.llMaxBws);
  f(v7.perChMaxRingLL128Bws, v5.perChMaxRingLL128Bws);
  f(v7.perChMaxTreeLL128Bws, v5.perChMaxTreeLL128Bws);
  f(v7.perChMaxTreeBws, v5.perChMaxTreeBws);
  f(v7.perChMaxNVLSTreeBws, v5.perChMaxNVLSTreeBws);
}

TEST(TunerConstants, V7ToV5CopiesEachMemberAndTheFirstFourCompCaps) {
  abi::TunerConstantsV7 v7;
  for (size_t i = 0; i < sizeof(v7) / sizeof(double); ++i) flat(v7)[i] = 1000.0 + static_cast<double>(i);
  abi::TunerConstantsV5 v5 = constantsV5(v7);
  for (int a = 0; a < abi::kConstAlgos; ++a)
    for (int p = 0; p < abi::kConstProtos; ++p) {
      EXPECT_EQ(v5.baseLatencies[a][p], v7.baseLatencies[a][p]);
      for (int l = 0; l < abi::kConstLinks; ++l) EXPECT_EQ(v5.hwLatencies[l][a][p], v7.hwLatencies[l][a][p]);
    }
  int table = 0;
  forEachBandwidthTable(v7, v5, [&](auto& t7, auto& t5) {
    for (int c = 0; c < abi::kConstCompCaps; ++c)
      for (int s = 0; s < abi::kConstScales; ++s) EXPECT_EQ(t5[c][s], t7[c][s]) << "table " << table << " cc " << c;
    ++table;
  });
  EXPECT_EQ(table, 5);
  // Spot checks against the flat layout (v7 tables are 15 doubles apart, v5 ones 12).
  EXPECT_EQ(v5.perChMaxRingLL128Bws[0][0], 1000.0 + 99);
  EXPECT_EQ(v5.perChMaxNVLSTreeBws[3][2], 1000.0 + 144 + 11);
}

TEST(TunerConstants, V5WritesLandInTheirV7SlotsAndRubinIsKept) {
  GuardedConstantsV7 g;
  constexpr double kCanary = -12345.5;
  for (double& d : g.before) d = kCanary;
  for (double& d : g.after) d = kCanary;
  for (size_t i = 0; i < sizeof(g.c) / sizeof(double); ++i) flat(g.c)[i] = 1000.0 + static_cast<double>(i);
  const abi::TunerConstantsV7 original = g.c;

  // What a tuner would write: a different value in every v5 slot.
  abi::TunerConstantsV5 v5 = constantsV5(g.c);
  for (size_t i = 0; i < sizeof(v5) / sizeof(double); ++i) flat(v5)[i] = -1.0 - static_cast<double>(i);
  storeConstantsV5(v5, g.c);

  for (double d : g.before) EXPECT_EQ(d, kCanary) << "written before the struct";
  for (double d : g.after) EXPECT_EQ(d, kCanary) << "written past the struct";
  for (int a = 0; a < abi::kConstAlgos; ++a)
    for (int p = 0; p < abi::kConstProtos; ++p) {
      EXPECT_EQ(g.c.baseLatencies[a][p], v5.baseLatencies[a][p]);
      for (int l = 0; l < abi::kConstLinks; ++l) EXPECT_EQ(g.c.hwLatencies[l][a][p], v5.hwLatencies[l][a][p]);
    }
  int table = 0;
  forEachBandwidthTable(g.c, v5, [&](auto& t7, auto& t5) {
    for (int c = 0; c < abi::kConstCompCaps; ++c)
      for (int s = 0; s < abi::kConstScales; ++s) EXPECT_EQ(t7[c][s], t5[c][s]) << "table " << table << " cc " << c;
    ++table;
  });
  // The Rubin row (index 4) of each table: NCCL's values, untouched.
  const size_t rubinRows[] = {84 + 12, 99 + 12, 114 + 12, 129 + 12, 144 + 12};
  for (size_t base : rubinRows)
    for (size_t s = 0; s < abi::kConstScales; ++s)
      EXPECT_EQ(flat(g.c)[base + s], flat(original)[base + s]) << "Rubin slot " << base + s;
  EXPECT_EQ(g.c.perChMaxRingLL128Bws[0][0], v5.perChMaxRingLL128Bws[0][0]);
  EXPECT_EQ(flat(g.c)[99], -1.0 - 96) << "v5 perChMaxRingLL128Bws[0][0] lands at v7 offset 99";
}

}  // namespace
}  // namespace symmem

#include <gtest/gtest.h>

#include "plugin/tuner.h"
#include "tests/unit/nccl_cost_table.h"

namespace symmem {
namespace {

constexpr float kIgnore = -1.0f;
using CostTable = testing::NcclCostTable;

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
      if (wasIgnored) EXPECT_EQ(t.ncclChoice(), std::make_pair(1, 0)) << "NCCL's own choice is kept";
      else EXPECT_EQ(t.ncclChoice(), std::make_pair(a, p));
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
  EXPECT_TRUE(applyToCostTable(tuned(NcclAlgo::Tree, NcclProto::LL128, 0), reinterpret_cast<float**>(cells), 7, 2,
                               nullptr));
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

}  // namespace
}  // namespace symmem

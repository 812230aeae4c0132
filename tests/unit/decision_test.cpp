// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "core/decision.h"
#include "core/decision_table.h"
#include "core/log.h"
#include "core/table_file.h"

namespace symmem {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

CommFacts facts(ComputeCapability cc, LinkClass link, int nRanks, uint64_t capacity = 1ull << 30) {
  CommFacts f;
  f.nRanks = nRanks;
  f.nNodes = 1;
  f.cc = cc;
  f.link = link;
  f.allPairsP2p = true;
  f.symmetricCapacityBytes = capacity;
  return f;
}

CollRequest bf16Sum(uint64_t bytes) { return {Collective::AllReduce, ReduceOp::Sum, DataType::Bfloat16, bytes}; }

const ComputeCapability kListed[] = {{8, 0}, {8, 6}, {8, 9}, {9, 0}, {10, 0}, {10, 3}, {12, 0}, {12, 1}};
const LinkClass kLinks[] = {LinkClass::NvLink, LinkClass::PcieSameSwitch, LinkClass::PcieSameRoot,
                            LinkClass::PcieCrossSocket};

TEST(DecisionTable, BuiltInCoversEveryCapabilityLinkAndWorldSize) {
  const DecisionTable& t = DecisionTable::builtIn();
  for (ComputeCapability cc : kListed)
    for (LinkClass link : kLinks)
      for (int n = 2; n <= 12; ++n) {
        TableLookup found = t.thresholdsFor(cc, link, n);
        ASSERT_NE(found.entry, nullptr) << cc.str() << " " << linkClassName(link) << " " << n;
        EXPECT_TRUE(found.exact);
        EXPECT_EQ(found.entry->nRanks, n > 8 ? kBeyondEightRanks : n);
        EXPECT_STRNE(found.entry->source, "");
      }
  EXPECT_EQ(t.entries().size(), 8u * 4u * 8u);
}

TEST(DecisionTable, BuiltInLimitsAreConsistent) {
  for (const Thresholds& e : DecisionTable::builtIn().entries()) {
    if (e.twoShotMaxBytes != 0) EXPECT_GE(e.twoShotMaxBytes, e.oneShotMaxBytes) << e.cc.str() << " " << e.nRanks;
    if (e.nRanks < 8) {
      // More ranks never widen the symmetric range (one-shot traffic per rank grows with peers).
      const Thresholds* next = DecisionTable::builtIn().thresholdsFor(e.cc, e.link, e.nRanks + 1).entry;
      ASSERT_NE(next, nullptr);
      EXPECT_LE(next->oneShotMaxBytes, e.oneShotMaxBytes);
      EXPECT_LE(next->twoShotMaxBytes, e.twoShotMaxBytes);
    }
    if (e.nRanks == kBeyondEightRanks) EXPECT_EQ(e.oneShotMaxBytes, 0u) << "one-shot is off beyond 8 ranks";
  }
}

// The 12.0 PCIe seeds (docs/sources.md): on 8 RTX PRO 6000 one-shot won up to 32 KiB and lost from
// 64 KiB; nothing published supports two-shot across sockets.
TEST(DecisionTable, RtxPro6000Seeds) {
  const DecisionTable& t = DecisionTable::builtIn();
  const Thresholds* sys8 = t.thresholdsFor({12, 0}, LinkClass::PcieCrossSocket, 8).entry;
  ASSERT_NE(sys8, nullptr);
  EXPECT_EQ(sys8->oneShotMaxBytes, 32 * KiB);
  EXPECT_EQ(sys8->twoShotMaxBytes, 0u);
  const Thresholds* sw2 = t.thresholdsFor({12, 0}, LinkClass::PcieSameSwitch, 2).entry;
  ASSERT_NE(sw2, nullptr);
  EXPECT_EQ(sw2->oneShotMaxBytes, 128 * KiB);
  EXPECT_EQ(sw2->twoShotMaxBytes, 1 * MiB);
  const Thresholds* nvl2 = t.thresholdsFor({9, 0}, LinkClass::NvLink, 2).entry;
  ASSERT_NE(nvl2, nullptr);
  EXPECT_EQ(nvl2->oneShotMaxBytes, 1 * MiB);
  EXPECT_EQ(nvl2->twoShotMaxBytes, 8 * MiB);
}

// The whole built-in table, as a table file, must equal the reviewed golden copy: any change to a
// seed shows up here and in review.
TEST(DecisionTable, BuiltInMatchesGolden) {
  std::ifstream in(std::string(SYMMEM_TEST_DATA_DIR) + "/builtin-table.golden");
  ASSERT_TRUE(in);
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(formatTable(DecisionTable::builtIn().entries(), {}), golden.str());
}

// Expected-decision grid for every built-in entry, at and around each limit.
TEST(Decision, GridForEveryBuiltInEntry) {
  const Policy policy;
  for (const Thresholds& e : DecisionTable::builtIn().entries()) {
    const int n = e.nRanks == kBeyondEightRanks ? 16 : e.nRanks;
    const CommFacts f = facts(e.cc, e.link, n);
    auto pathAt = [&](uint64_t bytes) { return decide(bf16Sum(bytes), f, &e, policy).path; };
    SCOPED_TRACE(e.cc.str() + " " + std::string(linkClassName(e.link)) + " " + std::to_string(n));
    if (e.oneShotMaxBytes > 0) {
      EXPECT_EQ(pathAt(2), Path::SymOneShot);
      EXPECT_EQ(pathAt(e.oneShotMaxBytes), Path::SymOneShot);
    }
    const uint64_t afterOne = e.oneShotMaxBytes + 1;
    if (e.twoShotMaxBytes >= afterOne) {
      EXPECT_EQ(pathAt(afterOne), Path::SymTwoShot);
      EXPECT_EQ(pathAt(e.twoShotMaxBytes), Path::SymTwoShot);
      EXPECT_EQ(pathAt(e.twoShotMaxBytes + 1), Path::NcclUntouched);
    } else {
      EXPECT_EQ(pathAt(afterOne), Path::NcclUntouched);
    }
    EXPECT_EQ(pathAt(256 * MiB), Path::NcclUntouched);
  }
}

TEST(Decision, FallsBackForEverythingTheKernelsDoNotTake) {
  const Thresholds* e = DecisionTable::builtIn().thresholdsFor({12, 0}, LinkClass::PcieSameSwitch, 4).entry;
  ASSERT_NE(e, nullptr);
  const Policy policy;
  const CommFacts f = facts({12, 0}, LinkClass::PcieSameSwitch, 4);
  struct Case {
    CollRequest request;
    Reason reason;
  };
  const Case cases[] = {
      {{Collective::AllGather, ReduceOp::Sum, DataType::Bfloat16, 1024}, Reason::NotAllReduce},
      {{Collective::AllReduce, ReduceOp::Avg, DataType::Bfloat16, 1024}, Reason::UnsupportedDtypeOrOp},
      {{Collective::AllReduce, ReduceOp::Other, DataType::Float32, 1024}, Reason::UnsupportedDtypeOrOp},
      {{Collective::AllReduce, ReduceOp::Sum, DataType::Float64, 1024}, Reason::UnsupportedDtypeOrOp},
      {{Collective::AllReduce, ReduceOp::Sum, DataType::Int32, 1024}, Reason::UnsupportedDtypeOrOp},
      {{Collective::AllReduce, ReduceOp::Sum, DataType::Float32, 0}, Reason::EmptyMessage},
  };
  for (const Case& c : cases) {
    Decision d = decide(c.request, f, e, policy);
    EXPECT_EQ(d.path, Path::NcclUntouched);
    EXPECT_EQ(d.reason, c.reason) << reasonText(d.reason);
  }
  for (DataType t : {DataType::Bfloat16, DataType::Float16, DataType::Float32})
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max})
      EXPECT_EQ(decide({Collective::AllReduce, op, t, 1024}, f, e, policy).path, Path::SymOneShot);
}

TEST(Decision, CommunicatorFactsGateThePath) {
  const Thresholds* e = DecisionTable::builtIn().thresholdsFor({9, 0}, LinkClass::NvLink, 2).entry;
  const Policy policy;
  CommFacts f = facts({9, 0}, LinkClass::NvLink, 2);
  EXPECT_EQ(decide(bf16Sum(4096), f, e, policy).path, Path::SymOneShot);

  CommFacts multi = f;
  multi.nNodes = 2;
  EXPECT_EQ(decide(bf16Sum(4096), multi, e, policy).reason, Reason::MultiNode);
  CommFacts single = f;
  single.nRanks = 1;
  EXPECT_EQ(decide(bf16Sum(4096), single, e, policy).reason, Reason::SingleRank);
  CommFacts noP2p = f;
  noP2p.allPairsP2p = false;
  EXPECT_EQ(decide(bf16Sum(4096), noP2p, e, policy).reason, Reason::NoP2p);
  CommFacts unknownLink = f;
  unknownLink.link = LinkClass::Unknown;
  EXPECT_EQ(decide(bf16Sum(4096), unknownLink, e, policy).reason, Reason::UnknownLink);
  CommFacts small = f;
  small.symmetricCapacityBytes = 1024;
  EXPECT_EQ(decide(bf16Sum(4096), small, e, policy).reason, Reason::ExceedsCapacity);
  EXPECT_EQ(decide(bf16Sum(1024), small, e, policy).path, Path::SymOneShot);
  EXPECT_EQ(decide(bf16Sum(4096), f, nullptr, policy).reason, Reason::NoTableEntry);
}

TEST(Decision, PolicySwitchesAndForcing) {
  const Thresholds* e = DecisionTable::builtIn().thresholdsFor({9, 0}, LinkClass::NvLink, 2).entry;
  const CommFacts f = facts({9, 0}, LinkClass::NvLink, 2);
  Policy off;
  off.enabled = false;
  EXPECT_EQ(decide(bf16Sum(64), f, e, off).reason, Reason::Disabled);
  Policy noSym;
  noSym.symmetric = false;
  EXPECT_EQ(decide(bf16Sum(64), f, e, noSym).path, Path::NcclUntouched);
  EXPECT_EQ(decide(bf16Sum(64), f, e, noSym).reason, Reason::SymmetricOff);

  Policy two;
  two.force = ForcedPath::TwoShot;
  EXPECT_EQ(decide(bf16Sum(64), f, e, two).path, Path::SymTwoShot);
  Policy one;
  one.force = ForcedPath::OneShot;
  EXPECT_EQ(decide(bf16Sum(8 * MiB), f, e, one).path, Path::SymOneShot);
  // Forcing never overrides eligibility: an unsupported op still goes to NCCL.
  EXPECT_EQ(decide({Collective::AllReduce, ReduceOp::Avg, DataType::Float32, 64}, f, e, one).path, Path::NcclUntouched);
  Policy nccl;
  nccl.force = ForcedPath::Nccl;
  EXPECT_EQ(decide(bf16Sum(64), f, e, nccl).path, Path::NcclUntouched);
  // Forcing works even without a table entry (testing an unlisted GPU), within the buffers.
  EXPECT_EQ(decide(bf16Sum(64), f, nullptr, one).path, Path::SymOneShot);
}

TEST(Decision, NcclBandsApplyAboveTheSymmetricRange) {
  Thresholds e;
  e.cc = {12, 0};
  e.link = LinkClass::PcieCrossSocket;
  e.nRanks = 8;
  e.oneShotMaxBytes = 32 * KiB;
  e.bands[0] = {Collective::AllReduce, 256 * KiB, NcclAlgo::Ring, NcclProto::LL, 0};
  e.bands[1] = {Collective::AllReduce, 4 * MiB, NcclAlgo::Tree, NcclProto::Simple, 8};
  e.bands[2] = {Collective::AllGather, 1 * MiB, NcclAlgo::Ring, NcclProto::Any, 4};
  e.numBands = 3;
  const CommFacts f = facts({12, 0}, LinkClass::PcieCrossSocket, 8);
  const Policy policy;
  EXPECT_EQ(decide(bf16Sum(32 * KiB), f, &e, policy).path, Path::SymOneShot);
  Decision d = decide(bf16Sum(64 * KiB), f, &e, policy);
  EXPECT_EQ(d.path, Path::NcclTuned);
  EXPECT_EQ(d.algo, NcclAlgo::Ring);
  EXPECT_EQ(d.proto, NcclProto::LL);
  d = decide(bf16Sum(1 * MiB), f, &e, policy);
  EXPECT_EQ(d.algo, NcclAlgo::Tree);
  EXPECT_EQ(d.nChannels, 8);
  EXPECT_EQ(decide(bf16Sum(8 * MiB), f, &e, policy).path, Path::NcclUntouched);
  // Bands are per collective; the tuner asks without dtype/op.
  d = decide({Collective::AllGather, ReduceOp::Other, DataType::Other, 512 * KiB}, f, &e, policy);
  EXPECT_EQ(d.path, Path::NcclTuned);
  EXPECT_EQ(d.nChannels, 4);
  Policy noTuner;
  noTuner.tuner = false;
  EXPECT_EQ(decide(bf16Sum(64 * KiB), f, &e, noTuner).path, Path::NcclUntouched);
}

TEST(CapabilityFallback, UnlistedCapabilitiesTakeTheNearestLowerEntry) {
  const DecisionTable& t = DecisionTable::builtIn();
  struct Case {
    ComputeCapability asked;
    ComputeCapability used;
  };
  const Case cases[] = {{{12, 5}, {12, 1}}, {{13, 0}, {12, 1}}, {{9, 5}, {9, 0}},
                        {{11, 0}, {10, 3}}, {{10, 1}, {10, 0}}, {{8, 7}, {8, 6}}};
  for (const Case& c : cases) {
    TableLookup found = t.thresholdsFor(c.asked, LinkClass::PcieSameSwitch, 4);
    ASSERT_NE(found.entry, nullptr) << c.asked.str();
    EXPECT_FALSE(found.exact);
    EXPECT_EQ(found.used, c.used) << c.asked.str();
  }
  EXPECT_EQ(t.thresholdsFor({7, 5}, LinkClass::PcieSameSwitch, 4).entry, nullptr);
  EXPECT_EQ(t.thresholdsFor({7, 0}, LinkClass::NvLink, 8).entry, nullptr);
  EXPECT_EQ(t.thresholdsFor({12, 0}, LinkClass::Unknown, 4).entry, nullptr);
  EXPECT_EQ(t.thresholdsFor({0, 0}, LinkClass::NvLink, 4).entry, nullptr);
}

TEST(CapabilityFallback, WarnsOnceNamingBoth) {
  std::vector<std::string> warnings;
  setLogSinkForTesting([&](LogLevel level, const std::string& text) {
    if (level == LogLevel::Warn) warnings.push_back(text);
  });
  const DecisionTable& t = DecisionTable::builtIn();
  for (int i = 0; i < 3; ++i) lookupWithFallbackWarning(t, {12, 7}, LinkClass::PcieSameSwitch, 2 + i);
  lookupWithFallbackWarning(t, {12, 0}, LinkClass::PcieSameSwitch, 2);  // listed: no warning
  lookupWithFallbackWarning(t, {7, 2}, LinkClass::PcieSameSwitch, 2);   // below every entry
  setLogSinkForTesting({});
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("12.7"), std::string::npos);
  EXPECT_NE(warnings[0].find("12.1"), std::string::npos);
  EXPECT_NE(warnings[1].find("7.2"), std::string::npos);
}

TEST(Capability, Parsing) {
  EXPECT_EQ(parseCapability("12.0"), (ComputeCapability{12, 0}));
  EXPECT_EQ(parseCapability("sm_120"), (ComputeCapability{12, 0}));
  EXPECT_EQ(parseCapability("sm90"), (ComputeCapability{9, 0}));
  EXPECT_EQ(parseCapability("10.3"), (ComputeCapability{10, 3}));
  EXPECT_FALSE(parseCapability(""));
  EXPECT_FALSE(parseCapability("12."));
  EXPECT_FALSE(parseCapability("12.10"));
  EXPECT_FALSE(parseCapability("x"));
  EXPECT_FALSE(parseCapability("0.5"));
  EXPECT_LT((ComputeCapability{9, 0}), (ComputeCapability{10, 0}));
  EXPECT_LT((ComputeCapability{10, 3}), (ComputeCapability{12, 0}));
}

}  // namespace
}  // namespace symmem

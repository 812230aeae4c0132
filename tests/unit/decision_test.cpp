// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

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

// The variants of an entry's bands, in order ("oneshot pull, twoshot pull").
std::string variantsOf(const Thresholds& e) {
  std::string text;
  for (int i = 0; i < e.numSymBands; ++i)
    text += (i ? ", " : "") + std::string(symAlgoName(e.symBands[i].algo)) + " " +
            std::string(symVariantName(e.symBands[i].variant));
  return text;
}

TEST(DecisionTable, BuiltInLimitsAreConsistent) {
  for (const Thresholds& e : DecisionTable::builtIn().entries()) {
    SCOPED_TRACE(e.cc.str() + " " + std::string(linkClassName(e.link)) + " " + std::to_string(e.nRanks));
    if (e.twoShotMaxBytes != 0) EXPECT_GE(e.twoShotMaxBytes, e.oneShotMaxBytes);
    // Built-in entries are one one-shot band, then one two-shot band: each limit is its band's.
    ASSERT_LE(e.numSymBands, 2);
    for (int i = 0; i < e.numSymBands; ++i) {
      const SymBand& b = e.symBands[i];
      EXPECT_EQ(b.maxBytes, b.algo == SymAlgo::OneShot ? e.oneShotMaxBytes : e.twoShotMaxBytes);
    }
    if (e.nRanks < 8) {
      // More ranks never widen the symmetric range of the same variants (one-shot traffic per rank
      // grows with peers); where the variants change (pull from 4 ranks on PCIe) the range may.
      const Thresholds* next = DecisionTable::builtIn().thresholdsFor(e.cc, e.link, e.nRanks + 1).entry;
      ASSERT_NE(next, nullptr);
      if (variantsOf(*next) == variantsOf(e)) {
        EXPECT_LE(next->oneShotMaxBytes, e.oneShotMaxBytes);
        EXPECT_LE(next->twoShotMaxBytes, e.twoShotMaxBytes);
      }
    }
    if (e.nRanks == kBeyondEightRanks) EXPECT_EQ(e.numSymBands, 0) << "the kernels take at most 8 ranks";
  }
}

// Push where writes do not collapse (NVLink, NVLink bridges, 2-3 ranks, the Gen4 rows measured with
// push); pull or staged at 4-8 ranks on PCIe Gen5, where the posted-write collapse reports put it
// (docs/sources.md).
TEST(DecisionTable, BuiltInVariantsFollowThePublishedCollapse) {
  const ComputeCapability gen5[] = {{9, 0}, {10, 0}, {10, 3}, {12, 0}, {12, 1}};
  const DecisionTable& t = DecisionTable::builtIn();
  for (const Thresholds& e : t.entries()) {
    SCOPED_TRACE(e.cc.str() + " " + std::string(linkClassName(e.link)) + " " + std::to_string(e.nRanks));
    const bool isGen5 = std::find(std::begin(gen5), std::end(gen5), e.cc) != std::end(gen5);
    const bool collapses = isGen5 && e.link != LinkClass::NvLink && e.nRanks >= 4 && e.nRanks <= 8;
    for (int i = 0; i < e.numSymBands; ++i) {
      const SymBand& b = e.symBands[i];
      if (!collapses) {
        EXPECT_EQ(b.variant, SymVariant::Push);
      } else if (b.algo == SymAlgo::OneShot || e.link != LinkClass::PcieSameSwitch) {
        EXPECT_EQ(b.variant, SymVariant::Pull);
      } else {
        EXPECT_EQ(b.variant, SymVariant::Staged) << "two-shot behind one switch fabric";
      }
    }
  }
  EXPECT_EQ(variantsOf(*t.thresholdsFor({12, 0}, LinkClass::PcieSameSwitch, 2).entry), "oneshot push, twoshot push");
  EXPECT_EQ(variantsOf(*t.thresholdsFor({12, 0}, LinkClass::PcieSameSwitch, 8).entry), "oneshot pull, twoshot staged");
  EXPECT_EQ(variantsOf(*t.thresholdsFor({12, 0}, LinkClass::PcieCrossSocket, 8).entry), "oneshot pull, twoshot pull");
  EXPECT_EQ(variantsOf(*t.thresholdsFor({8, 6}, LinkClass::NvLink, 8).entry), "oneshot push, twoshot push");
}

// Speculative verification of 1-8 tokens at hidden size 7168 all-reduces 14-112 KiB of bf16: at 8
// ranks on every PCIe Gen5 class it goes symmetric, and never as a push.
TEST(DecisionTable, SpeculativeVerifySizesGoSymmetricAtEightPcieRanks) {
  const Policy policy;
  for (LinkClass link : {LinkClass::PcieSameSwitch, LinkClass::PcieSameRoot, LinkClass::PcieCrossSocket})
    for (int tokens = 1; tokens <= 8; ++tokens) {
      const uint64_t bytes = uint64_t(tokens) * 7168 * 2;
      const Thresholds* e = DecisionTable::builtIn().thresholdsFor({12, 0}, link, 8).entry;
      ASSERT_NE(e, nullptr);
      const Decision d = decide(bf16Sum(bytes), facts({12, 0}, link, 8), e, policy);
      EXPECT_TRUE(d.symmetric()) << linkClassName(link) << " " << tokens << " tokens: " << reasonText(d.reason);
      EXPECT_NE(d.variant, SymVariant::Push) << linkClassName(link) << " " << tokens;
    }
}

// The 12.0 PCIe seeds (docs/sources.md): on 8 RTX PRO 6000 one-shot push won up to 32 KiB and lost
// from 64 KiB; across sockets pulls take over (one-shot to 16 KiB, two-shot to 128 KiB).
TEST(DecisionTable, RtxPro6000Seeds) {
  const DecisionTable& t = DecisionTable::builtIn();
  const Thresholds* sys8 = t.thresholdsFor({12, 0}, LinkClass::PcieCrossSocket, 8).entry;
  ASSERT_NE(sys8, nullptr);
  EXPECT_EQ(sys8->oneShotMaxBytes, 16 * KiB);
  EXPECT_EQ(sys8->twoShotMaxBytes, 128 * KiB);
  const Thresholds* sys2 = t.thresholdsFor({12, 0}, LinkClass::PcieCrossSocket, 2).entry;
  ASSERT_NE(sys2, nullptr);
  EXPECT_EQ(sys2->oneShotMaxBytes, 32 * KiB);
  EXPECT_EQ(sys2->twoShotMaxBytes, 0u) << "nothing published measures two-shot across sockets at 2 ranks";
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
    // Each band at its ends, with its variant.
    uint64_t previous = 0;
    for (int i = 0; i < e.numSymBands; ++i) {
      const SymBand& b = e.symBands[i];
      const Path path = b.algo == SymAlgo::OneShot ? Path::SymOneShot : Path::SymTwoShot;
      for (uint64_t bytes : {previous + 1, b.maxBytes}) {
        const Decision d = decide(bf16Sum(bytes), f, &e, policy);
        EXPECT_EQ(d.path, path) << bytes;
        EXPECT_EQ(d.variant, b.variant) << bytes;
      }
      previous = b.maxBytes;
    }
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
  // Forcing picks the algorithm, not the variant: push, even where the entry pulls.
  const Thresholds* pulls = DecisionTable::builtIn().thresholdsFor({12, 0}, LinkClass::PcieCrossSocket, 8).entry;
  const CommFacts sys8 = facts({12, 0}, LinkClass::PcieCrossSocket, 8);
  EXPECT_EQ(decide(bf16Sum(64), sys8, pulls, Policy{}).variant, SymVariant::Pull);
  EXPECT_EQ(decide(bf16Sum(64), sys8, pulls, two).variant, SymVariant::Push);
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
  setPushLimits(e, 32 * KiB, 0);
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

// decide() takes the first band whose maxBytes covers the size and returns its algorithm and variant.
TEST(Decision, SymmetricBandsPickPathAndVariantBySize) {
  Thresholds e;
  e.cc = {12, 0};
  e.link = LinkClass::PcieSameRoot;
  e.nRanks = 8;
  const SymBand bands[] = {{512 * KiB, SymAlgo::TwoShot, SymVariant::Staged},
                           {4 * KiB, SymAlgo::OneShot, SymVariant::Push},
                           {16 * KiB, SymAlgo::OneShot, SymVariant::Pull}};
  ASSERT_TRUE(setSymBands(e, bands));
  EXPECT_EQ(e.numSymBands, 3);
  EXPECT_EQ(e.symBands[0].maxBytes, 4 * KiB) << "sorted by size";
  EXPECT_EQ(e.oneShotMaxBytes, 16 * KiB);
  EXPECT_EQ(e.twoShotMaxBytes, 512 * KiB);
  const CommFacts f = facts({12, 0}, LinkClass::PcieSameRoot, 8);
  struct Case {
    uint64_t bytes;
    Path path;
    SymVariant variant;
    Reason reason;
  };
  const Case cases[] = {
      {1, Path::SymOneShot, SymVariant::Push, Reason::WithinOneShotLimit},
      {4 * KiB, Path::SymOneShot, SymVariant::Push, Reason::WithinOneShotLimit},
      {4 * KiB + 2, Path::SymOneShot, SymVariant::Pull, Reason::WithinOneShotLimit},
      {16 * KiB, Path::SymOneShot, SymVariant::Pull, Reason::WithinOneShotLimit},
      {16 * KiB + 2, Path::SymTwoShot, SymVariant::Staged, Reason::WithinTwoShotLimit},
      {512 * KiB, Path::SymTwoShot, SymVariant::Staged, Reason::WithinTwoShotLimit},
      {512 * KiB + 2, Path::NcclUntouched, SymVariant::Push, Reason::NoBandForSize},
  };
  for (const Case& c : cases) {
    const Decision d = decide(bf16Sum(c.bytes), f, &e, Policy{});
    EXPECT_EQ(d.path, c.path) << c.bytes;
    EXPECT_EQ(d.variant, c.variant) << c.bytes;
    EXPECT_EQ(d.reason, c.reason) << c.bytes << ": " << reasonText(d.reason);
  }

  // A two-shot band may come below a one-shot band; each limit is the largest of its algorithm.
  const SymBand interleaved[] = {{8 * KiB, SymAlgo::TwoShot, SymVariant::Pull},
                                 {64 * KiB, SymAlgo::OneShot, SymVariant::Pull}};
  ASSERT_TRUE(setSymBands(e, interleaved));
  EXPECT_EQ(e.oneShotMaxBytes, 64 * KiB);
  EXPECT_EQ(e.twoShotMaxBytes, 8 * KiB);
  EXPECT_EQ(decide(bf16Sum(8 * KiB), f, &e, Policy{}).path, Path::SymTwoShot);
  EXPECT_EQ(decide(bf16Sum(32 * KiB), f, &e, Policy{}).path, Path::SymOneShot);

  // Limits lowered behind the bands' back (the setup sizes buffers from them): the band is not taken.
  Thresholds edited = e;
  edited.oneShotMaxBytes = 16 * KiB;
  EXPECT_EQ(decide(bf16Sum(32 * KiB), f, &edited, Policy{}).reason, Reason::ExceedsCapacity);
}

// A band naming the halves variant runs it only where the communicator has two halves of at least 2 ranks
// each; elsewhere the push variant of the same algorithm (the same on every rank: the facts are agreed).
TEST(Decision, HalvesBandRunsPushWithoutHalves) {
  Thresholds e;
  e.cc = {12, 0};
  e.link = LinkClass::PcieCrossSocket;
  e.nRanks = 8;
  const SymBand bands[] = {{16 * KiB, SymAlgo::OneShot, SymVariant::Halves},
                           {256 * KiB, SymAlgo::TwoShot, SymVariant::Halves}};
  ASSERT_TRUE(setSymBands(e, bands));
  CommFacts split = facts({12, 0}, LinkClass::PcieCrossSocket, 8);
  split.halves = 2;
  split.middle = LinkClass::PcieCrossSocket;
  split.halfOf = {0, 0, 0, 0, 1, 1, 1, 1};
  Decision d = decide(bf16Sum(4 * KiB), split, &e, Policy{});
  EXPECT_EQ(d.path, Path::SymOneShot);
  EXPECT_EQ(d.variant, SymVariant::Halves);
  d = decide(bf16Sum(64 * KiB), split, &e, Policy{});
  EXPECT_EQ(d.path, Path::SymTwoShot);
  EXPECT_EQ(d.variant, SymVariant::Halves);
  EXPECT_EQ(d.reason, Reason::WithinTwoShotLimit);

  CommFacts flat = split;
  flat.halves = 0;
  d = decide(bf16Sum(4 * KiB), flat, &e, Policy{});
  EXPECT_EQ(d.path, Path::SymOneShot) << "the same algorithm";
  EXPECT_EQ(d.variant, SymVariant::Push);
  EXPECT_EQ(d.reason, Reason::WithinOneShotLimit);
  d = decide(bf16Sum(64 * KiB), flat, &e, Policy{});
  EXPECT_EQ(d.path, Path::SymTwoShot);
  EXPECT_EQ(d.variant, SymVariant::Push);

  // Two ranks split one and one: no half to reduce in, so push.
  CommFacts two = facts({12, 0}, LinkClass::PcieCrossSocket, 2);
  two.halves = 2;
  two.halfOf = {0, 1};
  for (uint64_t bytes : {4 * KiB, 64 * KiB}) {
    d = decide(bf16Sum(bytes), two, &e, Policy{});
    EXPECT_TRUE(d.symmetric()) << bytes;
    EXPECT_EQ(d.variant, SymVariant::Push) << bytes;
  }
  // Four ranks, two per half: the smallest communicator that takes it.
  CommFacts four = facts({12, 0}, LinkClass::PcieCrossSocket, 4);
  four.halves = 2;
  four.halfOf = {0, 0, 1, 1};
  EXPECT_EQ(decide(bf16Sum(4 * KiB), four, &e, Policy{}).variant, SymVariant::Halves);
}

TEST(Decision, SetSymBandsRefusesContradictions) {
  Thresholds e;
  setPushLimits(e, 32 * KiB, 256 * KiB);
  const Thresholds before = e;
  const SymBand sameSize[] = {{16 * KiB, SymAlgo::OneShot, SymVariant::Pull},
                              {16 * KiB, SymAlgo::TwoShot, SymVariant::Pull}};
  EXPECT_FALSE(setSymBands(e, sameSize));
  const SymBand empty[] = {{0, SymAlgo::OneShot, SymVariant::Pull}};
  EXPECT_FALSE(setSymBands(e, empty));
  std::vector<SymBand> nine;
  for (uint64_t i = 1; i <= 9; ++i) nine.push_back({i * KiB, SymAlgo::OneShot, SymVariant::Push});
  EXPECT_FALSE(setSymBands(e, nine));
  EXPECT_EQ(e.numSymBands, before.numSymBands);
  EXPECT_EQ(e.symBands, before.symBands);
  EXPECT_EQ(e.oneShotMaxBytes, 32 * KiB);
  EXPECT_TRUE(setSymBands(e, std::span<const SymBand>(nine.data(), 8)));
  EXPECT_TRUE(setSymBands(e, {}));
  EXPECT_EQ(e.oneShotMaxBytes, 0u);
  EXPECT_EQ(e.twoShotMaxBytes, 0u);
}

// Push limits as the entry line of a table file means them: one-shot push, then two-shot push above.
TEST(Decision, PushLimitsMakeTwoPushBands) {
  Thresholds e;
  setPushLimits(e, 32 * KiB, 256 * KiB);
  ASSERT_EQ(e.numSymBands, 2);
  EXPECT_EQ(e.symBands[0], (SymBand{32 * KiB, SymAlgo::OneShot, SymVariant::Push}));
  EXPECT_EQ(e.symBands[1], (SymBand{256 * KiB, SymAlgo::TwoShot, SymVariant::Push}));
  EXPECT_TRUE(hasOnlyPushLimits(e));
  setPushLimits(e, 0, 1 * MiB);
  ASSERT_EQ(e.numSymBands, 1);
  EXPECT_EQ(e.symBands[0].algo, SymAlgo::TwoShot);
  setPushLimits(e, 64 * KiB, 64 * KiB);  // two-shot adds nothing above the one-shot limit
  ASSERT_EQ(e.numSymBands, 1);
  EXPECT_EQ(e.twoShotMaxBytes, 0u);
  setPushLimits(e, 0, 0);
  EXPECT_EQ(e.numSymBands, 0);
  EXPECT_TRUE(hasOnlyPushLimits(e));
  const SymBand pull[] = {{16 * KiB, SymAlgo::OneShot, SymVariant::Pull}};
  setSymBands(e, pull);
  EXPECT_FALSE(hasOnlyPushLimits(e));
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

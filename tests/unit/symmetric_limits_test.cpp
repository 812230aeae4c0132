// SPDX-License-Identifier: Apache-2.0
// One rule for what the symmetric path can take (core/symmetric_limits.h), the same as the kernels'
// layout, applied by the table file, the decision and the built-in table.
#include "core/symmetric_limits.h"

#include <gtest/gtest.h>

#include <string>

#include "core/decision.h"
#include "core/decision_table.h"
#include "core/table_file.h"
#include "kernels/symmetric_layout.h"

namespace symmem {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

TEST(SymmetricLimits, SameNumbersAsTheKernels) {
  EXPECT_EQ(kSymmetricMaxRanks, kernels::kMaxRanks);
  for (int n = 2; n <= 8; ++n)
    for (uint64_t one : {uint64_t{0}, uint64_t{8}, uint64_t{1000}, 32 * KiB, 1 * MiB + 3, 1 * GiB})
      for (uint64_t two : {uint64_t{0}, uint64_t{16}, uint64_t{4097}, 2 * MiB, 64 * MiB + 5, 1 * GiB})
        EXPECT_EQ(symmetricBufferBytes(n, one, two), kernels::makeLayout(n, one, two).totalBytes)
            << n << " " << one << " " << two;
}

TEST(SymmetricLimits, WhatTheSetupRefuses) {
  EXPECT_EQ(symmetricLimitProblem(8, 256 * KiB, 2 * MiB), "");
  EXPECT_EQ(symmetricLimitProblem(16, 0, 0), "");
  EXPECT_NE(symmetricLimitProblem(16, 0, 1 * MiB).find("at most 8 ranks"), std::string::npos);
  EXPECT_NE(symmetricLimitProblem(kBeyondEightRanks, 1 * MiB, 0).find("at most 8 ranks"), std::string::npos);
  EXPECT_NE(symmetricLimitProblem(2, 2 * GiB, 0).find("oneshot 2GiB is above 1GiB"), std::string::npos);
  EXPECT_NE(symmetricLimitProblem(2, 0, 3 * GiB).find("twoshot 3GiB is above 1GiB"), std::string::npos);
  // A 1 GiB one-shot limit at 8 ranks is 3 rounds x 8 slots of 1 GiB on every GPU.
  const std::string big = symmetricLimitProblem(8, 1 * GiB, 0);
  EXPECT_NE(big.find("needs 24.0GiB of symmetric buffer per GPU at 8 ranks"), std::string::npos) << big;
  EXPECT_NE(big.find("above the 2GiB cap"), std::string::npos) << big;
}

TEST(SymmetricLimits, BuiltInTableStaysWithinTheRule) {
  for (const Thresholds& t : DecisionTable::builtIn().entries())
    EXPECT_EQ(symmetricLimitProblem(t.nRanks, t.oneShotMaxBytes, t.twoShotMaxBytes), "")
        << t.cc.str() << " " << linkClassName(t.link) << " " << t.nRanks;
}

TEST(SymmetricLimits, TableFileRefusesWhatTheSetupWouldRefuse) {
  struct Case {
    const char* entry;
    const char* expected;
  } cases[] = {
      {"entry cc=12.0 link=nvlink ranks=9+ oneshot=0 twoshot=1M", "t.txt:2: the symmetric kernels take at most 8"},
      {"entry cc=12.0 link=nvlink ranks=2 oneshot=2G twoshot=2G", "t.txt:2: oneshot 2GiB is above 1GiB"},
      {"entry cc=12.0 link=nvlink ranks=8 oneshot=1G twoshot=1G", "t.txt:2: needs "},
      {"entry cc=12.0 link=nvlink ranks=4-8 oneshot=256M twoshot=0",
       "t.txt:2: needs 3.0GiB of symmetric buffer per GPU "
       "at 4 ranks"},
  };
  for (const Case& c : cases) {
    TableFileResult r = parseTableText(std::string("symmem-table 1\n") + c.entry + "\n", "t.txt");
    EXPECT_NE(r.error.find(c.expected), std::string::npos) << "got: " << r.error << "\nwanted: " << c.expected;
    EXPECT_TRUE(r.entries.empty());
  }
}

TEST(SymmetricLimits, DecisionKeepsMoreThanEightRanksOnNccl) {
  Thresholds t;
  t.cc = {9, 0};
  t.link = LinkClass::NvLink;
  t.nRanks = kBeyondEightRanks;
  setPushLimits(t, 0, 1 * MiB);  // as a table built some other way might say
  CommFacts facts;
  facts.nRanks = 16;
  facts.cc = {9, 0};
  facts.link = LinkClass::NvLink;
  facts.allPairsP2p = true;
  facts.symmetricCapacityBytes = 1 * MiB;
  const Decision d = decide({Collective::AllReduce, ReduceOp::Sum, DataType::Bfloat16, 64 * KiB}, facts, &t, Policy{});
  EXPECT_FALSE(d.symmetric());
  EXPECT_EQ(d.reason, Reason::TooManyRanks);
  EXPECT_EQ(reasonText(Reason::TooManyRanks), "the symmetric kernels take at most 8 ranks");
}

}  // namespace
}  // namespace symmem

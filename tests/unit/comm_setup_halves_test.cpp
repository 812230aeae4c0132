// SPDX-License-Identifier: Apache-2.0
// SYMMEM_HALVES: where a communicator's halves come from (plugin/interpose/comm_setup.h), and the agreement that
// every rank says the same (plugin/interpose/setup_vote.h).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/settings.h"
#include "plugin/interpose/comm_setup.h"
#include "plugin/interpose/setup_vote.h"
#include "plugin/process/process_context.h"

namespace symmem {
namespace {

std::vector<int> halvesOf(const CommFacts& f, int n) { return {f.halfOf.begin(), f.halfOf.begin() + n}; }

// An agreed topology whose halves are {0, 2} and {1, 3} (as the topology found them).
CommunicatorTopology interleavedFour() {
  CommunicatorTopology t;
  t.symmetricOk = true;
  t.link = LinkClass::PcieCrossSocket;
  t.allPairsP2p = true;
  t.hosts = 1;
  t.halves.level = SplitLevel::Socket;
  t.halves.ok = true;
  t.halves.half[0] = {0, 2};
  t.halves.half[1] = {1, 3};
  t.halves.halfOf = {0, 1, 0, 1};
  t.halves.partnerOf = {1, 0, 3, 2};
  return t;
}

TEST(CommSetupHalves, AutoTakesTheTopologysHalves) {
  const CommFacts f = commFactsFrom(interleavedFour(), 4, HalvesMode::Auto);
  EXPECT_EQ(f.halves, 2);
  EXPECT_EQ(f.middle, LinkClass::PcieCrossSocket);
  EXPECT_EQ(halvesOf(f, 4), (std::vector<int>{0, 1, 0, 1}));
}

TEST(CommSetupHalves, OffKeepsTheFlatKernels) {
  const CommFacts f = commFactsFrom(interleavedFour(), 4, HalvesMode::Off);
  EXPECT_EQ(f.halves, 0);
  EXPECT_EQ(f.middle, LinkClass::Unknown);
}

TEST(CommSetupHalves, SplitDeclaresTheFirstAndSecondHalfOfTheRanks) {
  CommunicatorTopology none = interleavedFour();
  none.halves = Halves{};  // the topology found none (ranks sharing a GPU, an unreadable box)
  const CommFacts eight = commFactsFrom(none, 8, HalvesMode::Split);
  EXPECT_EQ(eight.halves, 2);
  EXPECT_EQ(halvesOf(eight, 8), (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(eight.middle, LinkClass::PcieCrossSocket) << "declared halves: the middle is the worst link";
  // Over the topology's own halves too: what the user declared wins.
  EXPECT_EQ(halvesOf(commFactsFrom(interleavedFour(), 4, HalvesMode::Split), 4), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(halvesOf(commFactsFrom(none, 6, HalvesMode::Split), 6), (std::vector<int>{0, 0, 0, 1, 1, 1}));
  // No halves variant below 4 ranks or for an odd count: none declared.
  EXPECT_EQ(commFactsFrom(none, 2, HalvesMode::Split).halves, 0);
  EXPECT_EQ(commFactsFrom(none, 5, HalvesMode::Split).halves, 0);
}

TEST(CommSetupHalves, TheSettingReadsItsThreeWords) {
  for (const auto& [text, mode] : {std::pair{"auto", HalvesMode::Auto}, std::pair{"off", HalvesMode::Off},
                                   std::pair{"split", HalvesMode::Split}, std::pair{"bogus", HalvesMode::Auto}}) {
    std::vector<std::string> problems;
    const Settings s = Settings::load(
        [&](const char* name) -> const char* { return std::string(name) == "SYMMEM_HALVES" ? text : nullptr; },
        &problems);
    EXPECT_EQ(halvesModeFrom(s), mode) << text;
  }
}

TEST(CommSetupHalves, RanksThatDifferInTheSettingStayOnNcclTogether) {
  ProcessContext a, b;
  b.halves = HalvesMode::Split;
  const VoteOutcome out = tallyVotes({voteOf(a), voteOf(b)});
  EXPECT_FALSE(out.go);
  EXPECT_NE(out.why.find("differ in SYMMEM_HALVES"), std::string::npos) << out.why;
  EXPECT_TRUE(tallyVotes({voteOf(b), voteOf(b)}).go);
}

}  // namespace
}  // namespace symmem

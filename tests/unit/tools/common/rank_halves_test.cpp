// SPDX-License-Identifier: Apache-2.0
// The halves symmem-bench and symmem-tune give their ranks: --halves parsed strictly (two equal halves of
// at least 2 ranks, rank 0 in half 0), else the topology's, and the line that says why there are none.
#include "tools/common/rank_halves.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topology/topology_file.h"

namespace symmem {
namespace {

std::string fixture(const std::string& name) { return std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/" + name; }

Topology load(const std::string& name) {
  auto topo = loadTopologyFile(fixture(name));
  EXPECT_TRUE(topo.ok()) << topo.error();
  return topo.ok() ? topo.value() : Topology();
}

TEST(RankHalves, DeclaredHalvesAreTwoEqualHalvesOfTwoOrMore) {
  std::vector<int> out;
  EXPECT_EQ(parseHalvesArg("--halves", "0,0,1,1", out), "");
  EXPECT_EQ(out, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(parseHalvesArg("--halves", "0,1,0,1,1,0", out), "");
  EXPECT_EQ(out, (std::vector<int>{0, 1, 0, 1, 1, 0}));
  EXPECT_EQ(parseHalvesArg("--halves", "0,0,0,0,1,1,1,1", out), "");
  struct Case {
    const char* text;
    const char* why;
  };
  const Case bad[] = {
      {"0,1", "halves need an even number of ranks from 4 to 8, not 2"},
      {"0,0,0,1", "unequal halves (3 and 1 ranks)"},
      {"1,1,0,0", "rank 0 must be in half 0"},
      {"0,0,1,2", "'2' is not a half"},
      {"0,0,1,", "empty item"},
      {"", "empty item"},
      {"0, 0,1,1", "' 0' is not a half"},
      {"0,0,0,0,0,1,1,1,1,1", "10 ranks"},
  };
  for (const Case& c : bad) {
    out = {7};
    const std::string why = parseHalvesArg("--halves", c.text, out);
    EXPECT_NE(why.find(std::string("bad --halves '") + c.text + "': " + c.why), std::string::npos) << why;
    EXPECT_NE(why.find("expected one half (0 or 1) per rank, like 0,0,1,1"), std::string::npos) << why;
    EXPECT_EQ(out, std::vector<int>{7}) << "left as it was: " << c.text;
  }
}

TEST(RankHalves, FromTheTopologyOrDeclared) {
  const Topology asus = load("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  const std::vector<int> eight = {0, 1, 2, 3, 4, 5, 6, 7};
  RankHalves h = rankHalves(asus, eight, {});
  ASSERT_TRUE(h.ok) << h.why;
  EXPECT_FALSE(h.declared);
  EXPECT_EQ(h.halfOf, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  bool on = false;
  std::array<uint8_t, kMaxHalvesVariantRanks> halfOf{};
  h.fill(on, halfOf);
  EXPECT_TRUE(on);
  EXPECT_EQ(halfOf, (std::array<uint8_t, 8>{0, 0, 0, 0, 1, 1, 1, 1}));

  // Two GPUs on one switch: none, and the reason says so.
  h = rankHalves(asus, std::vector<int>{0, 1}, {});
  EXPECT_FALSE(h.ok);
  EXPECT_TRUE(h.halfOf.empty());
  EXPECT_EQ(h.why, "no halves on these GPUs (every pair shares one PCIe switch: there is no middle to cross)");
  EXPECT_EQ(halvesSkippedLine(2, h),
            "halves skipped at 2 ranks: no halves on these GPUs (every pair shares one PCIe switch: there is no "
            "middle to cross); --halves declares them");
  h.fill(on, halfOf);
  EXPECT_FALSE(on);
  EXPECT_EQ(halfOf, (std::array<uint8_t, 8>{}));
  // One GPU on each side: halves to the topology, but the variant needs two per half.
  h = rankHalves(asus, std::vector<int>{0, 4}, {});
  EXPECT_FALSE(h.ok);
  EXPECT_NE(h.why.find("at least 2 per half"), std::string::npos) << h.why;

  // Declared halves win where they name as many ranks, even on GPUs without halves (one NVLink box).
  const Topology nvlink = load("h100-sxm-x8-nv18.topo.txt");
  h = rankHalves(nvlink, std::vector<int>{0, 1, 2, 3}, {0, 1, 0, 1});
  ASSERT_TRUE(h.ok);
  EXPECT_TRUE(h.declared);
  EXPECT_EQ(h.halfOf, (std::vector<int>{0, 1, 0, 1}));
  h = rankHalves(nvlink, std::vector<int>{0, 1, 2, 3, 4, 5}, {0, 1, 0, 1});
  EXPECT_FALSE(h.ok) << "declared for another number of ranks";
  EXPECT_NE(h.why.find("NVLink"), std::string::npos) << h.why;
}

}  // namespace
}  // namespace symmem

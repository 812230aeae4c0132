// SPDX-License-Identifier: Apache-2.0
// The two halves of a communicator (topology/halves.h): for every recorded topology in
// tests/data/topologies, the whole node and sub-communicators; the gathered-facts form (agreement.h)
// against the node form; views that disagree; the halves carried into CommFacts, which decide() does
// not read yet.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/decision.h"
#include "core/decision_table.h"
#include "plugin/interpose/comm_setup.h"
#include "tests/unit/required_parts.h"
#include "topology/agreement.h"
#include "topology/classify.h"
#include "topology/describe.h"
#include "topology/halves.h"
#include "topology/topology_file.h"

namespace symmem {
namespace {

using Group = std::vector<int>;

std::string fixture(const std::string& name) { return std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/" + name; }

// A fixture with made-up bus ids (topo -m has none), so that per-rank facts can be gathered from it.
Topology load(const std::string& name) {
  auto t = loadTopologyFile(fixture(name));
  EXPECT_TRUE(t.ok()) << name << ": " << t.error();
  if (!t.ok()) return Topology();
  Topology topo = std::move(t).value();
  for (int g = 0; g < topo.gpuCount(); ++g) {
    if (!topo.gpu(g).pciBusId.empty()) continue;
    char bus[32];
    std::snprintf(bus, sizeof bus, "0000:%02x:00.0", 0x10 + g);
    topo.gpu(g).pciBusId = bus;
  }
  return topo;
}

std::vector<RankFacts> gather(const Topology& node, const std::vector<int>& gpus, uint64_t host = 0x1111) {
  std::vector<RankFacts> all;
  for (size_t r = 0; r < gpus.size(); ++r)
    all.push_back(rankFactsFor(node, node.gpu(gpus[r]).pciBusId, static_cast<int>(r), {}, host));
  return all;
}

std::vector<int> allOf(const Topology& t) {
  std::vector<int> all(t.gpuCount());
  for (int g = 0; g < t.gpuCount(); ++g) all[g] = g;
  return all;
}

// The halves by position; partners follow from them (position i of half 0 with position i of half 1).
void expectHalves(const Halves& h, SplitLevel level, const Group& half0, const Group& half1) {
  EXPECT_TRUE(h.ok) << h.reason;
  EXPECT_EQ(h.level, level) << splitLevelName(h.level);
  EXPECT_EQ(h.half[0], half0);
  EXPECT_EQ(h.half[1], half1);
  EXPECT_TRUE(h.reason.empty()) << h.reason;
  const size_t n = half0.size() + half1.size();
  ASSERT_EQ(h.halfOf.size(), n);
  ASSERT_EQ(h.partnerOf.size(), n);
  for (size_t k = 0; k < half0.size() && k < half1.size(); ++k) {
    EXPECT_EQ(h.halfOf[half0[k]], 0);
    EXPECT_EQ(h.halfOf[half1[k]], 1);
    EXPECT_EQ(h.partnerOf[half0[k]], half1[k]);
    EXPECT_EQ(h.partnerOf[half1[k]], half0[k]);
  }
}

void expectNone(const Halves& h, SplitLevel level, const std::string& reason) {
  EXPECT_FALSE(h.ok);
  EXPECT_EQ(h.level, level) << splitLevelName(h.level);
  EXPECT_EQ(h.reason, reason);
  EXPECT_TRUE(h.halfOf.empty());
  EXPECT_TRUE(h.partnerOf.empty());
  EXPECT_EQ(h.hierarchicalCrossingFlows(), 0);
  EXPECT_EQ(h.flatPushCrossingFlows(), 0);
}

Halves of(const Topology& t, const std::vector<int>& gpus) { return halvesOf(t, gpus); }

// ---- 8x RTX PRO 6000, ASUS ESC8000A-E13P: two sockets, two Broadcom virtual switches under each ----

TEST(TopologyHalves, AsusEsc8000aE13pSplitsAtTheSocket) {
  const auto t = load("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  ASSERT_EQ(t.gpuCount(), 8);
  const Halves h = halvesOfAll(t);
  expectHalves(h, SplitLevel::Socket, {0, 1, 2, 3}, {4, 5, 6, 7});
  EXPECT_EQ(h.hierarchicalCrossingFlows(), 8);
  EXPECT_EQ(h.flatPushCrossingFlows(), 32);
  EXPECT_EQ(middleLinkClass(h.level), LinkClass::PcieCrossSocket);
}

TEST(TopologyHalves, AsusEsc8000aE13pSubCommunicators) {
  const auto t = load("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  // One socket: its two virtual switches meet at the root complex.
  expectHalves(of(t, {0, 1, 2, 3}), SplitLevel::RootComplex, {0, 1}, {2, 3});
  expectHalves(of(t, {4, 5, 6, 7}), SplitLevel::RootComplex, {0, 1}, {2, 3});
  // 4 of 8 across the sockets: the socket splits them, whatever the switches below.
  expectHalves(of(t, {0, 1, 4, 5}), SplitLevel::Socket, {0, 1}, {2, 3});
  expectHalves(of(t, {0, 2, 4, 6}), SplitLevel::Socket, {0, 1}, {2, 3});
  // 6 of 8: three on each socket.
  const Halves six = of(t, {0, 1, 2, 4, 5, 6});
  expectHalves(six, SplitLevel::Socket, {0, 1, 2}, {3, 4, 5});
  EXPECT_EQ(six.hierarchicalCrossingFlows(), 6);
  EXPECT_EQ(six.flatPushCrossingFlows(), 18);
  // 2 GPUs: one on each side of whatever is between them; none on one switch.
  expectHalves(of(t, {0, 4}), SplitLevel::Socket, {0}, {1});
  expectHalves(of(t, {1, 3}), SplitLevel::RootComplex, {0}, {1});
  expectNone(of(t, {0, 1}), SplitLevel::None, "every pair shares one PCIe switch: there is no middle to cross");
  expectNone(of(t, {0, 1, 2, 3, 4, 5}), SplitLevel::Socket,
             "unequal halves at the socket level: GPUs {0,1,2,3} and {4,5} (4 and 2); the flat kernels only");
  expectNone(of(t, {0, 1, 2}), SplitLevel::RootComplex,
             "unequal halves at the root-complex level: GPUs {0,1} and {2} (2 and 1); the flat kernels only");
  expectNone(of(t, {0}), SplitLevel::None, "a single GPU has no other half");
  expectNone(of(t, {0, 0}), SplitLevel::Unknown, "GPU 0 is listed twice");
}

TEST(TopologyHalves, HalfZeroIsRankZerosAndPositionsFollowRankOrder) {
  const auto t = load("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  // Rank 0 on socket 1: socket 1 is half 0.
  expectHalves(of(t, {4, 5, 6, 7, 0, 1, 2, 3}), SplitLevel::Socket, {0, 1, 2, 3}, {4, 5, 6, 7});
  // Ranks alternating between the sockets: partners are neighbours in rank order.
  const Halves alt = of(t, {0, 4, 1, 5, 2, 6, 3, 7});
  expectHalves(alt, SplitLevel::Socket, {0, 2, 4, 6}, {1, 3, 5, 7});
  EXPECT_EQ(alt.partnerOf, (std::vector<int>{1, 0, 3, 2, 5, 4, 7, 6}));
  // GPUs out of order inside each half: positions, not GPU indices, pair up.
  const Halves mixed = of(t, {3, 0, 6, 5, 1, 2, 7, 4});
  expectHalves(mixed, SplitLevel::Socket, {0, 1, 4, 5}, {2, 3, 6, 7});
  EXPECT_EQ(mixed.halfOf, (std::vector<int>{0, 0, 1, 1, 0, 0, 1, 1}));
}

// ---- 8x RTX PRO 6000, WRX90 with three Microchip switches: two root ports, two leaves under each ----

TEST(TopologyHalves, Wrx90MicrochipSplitsAtTheRootComplex) {
  const auto t = load("rtx-pro-6000-server-x8-wrx90-microchip-3switch.topo.txt");
  ASSERT_EQ(t.gpuCount(), 8);
  const Halves h = halvesOfAll(t);
  expectHalves(h, SplitLevel::RootComplex, {0, 1, 2, 3}, {4, 5, 6, 7});
  // At the root-complex level the halves are the PCIe islands.
  EXPECT_EQ(pcieIslands(t), (std::vector<Group>{h.half[0], h.half[1]}));
  EXPECT_EQ(h.flatPushCrossingFlows(), 32);
  EXPECT_EQ(middleLinkClass(h.level), LinkClass::PcieSameRoot);
}

TEST(TopologyHalves, Wrx90MicrochipSubCommunicators) {
  const auto t = load("rtx-pro-6000-server-x8-wrx90-microchip-3switch.topo.txt");
  // One root switch: its two leaf switches meet at the root switch (PXB).
  const Halves leaves = of(t, {0, 1, 2, 3});
  expectHalves(leaves, SplitLevel::Switch, {0, 1}, {2, 3});
  EXPECT_EQ(middleLinkClass(leaves.level), LinkClass::PcieSameSwitch);
  expectHalves(of(t, {0, 2, 4, 6}), SplitLevel::RootComplex, {0, 1}, {2, 3});
  expectHalves(of(t, {0, 1, 2, 4, 5, 6}), SplitLevel::RootComplex, {0, 1, 2}, {3, 4, 5});
  expectHalves(of(t, {1, 3}), SplitLevel::Switch, {0}, {1});
  expectHalves(of(t, {3, 7}), SplitLevel::RootComplex, {0}, {1});
  expectNone(of(t, {6, 7}), SplitLevel::None, "every pair shares one PCIe switch: there is no middle to cross");
  expectNone(of(t, {0, 1, 2}), SplitLevel::Switch,
             "unequal halves at the switch level: GPUs {0,1} and {2} (2 and 1); the flat kernels only");
  expectNone(of(t, {0, 1, 2, 3, 4, 5}), SplitLevel::RootComplex,
             "unequal halves at the root-complex level: GPUs {0,1,2,3} and {4,5} (4 and 2); the flat kernels only");
}

// ---- 8x RTX 4090, every pair SYS: the NUMA columns split it ----

TEST(TopologyHalves, Rtx4090AllSysSplitsAtTheSocketByNuma) {
  const auto t = load("rtx-4090-x8-dual-socket-all-sys-2nic.topo.txt");
  ASSERT_EQ(t.gpuCount(), 8);
  expectHalves(halvesOfAll(t), SplitLevel::Socket, {0, 1, 2, 3}, {4, 5, 6, 7});
  expectHalves(of(t, {0, 1, 4, 5}), SplitLevel::Socket, {0, 1}, {2, 3});
  expectHalves(of(t, {1, 2, 3, 5, 6, 7}), SplitLevel::Socket, {0, 1, 2}, {3, 4, 5});
  expectHalves(of(t, {2, 6}), SplitLevel::Socket, {0}, {1});
  // One socket: every GPU on its own root port, nothing groups them.
  expectNone(of(t, {0, 1, 2, 3}), SplitLevel::RootComplex,
             "4 groups at the root-complex level: GPUs {0} {1} {2} {3}; halves need exactly two");
  expectNone(of(t, {0, 1, 2, 3, 4, 5}), SplitLevel::Socket,
             "unequal halves at the socket level: GPUs {0,1,2,3} and {4,5} (4 and 2); the flat kernels only");

  // Without the NUMA columns SYS counts as the socket for every pair: no groups at all.
  Topology blind = t;
  for (int g = 0; g < blind.gpuCount(); ++g) blind.gpu(g).numaNode.reset();
  expectNone(halvesOfAll(blind), SplitLevel::Socket,
             "8 groups at the socket level: GPUs {0} {1} {2} {3} {4} {5} {6} {7}; halves need exactly two");
}

// ---- 4x RTX 6000 Ada, ASUS ESC8000A-E12: each GPU on its own root port, two on each socket ----

TEST(TopologyHalves, Rtx6000AdaDualSocketSplitsAtTheSocket) {
  const auto t = load("rtx-6000-ada-x4-asus-esc8000a-e12-dual-socket.topo.txt");
  ASSERT_EQ(t.gpuCount(), 4);
  const Halves h = halvesOfAll(t);
  expectHalves(h, SplitLevel::Socket, {0, 1}, {2, 3});
  EXPECT_EQ(h.hierarchicalCrossingFlows(), 4);
  EXPECT_EQ(h.flatPushCrossingFlows(), 8);
  expectHalves(of(t, {1, 3}), SplitLevel::Socket, {0}, {1});
  expectHalves(of(t, {0, 1}), SplitLevel::RootComplex, {0}, {1});
  expectNone(of(t, {0, 1, 2}), SplitLevel::Socket,
             "unequal halves at the socket level: GPUs {0,1} and {2} (2 and 1); the flat kernels only");
}

// ---- the flows across the middle, per kernel and variant ----

// Every flat variant crosses once per (GPU, GPU of the other half) pair in each phase that moves data
// between all GPUs (one-shot: one; two-shot: the scatter and the gather); halves once per GPU.
TEST(TopologyHalves, CrossingFlowsPerKernelAndVariant) {
  struct Case {
    int perHalf;
    int oneShotFlat, twoShotFlat, halves;
  };
  const Case cases[] = {{1, 2, 4, 2}, {2, 8, 16, 4}, {3, 18, 36, 6}, {4, 32, 64, 8}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.perHalf);
    for (SymVariant v : {SymVariant::Push, SymVariant::Pull, SymVariant::Staged}) {
      EXPECT_EQ(crossingFlows(SymAlgo::OneShot, v, c.perHalf), c.oneShotFlat) << symVariantName(v);
      EXPECT_EQ(crossingFlows(SymAlgo::TwoShot, v, c.perHalf), c.twoShotFlat) << symVariantName(v);
    }
    EXPECT_EQ(crossingFlows(SymAlgo::OneShot, SymVariant::Halves, c.perHalf), c.halves);
    EXPECT_EQ(crossingFlows(SymAlgo::TwoShot, SymVariant::Halves, c.perHalf), c.halves);
  }
  EXPECT_EQ(crossingFlows(SymAlgo::OneShot, SymVariant::Push, 0), 0);
  EXPECT_EQ(crossingFlows(SymAlgo::TwoShot, SymVariant::Halves, 0), 0);

  const auto t = load("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  const Halves h = halvesOfAll(t);
  EXPECT_EQ(h.crossingFlows(SymAlgo::OneShot, SymVariant::Staged), 32);
  EXPECT_EQ(h.crossingFlows(SymAlgo::TwoShot, SymVariant::Pull), 64);
  EXPECT_EQ(h.crossingFlows(SymAlgo::TwoShot, SymVariant::Halves), 8);
  const Halves none = of(t, {0, 1});
  EXPECT_EQ(none.crossingFlows(SymAlgo::OneShot, SymVariant::Push), 0) << "no halves, no middle";
  EXPECT_EQ(none.crossingFlows(SymAlgo::TwoShot, SymVariant::Halves), 0);
}

// ---- the other captures ----

TEST(TopologyHalves, TwoGpuBoxesAreTwoHalvesOfOne) {
  for (const char* name : {"rtx-5090-x2-wrx80-phb.topo.txt", "rtx-6000-ada-x2-puget-threadripper-wrx90-phb.topo.txt"}) {
    SCOPED_TRACE(name);
    const auto t = load(name);
    const Halves h = halvesOfAll(t);
    expectHalves(h, SplitLevel::RootComplex, {0}, {1});
    EXPECT_EQ(h.hierarchicalCrossingFlows(), 2);
    EXPECT_EQ(h.flatPushCrossingFlows(), 2);  // two GPUs: halves change nothing
  }
}

TEST(TopologyHalves, L40sVmHasFourRootPortsAndNoHalves) {
  const auto t = load("l40s-x4-aws-g6e-12xlarge-vm.topo.txt");
  expectNone(halvesOfAll(t), SplitLevel::RootComplex,
             "4 groups at the root-complex level: GPUs {0} {1} {2} {3}; halves need exactly two");
  expectHalves(of(t, {1, 3}), SplitLevel::RootComplex, {0}, {1});
}

TEST(TopologyHalves, NvlinkHasNoHalves) {
  const std::string why = "GPU 0 and GPU 1 are joined by NVLink: halves are for PCIe-only communicators";
  for (const char* name :
       {"h100-sxm-x8-nv18.topo.txt", "a100-sxm4-x8-aws-p4d-24xlarge-nv12.topo.txt", "h20-3e-x8-nv18-8nic.topo.txt"}) {
    SCOPED_TRACE(name);
    const auto t = load(name);
    expectNone(halvesOfAll(t), SplitLevel::None, why);
    expectNone(of(t, {0, 1, 4, 5}), SplitLevel::None, why);
  }
  // The bridged pair beside a PCIe GPU: the NVLink pair refuses halves; without it, two halves of one.
  const auto a6000 = load("rtx-a6000-x3-nvlink-bridge-pair.topo.txt");
  expectNone(halvesOfAll(a6000), SplitLevel::RootComplex, why);
  expectHalves(of(a6000, {1, 2}), SplitLevel::RootComplex, {0}, {1});
}

TEST(TopologyHalves, HwlocDgx2IsNvlink) {
  SYMMEM_SKIP_WITHOUT_HWLOC();
  const auto t = load("dgx2h-v100-sxm3-x16-nvswitch.hwloc.xml");
  ASSERT_EQ(t.gpuCount(), 16);
  expectNone(halvesOfAll(t), SplitLevel::None,
             "GPU 0 and GPU 1 are joined by NVLink: halves are for PCIe-only communicators");
}

// Every file of the fixture folder has its halves written down above, or is named here as not a
// topology of its own: a new capture without expectations fails this test.
TEST(TopologyHalves, EveryFixtureHasExpectations) {
  const std::set<std::string> covered{
      "rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt",
      "rtx-pro-6000-server-x8-wrx90-microchip-3switch.topo.txt",
      "rtx-4090-x8-dual-socket-all-sys-2nic.topo.txt",
      "rtx-6000-ada-x4-asus-esc8000a-e12-dual-socket.topo.txt",
      "rtx-5090-x2-wrx80-phb.topo.txt",
      "rtx-6000-ada-x2-puget-threadripper-wrx90-phb.topo.txt",
      "l40s-x4-aws-g6e-12xlarge-vm.topo.txt",
      "h100-sxm-x8-nv18.topo.txt",
      "a100-sxm4-x8-aws-p4d-24xlarge-nv12.topo.txt",
      "h20-3e-x8-nv18-8nic.topo.txt",
      "rtx-a6000-x3-nvlink-bridge-pair.topo.txt",
      "dgx2h-v100-sxm3-x16-nvswitch.hwloc.xml",
  };
  const std::set<std::string> notOnTheirOwn{
      "MANIFEST.md",
      "rtx-5090-x2-wrx80-phb.p2p-rw.txt",        // P2P only, read with its topo -m capture
      "aws-p4d-24xlarge-a100-x8.nccl-topo.xml",  // NCCL's format, refused by the loader
  };
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(fixture(""))) {
    const std::string name = entry.path().filename().string();
    ++seen;
    EXPECT_TRUE(covered.count(name) || notOnTheirOwn.count(name)) << name << " has no expected halves";
  }
  EXPECT_EQ(seen, static_cast<int>(covered.size() + notOnTheirOwn.size()));
}

// ---- the gathered-facts form ----

bool sameHalves(const Halves& a, const Halves& b) {
  return a.ok == b.ok && a.level == b.level && a.half[0] == b.half[0] && a.half[1] == b.half[1] &&
         a.halfOf == b.halfOf && a.partnerOf == b.partnerOf;
}

std::string asRanks(std::string reason) {
  for (size_t at; (at = reason.find("GPU")) != std::string::npos;) reason.replace(at, 3, "rank");
  return reason;
}

// Every rank's own view, gathered, gives what the node form gives, for every fixture and several
// communicators over it; where GPU k is rank k, the same reason too.
TEST(TopologyHalves, GatheredFactsAgreeWithTheNodeForm) {
  const char* names[] = {
      "rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt",
      "rtx-pro-6000-server-x8-wrx90-microchip-3switch.topo.txt",
      "rtx-4090-x8-dual-socket-all-sys-2nic.topo.txt",
      "rtx-6000-ada-x4-asus-esc8000a-e12-dual-socket.topo.txt",
      "rtx-5090-x2-wrx80-phb.topo.txt",
      "rtx-6000-ada-x2-puget-threadripper-wrx90-phb.topo.txt",
      "l40s-x4-aws-g6e-12xlarge-vm.topo.txt",
      "h100-sxm-x8-nv18.topo.txt",
      "a100-sxm4-x8-aws-p4d-24xlarge-nv12.topo.txt",
      "h20-3e-x8-nv18-8nic.topo.txt",
      "rtx-a6000-x3-nvlink-bridge-pair.topo.txt",
  };
  int withHalves = 0;
  for (const char* name : names) {
    const auto t = load(name);
    const int n = t.gpuCount();
    std::vector<std::vector<int>> comms{allOf(t)};
    std::vector<int> reversed = allOf(t);
    std::reverse(reversed.begin(), reversed.end());
    comms.push_back(reversed);
    if (n >= 4) comms.push_back({0, 1, n - 2, n - 1});
    if (n >= 8) comms.push_back({0, 1, 2, 4, 5, 6});
    if (n >= 8) comms.push_back({0, 4, 1, 5, 2, 6, 3, 7});
    if (n >= 8) comms.push_back({0, 1, 2, 3, 4, 5});
    comms.push_back({0, n - 1});
    for (const auto& gpus : comms) {
      std::string list;
      for (int g : gpus) list += std::to_string(g) + " ";
      SCOPED_TRACE(std::string(name) + ": GPUs " + list);
      const Halves node = halvesOf(t, gpus);
      const auto ranks = gather(t, gpus);
      const Halves gathered = halvesOn(ranks);
      EXPECT_TRUE(sameHalves(node, gathered)) << node.reason << " / " << gathered.reason;
      EXPECT_TRUE(sameHalves(agreeOn(ranks).halves, gathered));
      bool identity = true;  // GPU k is rank k: the reasons name the same numbers
      for (size_t k = 0; k < gpus.size(); ++k) identity &= gpus[k] == static_cast<int>(k);
      if (identity) EXPECT_EQ(asRanks(node.reason), gathered.reason);
      withHalves += gathered.ok;
    }
  }
  EXPECT_GE(withHalves, 20);  // the loop compared halves, not only their absence
}

TEST(TopologyHalves, ViewsThatDisagreeGiveNoHalvesOnEveryRank) {
  const auto t = load("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  auto ranks = gather(t, allOf(t));
  ASSERT_TRUE(halvesOn(ranks).ok);

  // Rank 0 sees GPU4 behind its own root complex; rank 4 sees GPU0 across the socket.
  Topology skewed = t;
  skewed.setPath(0, 4, PathKind::Node);
  ranks[0] = rankFactsFor(skewed, t.gpu(0).pciBusId, 0, {}, 0x1111);
  ASSERT_EQ(ranks[4].peers[0].path, static_cast<uint8_t>(PathKind::Sys));
  const std::string why = "rank 0 sees its path to rank 4 as NODE, rank 4 sees it as SYS: the halves are not agreed";
  expectNone(halvesOn(ranks), SplitLevel::Unknown, why);
  // Every rank runs the same function over the same bytes: the same answer, whichever rank runs it.
  std::vector<RankFacts> received(ranks.size());
  std::memcpy(received.data(), ranks.data(), sizeof(RankFacts) * ranks.size());
  const auto agreed = agreeOn(received);
  expectNone(agreed.halves, SplitLevel::Unknown, why);
  EXPECT_EQ(agreed.link, LinkClass::PcieCrossSocket) << "the link takes the worse view, as before";

  // Inside one switch and one level up: also a different tier, also not agreed.
  auto leaves = gather(t, {0, 1, 2, 3});
  Topology cascaded = t;
  cascaded.setPath(1, 0, PathKind::Pxb);
  leaves[1] = rankFactsFor(cascaded, t.gpu(1).pciBusId, 1, {}, 0x1111);
  expectNone(halvesOn(leaves), SplitLevel::Unknown,
             "rank 0 sees its path to rank 1 as PIX, rank 1 sees it as PXB: the halves are not agreed");

  // PHB against NODE is one tier (the root complex): the halves stand.
  auto sameTier = gather(t, allOf(t));
  Topology phb = t;
  phb.setPath(2, 0, PathKind::Phb);
  sameTier[2] = rankFactsFor(phb, t.gpu(2).pciBusId, 2, {}, 0x1111);
  expectHalves(halvesOn(sameTier), SplitLevel::Socket, {0, 1, 2, 3}, {4, 5, 6, 7});
}

TEST(TopologyHalves, GatheredFactsThatCannotBeTrusted) {
  const auto t = load("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  auto twoHosts = gather(t, {0, 1, 4, 5});
  twoHosts[2].hostHash = twoHosts[3].hostHash = 0x2222;
  expectNone(halvesOn(twoHosts), SplitLevel::Unknown, "the communicator spans more than one host");

  expectNone(halvesOn(gather(t, {0, 4, 4, 0})), SplitLevel::Unknown,
             "rank 0 (0000:10:00.0) and rank 3 use the same GPU");

  auto otherBuild = gather(t, {0, 4});
  otherBuild[1].version = 99;
  expectNone(halvesOn(otherBuild), SplitLevel::Unknown, "rank 1 runs a different nccl-symmem build");

  auto garbage = gather(t, {0, 1, 4, 5});
  garbage[2].peers[0].path = 200;  // rank 2 (GPU4)'s view of GPU0
  expectNone(halvesOn(garbage), SplitLevel::Unknown, "the path between rank 0 and rank 2 is unknown");

  auto stranger = gather(t, {0, 4});
  stranger.push_back(rankFactsFor(t, "0000:99:00.0", 2, {12, 0}, 0x1111));
  expectNone(halvesOn(stranger), SplitLevel::Unknown, "the path between rank 0 and rank 2 is unknown");
}

// A group joined through switch-local pairs that holds a pair as slow as the middle: no cut is trusted.
TEST(TopologyHalves, PathsThatContradictEachOther) {
  std::vector<GpuInfo> gpus(4);
  for (int g = 0; g < 4; ++g) gpus[g].index = g;
  Topology t(gpus);
  t.setPath(0, 1, PathKind::Pix);
  t.setPath(1, 2, PathKind::Pix);
  t.setPath(0, 2, PathKind::Node);
  t.setPath(0, 3, PathKind::Node);
  t.setPath(1, 3, PathKind::Node);
  t.setPath(2, 3, PathKind::Node);
  expectNone(halvesOfAll(t), SplitLevel::RootComplex,
             "GPU 0 and GPU 2 are joined through faster links, yet their path crosses the root-complex level: the "
             "paths contradict each other");
  t.setPath(2, 3, PathKind::Unknown);
  expectNone(halvesOfAll(t), SplitLevel::Unknown, "the path between GPU 2 and GPU 3 is unknown");
}

// ---- CommFacts ----

TEST(TopologyHalves, CommFactsCarryTheHalvesAsPlainData) {
  const auto t = load("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  CommFacts whole = commFactsFrom(agreeOn(gather(t, allOf(t))), 8);
  EXPECT_EQ(whole.halves, 2);
  EXPECT_EQ(whole.middle, LinkClass::PcieCrossSocket);
  EXPECT_EQ(std::vector<int>(whole.halfOf.begin(), whole.halfOf.begin() + 8),
            (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));

  const CommFacts alternating = commFactsFrom(agreeOn(gather(t, {4, 0, 5, 1})), 4);
  EXPECT_EQ(alternating.halves, 2);
  EXPECT_EQ(std::vector<int>(alternating.halfOf.begin(), alternating.halfOf.begin() + 4),
            (std::vector<int>{0, 1, 0, 1}));

  const CommFacts oneSocket = commFactsFrom(agreeOn(gather(t, {0, 1, 2, 3})), 4);
  EXPECT_EQ(oneSocket.middle, LinkClass::PcieSameRoot);

  const CommFacts unequal = commFactsFrom(agreeOn(gather(t, {0, 1, 2, 3, 4, 5})), 6);
  EXPECT_EQ(unequal.halves, 0);
  EXPECT_EQ(unequal.middle, LinkClass::Unknown);

  // The halves are data for later kernels: decide() answers as without them.
  CommFacts flat = whole;
  flat.halves = 0;
  flat.middle = LinkClass::Unknown;
  flat.halfOf = {};
  flat.cc = whole.cc = {12, 0};
  flat.allPairsP2p = whole.allPairsP2p = true;
  flat.symmetricCapacityBytes = whole.symmetricCapacityBytes = 1ull << 30;
  const Thresholds* entry = DecisionTable::builtIn().thresholdsFor({12, 0}, LinkClass::PcieCrossSocket, 8).entry;
  ASSERT_NE(entry, nullptr);
  for (uint64_t bytes = 8; bytes <= (64ull << 20); bytes *= 4) {
    const CollRequest r{Collective::AllReduce, ReduceOp::Sum, DataType::Bfloat16, bytes};
    const Decision a = decide(r, whole, entry, Policy{});
    const Decision b = decide(r, flat, entry, Policy{});
    EXPECT_EQ(a.path, b.path) << bytes;
    EXPECT_EQ(a.variant, b.variant) << bytes;
    EXPECT_EQ(a.reason, b.reason) << bytes;
  }
}

// ---- what symmem-info prints ----

std::string describe(const std::string& name) { return describeTopology(load(name)); }

TEST(TopologyHalves, DescribedForPeople) {
  const std::string asus = describe("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  EXPECT_NE(asus.find("Pairs crossing the socket: 0-4 0-5 0-6 0-7 1-4 1-5 1-6 1-7 2-4 2-5 2-6 2-7 3-4 3-5 3-6 3-7\n"
                      "Halves (the two sides of the slowest level that splits the GPUs): {0,1,2,3} {4,5,6,7}, split "
                      "at the socket\n"
                      "Pairs across the middle: 0-4 1-5 2-6 3-7\n"
                      "Flows crossing the middle per all-reduce (halves: one per GPU, to its partner; the others: each "
                      "GPU to the 4 GPUs of the other half, pull as reads, two-shot in its scatter and again in its "
                      "gather):\n"
                      "  one-shot push 32, pull 32, staged 32, halves 8\n"
                      "  two-shot push 64, pull 64, staged 64, halves 8\n"),
            std::string::npos)
      << asus;
  const std::string wrx90 = describe("rtx-pro-6000-server-x8-wrx90-microchip-3switch.topo.txt");
  EXPECT_NE(wrx90.find("Halves (the two sides of the slowest level that splits the GPUs): {0,1,2,3} {4,5,6,7}, split "
                       "at the CPU root complex\n"),
            std::string::npos)
      << wrx90;
  const std::string ada = describe("rtx-6000-ada-x4-asus-esc8000a-e12-dual-socket.topo.txt");
  EXPECT_NE(ada.find("Pairs across the middle: 0-2 1-3\n"
                     "Flows crossing the middle per all-reduce (halves: one per GPU, to its partner; the others: each "
                     "GPU to the 2 GPUs of the other half, pull as reads, two-shot in its scatter and again in its "
                     "gather):\n"
                     "  one-shot push 8, pull 8, staged 8, halves 4\n"
                     "  two-shot push 16, pull 16, staged 16, halves 4\n"),
            std::string::npos)
      << ada;
  const std::string pair = describe("rtx-5090-x2-wrx80-phb.topo.txt");
  EXPECT_NE(pair.find("each GPU to the 1 GPU of the other half,"), std::string::npos) << pair;
  EXPECT_NE(pair.find("  one-shot push 2, pull 2, staged 2, halves 2\n"), std::string::npos) << pair;
  const std::string l40s = describe("l40s-x4-aws-g6e-12xlarge-vm.topo.txt");
  EXPECT_NE(l40s.find("Halves (the two sides of the slowest level that splits the GPUs): none (4 groups at the "
                      "root-complex level: GPUs {0} {1} {2} {3}; halves need exactly two)\n"),
            std::string::npos)
      << l40s;
  EXPECT_EQ(l40s.find("Pairs across the middle"), std::string::npos) << l40s;
  const std::string h100 = describe("h100-sxm-x8-nv18.topo.txt");
  EXPECT_NE(h100.find("none (GPU 0 and GPU 1 are joined by NVLink: halves are for PCIe-only communicators)\n"),
            std::string::npos)
      << h100;
}

}  // namespace
}  // namespace symmem

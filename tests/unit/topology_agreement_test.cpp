// SPDX-License-Identifier: Apache-2.0
// Agreement across ranks from gathered RankFacts, and the text symmem-info prints.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "topology/agreement.h"
#include "topology/describe.h"
#include "topology/topology_file.h"

namespace symmem {
namespace {

constexpr uint64_t kHostA = 0x1111;
constexpr uint64_t kHostB = 0x2222;

// 4x CC 12.0 on one socket: {0,1} and {2,3} share switches, the rest meet at the root (NODE).
// GPU3 sits on NUMA node 1 to give a SYS pair that really crosses sockets.
Topology fourGpuBox() {
  std::vector<GpuInfo> gpus;
  const char* bus[4] = {"0000:06:00.0", "0000:07:00.0", "0000:75:00.0", "0000:76:00.0"};
  for (int i = 0; i < 4; ++i) {
    GpuInfo g;
    g.index = i;
    g.pciBusId = bus[i];
    g.capability = {12, 0};
    g.numaNode = 0;
    gpus.push_back(g);
  }
  Topology t(std::move(gpus));
  for (int a = 0; a < 4; ++a)
    for (int b = a + 1; b < 4; ++b) t.setPath(a, b, a / 2 == b / 2 ? PathKind::Pix : PathKind::Node);
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      if (a != b) t.setP2p(a, b, Support::Yes, Support::Yes);
  return t;
}

std::vector<RankFacts> gather(const Topology& node, const std::vector<int>& gpus, uint64_t host = kHostA) {
  std::vector<RankFacts> all;
  for (size_t r = 0; r < gpus.size(); ++r)
    all.push_back(rankFactsFor(node, node.gpu(gpus[r]).pciBusId, static_cast<int>(r), {}, host));
  return all;
}

TEST(TopologyAgreement, AllGoodOnOneSwitch) {
  const auto node = fourGpuBox();
  const auto ranks = gather(node, {0, 1});
  const auto c = agreeOn(ranks);
  EXPECT_TRUE(c.symmetricOk) << c.reason;
  EXPECT_EQ(c.link, LinkClass::PcieSameSwitch);
  EXPECT_TRUE(c.allPairsP2p);
  EXPECT_EQ(c.capability, (ComputeCapability{12, 0}));
  EXPECT_TRUE(c.capabilitiesEqual);
  EXPECT_EQ(c.hosts, 1);
  EXPECT_EQ(c.reason, "2 ranks on one host, compute capability 12.0, link pcie-switch, P2P on every pair");
}

TEST(TopologyAgreement, AllGoodAcrossTheRoot) {
  const auto node = fourGpuBox();
  const auto c = agreeOn(gather(node, {0, 1, 2, 3}));
  EXPECT_TRUE(c.symmetricOk) << c.reason;
  EXPECT_EQ(c.link, LinkClass::PcieSameRoot);
}

TEST(TopologyAgreement, MixedCapabilities) {
  const auto node = fourGpuBox();
  auto ranks = gather(node, {0, 1, 2});
  ranks[2].ccMajor = 8;
  ranks[2].ccMinor = 9;
  const auto c = agreeOn(ranks);
  EXPECT_FALSE(c.symmetricOk);
  EXPECT_FALSE(c.capabilitiesEqual);
  EXPECT_EQ(c.capability, (ComputeCapability{8, 9}));
  EXPECT_EQ(c.reason, "symmetric path off: mixed compute capabilities: 12.0 on rank 0, 8.9 on rank 2");
}

TEST(TopologyAgreement, OnePairWithoutP2p) {
  auto node = fourGpuBox();
  node.setP2p(2, 0, Support::Yes, Support::No);  // only GPU2's view of GPU0 refuses writes
  const auto c = agreeOn(gather(node, {0, 1, 2}));
  EXPECT_FALSE(c.symmetricOk);
  EXPECT_FALSE(c.allPairsP2p);
  EXPECT_EQ(c.link, LinkClass::PcieSameRoot);  // the link itself is fine
  EXPECT_EQ(c.reason, "symmetric path off: no P2P read+write between rank 0 (0000:06:00.0) and rank 2 (0000:75:00.0)");
}

TEST(TopologyAgreement, TwoHosts) {
  const auto node = fourGpuBox();
  auto ranks = gather(node, {0, 1});
  auto other = gather(node, {0, 1}, kHostB);
  ranks.insert(ranks.end(), other.begin(), other.end());
  const auto c = agreeOn(ranks);
  EXPECT_FALSE(c.symmetricOk);
  EXPECT_EQ(c.hosts, 2);
  EXPECT_EQ(c.link, LinkClass::Unknown);
  EXPECT_FALSE(c.allPairsP2p);
  EXPECT_EQ(c.reason, "symmetric path off: the communicator spans 2 hosts");
}

TEST(TopologyAgreement, SysOnOneNumaNodeIsSameRootAndAcrossIsSocket) {
  auto node = fourGpuBox();
  node.setPath(0, 3, PathKind::Sys);
  EXPECT_EQ(agreeOn(gather(node, {0, 3})).link, LinkClass::PcieSameRoot);
  node.gpu(3).numaNode = 1;
  const auto c = agreeOn(gather(node, {0, 3}));
  EXPECT_EQ(c.link, LinkClass::PcieCrossSocket);
  EXPECT_TRUE(c.symmetricOk) << c.reason;  // cross-socket is a link class, not a veto; the table decides
}

TEST(TopologyAgreement, GpuMissingFromTopologyMakesLinkUnknown) {
  const auto node = fourGpuBox();
  auto ranks = gather(node, {0, 1});
  ranks.push_back(rankFactsFor(node, "0000:99:00.0", 2, {12, 0}, kHostA));
  const auto c = agreeOn(ranks);
  EXPECT_FALSE(c.symmetricOk);
  EXPECT_EQ(c.link, LinkClass::Unknown);
  EXPECT_NE(c.reason.find("the link between rank 0 (0000:06:00.0) and rank 2 (0000:99:00.0) is unknown"),
            std::string::npos)
      << c.reason;
}

// The testing mode (SYMMEM_TEST_SHARED_GPU, every rank having voted for it): ranks sharing a GPU pass,
// their pair adds no link, and every other pair is judged as always.
TEST(TopologyAgreement, RanksSharingAGpuPassOnlyInTheTestingMode) {
  const auto node = fourGpuBox();
  EXPECT_FALSE(agreeOn(gather(node, {1, 1})).symmetricOk);
  const auto shared = agreeOn(gather(node, {1, 1, 1, 1}), SharedGpu::AllowForTesting);
  EXPECT_TRUE(shared.symmetricOk) << shared.reason;
  EXPECT_TRUE(shared.allPairsP2p);
  const auto mixed = agreeOn(gather(node, {1, 1, 2}), SharedGpu::AllowForTesting);
  EXPECT_TRUE(mixed.symmetricOk) << mixed.reason;
  EXPECT_EQ(mixed.link, agreeOn(gather(node, {1, 2})).link) << "the shared pair must not hide the others' link";
  EXPECT_FALSE(agreeOn(gather(node, {1, 1}, kHostA), SharedGpu::AllowForTesting).hosts > 1);
  auto twoHosts = gather(node, {1, 1});
  twoHosts[1].hostHash = kHostB;  // the plugin's own host check still decides "one host"
  EXPECT_FALSE(agreeOn(twoHosts, SharedGpu::AllowForTesting).symmetricOk);
}

TEST(TopologyAgreement, SameGpuTwiceSingleRankAndUnknownCapability) {
  const auto node = fourGpuBox();
  const auto dup = agreeOn(gather(node, {1, 1}));
  EXPECT_FALSE(dup.symmetricOk);
  EXPECT_NE(dup.reason.find("use the same GPU"), std::string::npos) << dup.reason;

  const auto single = agreeOn(gather(node, {2}));
  EXPECT_FALSE(single.symmetricOk);
  EXPECT_EQ(single.link, LinkClass::Unknown);

  auto ranks = gather(node, {0, 1});
  ranks[1].ccMajor = 0;
  const auto cc = agreeOn(ranks);
  EXPECT_FALSE(cc.symmetricOk);
  EXPECT_FALSE(cc.capability.known());
}

TEST(TopologyAgreement, SurvivesTheWireAndBadBytes) {
  const auto node = fourGpuBox();
  const auto ranks = gather(node, {0, 1, 2, 3});
  std::vector<unsigned char> wire(sizeof(RankFacts) * ranks.size());
  std::memcpy(wire.data(), ranks.data(), wire.size());
  std::vector<RankFacts> received(ranks.size());
  std::memcpy(received.data(), wire.data(), wire.size());
  const auto a = agreeOn(ranks);
  const auto b = agreeOn(received);
  EXPECT_EQ(a.symmetricOk, b.symmetricOk);
  EXPECT_EQ(a.link, b.link);
  EXPECT_EQ(a.reason, b.reason);

  // A peer with garbage in its table: no crash, just "unknown" and fallback.
  received[1].peerCount = 1000;
  received[1].peers[0].path = 200;
  const auto c = agreeOn(received);
  EXPECT_FALSE(c.symmetricOk);
  EXPECT_EQ(c.link, LinkClass::Unknown);

  received[3].version = 99;
  EXPECT_NE(agreeOn(received).reason.find("rank 3 runs a different nccl-symmem build"), std::string::npos);
}

TEST(TopologyAgreement, RankFactsFromAnySpelling) {
  const auto node = fourGpuBox();
  const auto f = rankFactsFor(node, "00000000:75:00.0", 5, {}, kHostA);
  EXPECT_STREQ(f.pciBusId, "0000:75:00.0");
  EXPECT_EQ(f.cudaDevice, 5);
  EXPECT_EQ(f.ccMajor, 12);
  EXPECT_EQ(f.numaNode, 0);
  EXPECT_EQ(f.peerCount, 3u);
  EXPECT_EQ(f.peers[2].pciAddress, packPciAddress("0000:76:00.0"));
  EXPECT_EQ(f.peers[2].path, static_cast<uint8_t>(PathKind::Pix));
  EXPECT_EQ(packPciAddress("not a bus id"), 0u);
  EXPECT_EQ(thisHostHash(), thisHostHash());
}

// ---- describeTopology ----

std::string describeFixture(const std::vector<std::string>& names) {
  std::vector<std::string> paths;
  for (const auto& n : names) paths.push_back(std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/" + n);
  auto t = loadTopologyFiles(paths);
  EXPECT_TRUE(t.ok()) << t.error();
  return t.ok() ? describeTopology(t.value()) : std::string();
}

TEST(TopologyDescribe, AsusBoxShowsIslandsAndCrossings) {
  const auto text = describeFixture({"rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt"});
  EXPECT_NE(text.find(": 8 GPUs\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  GPU0  X                PIX pcie-switch  NODE pcie-root   NODE pcie-root   SYS pcie-sys"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("PCIe islands (GPUs sharing a switch): {0,1} {2,3} {4,5} {6,7}\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Pairs crossing the CPU root complex: 0-2 0-3 1-2 1-3 4-6 4-7 5-6 5-7\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Pairs crossing the socket: 0-4 0-5 0-6 0-7 1-4"), std::string::npos) << text;
  EXPECT_NE(text.find("Communicator over all GPUs: link class pcie-sys, P2P on every pair: unknown\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("P2P: unknown\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  - p2p unknown"), std::string::npos) << text;
}

TEST(TopologyDescribe, P2pMatrixShown) {
  const auto text = describeFixture({"rtx-5090-x2-wrx80-phb.topo.txt", "rtx-5090-x2-wrx80-phb.p2p-rw.txt"});
  EXPECT_NE(text.find("P2P read+write (row reads from / writes to column):\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  GPU0  X     no\n"), std::string::npos) << text;
  EXPECT_NE(text.find("link class pcie-root, P2P on every pair: no"), std::string::npos) << text;
  EXPECT_NE(text.find("PCIe islands (GPUs sharing a switch): none"), std::string::npos) << text;
}

TEST(TopologyDescribe, EmptyModelSaysWhy) {
  Topology t;
  t.setSource("nvml");
  t.addNote("no GPUs discovered: cannot load libnvidia-ml.so.1");
  EXPECT_EQ(describeTopology(t),
            "Topology from nvml: 0 GPUs\n\nNot known:\n  - no GPUs discovered: cannot load libnvidia-ml.so.1\n");
}

}  // namespace
}  // namespace symmem

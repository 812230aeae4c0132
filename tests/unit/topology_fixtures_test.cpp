// SPDX-License-Identifier: Apache-2.0
// Every capture in tests/data/topologies (see its MANIFEST.md) parsed and classified, with the pairs,
// islands and crossings the manifest describes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/required_parts.h"
#include "topology/classify.h"
#include "topology/topology_file.h"

namespace symmem {
namespace {

std::string fixture(const std::string& name) { return std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/" + name; }

Topology load(const std::string& name) {
  auto t = loadTopologyFile(fixture(name));
  EXPECT_TRUE(t.ok()) << t.error();
  return t.ok() ? std::move(t).value() : Topology();
}

using Islands = std::vector<std::vector<int>>;

TEST(TopologyFixtures, AsusEsc8000aE13pBroadcomVirtualSwitches) {
  const auto t = load("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  ASSERT_EQ(t.gpuCount(), 8);
  for (auto [a, b] : std::vector<std::pair<int, int>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}) {
    EXPECT_EQ(t.link(a, b).path, PathKind::Pix) << a << "-" << b;
    EXPECT_EQ(pairLinkClass(t, a, b), LinkClass::PcieSameSwitch) << a << "-" << b;
    EXPECT_EQ(crossingOf(t, a, b), Crossing::None);
  }
  // GPU0/GPU2 share a physical chip but not a virtual switch: nvidia-smi says NODE.
  EXPECT_EQ(t.link(0, 2).path, PathKind::Node);
  EXPECT_EQ(pairLinkClass(t, 0, 2), LinkClass::PcieSameRoot);
  EXPECT_EQ(crossingOf(t, 0, 2), Crossing::RootComplex);
  EXPECT_EQ(t.link(0, 4).path, PathKind::Sys);
  EXPECT_EQ(pairLinkClass(t, 0, 4), LinkClass::PcieCrossSocket);
  EXPECT_EQ(crossingOf(t, 0, 4), Crossing::Socket);
  EXPECT_EQ(pcieIslands(t), (Islands{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(t.gpu(3).numaNode, 0);
  EXPECT_EQ(t.gpu(4).numaNode, 1);
  EXPECT_EQ(t.gpu(0).cpuAffinity, "0-63,128-191");
  EXPECT_EQ(t.gpu(7).cpuAffinity, "64-127,192-238");
  const std::vector<int> sameSwitch{0, 1}, sameSocket{0, 1, 2, 3};
  EXPECT_EQ(linkClassOf(t, sameSwitch), LinkClass::PcieSameSwitch);
  EXPECT_EQ(linkClassOf(t, sameSocket), LinkClass::PcieSameRoot);
  EXPECT_EQ(linkClassOfAll(t), LinkClass::PcieCrossSocket);
  EXPECT_EQ(p2pOfAll(t), Support::Unknown);  // topo -m says nothing about P2P
}

TEST(TopologyFixtures, Wrx90MicrochipThreeTiers) {
  const auto t = load("rtx-pro-6000-server-x8-wrx90-microchip-3switch.topo.txt");
  ASSERT_EQ(t.gpuCount(), 8);
  EXPECT_EQ(t.link(0, 1).path, PathKind::Pix);
  EXPECT_EQ(t.link(0, 2).path, PathKind::Pxb);
  EXPECT_EQ(t.link(0, 4).path, PathKind::Node);
  EXPECT_EQ(pairLinkClass(t, 0, 2), LinkClass::PcieSameSwitch);
  EXPECT_EQ(pairLinkClass(t, 3, 7), LinkClass::PcieSameRoot);
  EXPECT_EQ(pcieIslands(t), (Islands{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  const std::vector<int> leftRootSwitch{0, 1, 2, 3};
  EXPECT_EQ(linkClassOf(t, leftRootSwitch), LinkClass::PcieSameSwitch);
  EXPECT_EQ(linkClassOfAll(t), LinkClass::PcieSameRoot);
  EXPECT_EQ(crossingOf(t, 1, 5), Crossing::RootComplex);
  // Hand-aligned README paste: no affinity columns, so the model says NUMA is unknown.
  EXPECT_FALSE(t.gpu(0).numaNode.has_value());
  bool numaNote = false;
  for (const auto& n : t.notes()) numaNote |= n.starts_with("numa unknown");
  EXPECT_TRUE(numaNote);
}

TEST(TopologyFixtures, Rtx5090PhbButGeForceBlocksP2p) {
  const std::vector<std::string> files{fixture("rtx-5090-x2-wrx80-phb.topo.txt"),
                                       fixture("rtx-5090-x2-wrx80-phb.p2p-rw.txt")};
  auto t = loadTopologyFiles(files);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->link(0, 1).path, PathKind::Phb);
  EXPECT_EQ(pairLinkClass(t.value(), 0, 1), LinkClass::PcieSameRoot);
  EXPECT_EQ(t->link(0, 1).p2pRead, Support::No);
  EXPECT_EQ(t->link(1, 0).p2pWrite, Support::No);
  EXPECT_EQ(pairP2p(t.value(), 0, 1), Support::No);
  EXPECT_EQ(p2pOfAll(t.value()), Support::No);
  for (const auto& n : t->notes()) EXPECT_FALSE(n.starts_with("p2p unknown")) << n;

  // Alone, the topology knows nothing about P2P.
  const auto bare = load("rtx-5090-x2-wrx80-phb.topo.txt");
  EXPECT_EQ(pairP2p(bare, 0, 1), Support::Unknown);
}

TEST(TopologyFixtures, Rtx4090AllSysSplitByNuma) {
  const auto t = load("rtx-4090-x8-dual-socket-all-sys-2nic.topo.txt");
  ASSERT_EQ(t.gpuCount(), 8);  // the two NIC rows and columns are not GPUs
  for (int g = 0; g < 4; ++g) EXPECT_EQ(t.gpu(g).numaNode, 0) << g;
  for (int g = 4; g < 8; ++g) EXPECT_EQ(t.gpu(g).numaNode, 1) << g;
  EXPECT_EQ(t.link(0, 1).path, PathKind::Sys);
  // SYS on one NUMA node is not a socket crossing.
  EXPECT_EQ(pairLinkClass(t, 0, 1), LinkClass::PcieSameRoot);
  EXPECT_EQ(crossingOf(t, 0, 1), Crossing::RootComplex);
  EXPECT_EQ(pairLinkClass(t, 0, 4), LinkClass::PcieCrossSocket);
  EXPECT_EQ(crossingOf(t, 3, 4), Crossing::Socket);
  const std::vector<int> socket0{0, 1, 2, 3}, socket1{4, 5, 6, 7}, mixed{2, 6};
  EXPECT_EQ(linkClassOf(t, socket0), LinkClass::PcieSameRoot);
  EXPECT_EQ(linkClassOf(t, socket1), LinkClass::PcieSameRoot);
  EXPECT_EQ(linkClassOf(t, mixed), LinkClass::PcieCrossSocket);
  EXPECT_TRUE(pcieIslands(t).empty());
}

TEST(TopologyFixtures, A6000NvlinkBridgePlusPcieThird) {
  const auto t = load("rtx-a6000-x3-nvlink-bridge-pair.topo.txt");
  ASSERT_EQ(t.gpuCount(), 3);
  EXPECT_EQ(t.link(0, 1).path, PathKind::NvLink);
  EXPECT_EQ(t.link(0, 1).nvlinks, 4);
  EXPECT_EQ(pairLinkClass(t, 0, 1), LinkClass::NvLink);
  EXPECT_EQ(t.link(1, 2).path, PathKind::Node);
  EXPECT_EQ(pairLinkClass(t, 0, 2), LinkClass::PcieSameRoot);
  const std::vector<int> bridged{0, 1};
  EXPECT_EQ(linkClassOf(t, bridged), LinkClass::NvLink);
  EXPECT_EQ(linkClassOfAll(t), LinkClass::PcieSameRoot);
  EXPECT_EQ(t.gpu(2).numaNode, 0);  // no "GPU NUMA ID" column on this older driver
  EXPECT_EQ(t.gpu(2).cpuAffinity, "0-31,64-95");
}

TEST(TopologyFixtures, H100Nv18Everywhere) {
  const auto t = load("h100-sxm-x8-nv18.topo.txt");
  ASSERT_EQ(t.gpuCount(), 8);
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b) {
        EXPECT_EQ(t.link(a, b).nvlinks, 18);
        EXPECT_EQ(pairLinkClass(t, a, b), LinkClass::NvLink);
      }
  EXPECT_EQ(linkClassOfAll(t), LinkClass::NvLink);
  EXPECT_EQ(crossingOf(t, 0, 7), Crossing::None);  // across sockets, but over NVLink
  EXPECT_EQ(t.gpu(4).numaNode, 1);
  EXPECT_EQ(t.gpu(4).cpuAffinity, "48-95,144-191");
}

TEST(TopologyFixtures, A100P4dNv12) {
  const auto t = load("a100-sxm4-x8-aws-p4d-24xlarge-nv12.topo.txt");
  ASSERT_EQ(t.gpuCount(), 8);
  EXPECT_EQ(t.link(3, 4).nvlinks, 12);
  EXPECT_EQ(linkClassOfAll(t), LinkClass::NvLink);
}

TEST(TopologyFixtures, H20Nv18WithEightNics) {
  const auto t = load("h20-3e-x8-nv18-8nic.topo.txt");
  ASSERT_EQ(t.gpuCount(), 8);
  EXPECT_EQ(t.link(0, 6).nvlinks, 18);
  EXPECT_EQ(linkClassOfAll(t), LinkClass::NvLink);
  EXPECT_EQ(t.gpu(6).numaNode, 1);
  // GPUs are PIX only to NICs, never to each other: no GPU island.
  EXPECT_TRUE(pcieIslands(t).empty());
}

TEST(TopologyFixtures, L40sVmAllNode) {
  const auto t = load("l40s-x4-aws-g6e-12xlarge-vm.topo.txt");
  ASSERT_EQ(t.gpuCount(), 4);
  EXPECT_EQ(t.link(1, 3).path, PathKind::Node);
  EXPECT_EQ(linkClassOfAll(t), LinkClass::PcieSameRoot);
  EXPECT_EQ(t.gpu(3).cpuAffinity, "0-47");
}

TEST(TopologyFixtures, Rtx6000AdaDualSocketRootPorts) {
  const auto t = load("rtx-6000-ada-x4-asus-esc8000a-e12-dual-socket.topo.txt");
  ASSERT_EQ(t.gpuCount(), 4);
  EXPECT_EQ(pairLinkClass(t, 0, 1), LinkClass::PcieSameRoot);
  EXPECT_EQ(pairLinkClass(t, 2, 3), LinkClass::PcieSameRoot);
  EXPECT_EQ(pairLinkClass(t, 1, 2), LinkClass::PcieCrossSocket);
  EXPECT_EQ(crossingOf(t, 0, 3), Crossing::Socket);
  EXPECT_EQ(t.gpu(2).numaNode, 1);
  EXPECT_TRUE(pcieIslands(t).empty());
}

TEST(TopologyFixtures, Rtx6000AdaPugetPhbPair) {
  const auto t = load("rtx-6000-ada-x2-puget-threadripper-wrx90-phb.topo.txt");
  ASSERT_EQ(t.gpuCount(), 2);
  EXPECT_EQ(t.link(0, 1).path, PathKind::Phb);
  EXPECT_EQ(linkClassOfAll(t), LinkClass::PcieSameRoot);
  EXPECT_EQ(crossingOf(t, 0, 1), Crossing::RootComplex);
}

TEST(TopologyFixtures, HwlocDgx2SixteenV100OverNvswitch) {
  SYMMEM_SKIP_WITHOUT_HWLOC();
  const auto t = load("dgx2h-v100-sxm3-x16-nvswitch.hwloc.xml");
  ASSERT_EQ(t.gpuCount(), 16);
  EXPECT_EQ(t.gpu(0).pciBusId, "0000:34:00.0");
  EXPECT_EQ(t.gpu(1).pciBusId, "0000:36:00.0");
  EXPECT_EQ(t.gpu(0).name, "Tesla V100-SXM3-32GB-H");
  EXPECT_EQ(t.gpu(0).numaNode, 0);
  EXPECT_EQ(t.gpu(15).numaNode, 1);
  for (int a = 0; a < 16; ++a)
    for (int b = a + 1; b < 16; ++b) {
      ASSERT_EQ(t.link(a, b).path, PathKind::NvLink) << a << "-" << b;
      EXPECT_EQ(t.link(a, b).nvlinks, 6) << a << "-" << b;  // V100 SXM3: 6 links, one to each switch
    }
  EXPECT_EQ(linkClassOfAll(t), LinkClass::NvLink);
  EXPECT_EQ(t.indexOfBusId("00000000:36:00.0"), 1);
}

TEST(TopologyFixtures, HwlocXmlWithoutHwlocSaysSo) {
  SYMMEM_SKIP_WITH_HWLOC();
  auto t = loadTopologyFile(fixture("dgx2h-v100-sxm3-x16-nvswitch.hwloc.xml"));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("needs hwloc"), std::string::npos) << t.error();
}

TEST(TopologyFixtures, NcclTopologyXmlIsRejectedClearly) {
  auto t = loadTopologyFile(fixture("aws-p4d-24xlarge-a100-x8.nccl-topo.xml"));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("aws-p4d-24xlarge-a100-x8.nccl-topo.xml: NCCL topology XML"), std::string::npos)
      << t.error();
  EXPECT_NE(t.error().find("not supported"), std::string::npos) << t.error();
}

TEST(TopologyFixtures, SniffEveryFixture) {
  struct Case {
    const char* name;
    TopologyFileKind kind;
  };
  const Case cases[] = {
      {"a100-sxm4-x8-aws-p4d-24xlarge-nv12.topo.txt", TopologyFileKind::TopoMatrix},
      {"aws-p4d-24xlarge-a100-x8.nccl-topo.xml", TopologyFileKind::NcclXml},
      {"dgx2h-v100-sxm3-x16-nvswitch.hwloc.xml", TopologyFileKind::HwlocXml},
      {"h100-sxm-x8-nv18.topo.txt", TopologyFileKind::TopoMatrix},
      {"rtx-5090-x2-wrx80-phb.p2p-rw.txt", TopologyFileKind::P2pMatrix},
      {"rtx-pro-6000-server-x8-wrx90-microchip-3switch.topo.txt", TopologyFileKind::TopoMatrix},
  };
  for (const auto& c : cases) {
    FILE* f = std::fopen(fixture(c.name).c_str(), "rb");
    ASSERT_NE(f, nullptr) << c.name;
    std::string text;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    std::fclose(f);
    EXPECT_EQ(sniffTopologyFile(text), c.kind) << c.name;
  }
}

}  // namespace
}  // namespace symmem

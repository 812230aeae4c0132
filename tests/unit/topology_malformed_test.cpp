// SPDX-License-Identifier: Apache-2.0
// Bad and unusual input: every failure is an error value naming file, line and what was expected.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "topology/classify.h"
#include "topology/pci_bus_id.h"
#include "topology/topology_file.h"

namespace symmem {
namespace {

const char* kFourGpus =
    "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tPIX\tNODE\tNODE\t0-31\t0\t\tN/A\n"
    "GPU1\tPIX\t X \tNODE\tNODE\t0-31\t0\t\tN/A\n"
    "GPU2\tNODE\tNODE\t X \tPIX\t0-31\t0\t\tN/A\n"
    "GPU3\tNODE\tNODE\tPIX\t X \t0-31\t0\t\tN/A\n";

std::string error(std::string_view text) {
  auto t = parseTopoMatrix(text, "topo.txt");
  EXPECT_FALSE(t.ok());
  return t.ok() ? std::string("(parsed)") : t.error();
}

std::string writeTemp(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(TopologyMalformed, WellFormedBaseline) {
  auto t = parseTopoMatrix(kFourGpus, "topo.txt");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->gpuCount(), 4);
  EXPECT_EQ(pcieIslands(t.value()), (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
}

TEST(TopologyMalformed, TruncatedRowNamesLineAndCount) {
  const std::string text =
      "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
      "GPU0\t X \tPIX\tNODE\tNODE\t0-31\t0\n"
      "GPU1\tPIX\t X \tNODE\tNODE\t0-31\t0\n"
      "GPU2\tNODE\tNODE\t X \t0-31\t0\n"
      "GPU3\tNODE\tNODE\tPIX\t X \t0-31\t0\n";
  EXPECT_EQ(error(text), "topo.txt:4: expected 4 link cells for GPU2, found 3");
}

TEST(TopologyMalformed, FileCutInTheMiddleOfTheMatrix) {
  const std::string full = kFourGpus;
  const std::string cut = full.substr(0, full.find("GPU2\tNODE"));
  EXPECT_EQ(error(cut), "topo.txt:4: expected the row for GPU2 (4 rows in the header), found the end of the file");
  // Cut inside a row, after "GPU2\tNODE\t".
  const std::string midRow = full.substr(0, full.find("NODE\t X"));
  EXPECT_EQ(error(midRow), "topo.txt:4: expected 4 link cells for GPU2, found 1");
}

TEST(TopologyMalformed, UnknownLinkToken) {
  std::string text = kFourGpus;
  text.replace(text.find("GPU1\tPIX\t X \tNODE"), 17, "GPU1\tPIX\t X \tNVX");
  EXPECT_EQ(error(text),
            "topo.txt:3: unknown link token 'NVX' for GPU1-GPU2 (expected X, NV#, PIX, PXB, PHB, NODE or SYS)");
}

TEST(TopologyMalformed, FewerRowsThanHeaderColumns) {
  std::string text = kFourGpus;
  text.erase(text.find("GPU3\tNODE"));
  text += "\nLegend:\n\n  X    = Self\n";
  EXPECT_EQ(error(text), "topo.txt:5: expected the row for GPU3 (4 rows in the header), found no more rows");
}

TEST(TopologyMalformed, MoreRowsThanHeaderColumns) {
  std::string text = kFourGpus;
  text += "GPU4\tNODE\tNODE\tPIX\tPIX\t X \t0-31\t0\t\tN/A\n";
  EXPECT_EQ(error(text), "topo.txt:6: unexpected row 'GPU4': the header has 4 columns");
}

TEST(TopologyMalformed, RowsOutOfOrderOrMislabelled) {
  std::string text = kFourGpus;
  text.replace(text.find("GPU1\tPIX"), 4, "GPU7");
  EXPECT_EQ(error(text), "topo.txt:3: expected the row for GPU1, found 'GPU7'");
}

TEST(TopologyMalformed, AsymmetricMatrix) {
  std::string text = kFourGpus;
  text.replace(text.find("GPU3\tNODE"), 9, "GPU3\tSYS\t");
  text.erase(text.find("SYS\t\t") + 4, 1);
  EXPECT_EQ(error(text), "topo.txt:5: GPU3-GPU0 is SYS but GPU0-GPU3 is NODE; the matrix must be symmetric");
}

TEST(TopologyMalformed, DiagonalMustBeSelf) {
  std::string text = kFourGpus;
  text.replace(text.find("GPU0\t X "), 8, "GPU0\tPIX");
  EXPECT_EQ(error(text), "topo.txt:2: expected X for GPU0 with itself, found 'PIX'");
}

TEST(TopologyMalformed, TooManyCellsInARow) {
  const std::string text =
      "GPU0\tGPU1\n"
      "GPU0\t X \tPIX\tPIX\n"
      "GPU1\tPIX\t X \n";
  EXPECT_EQ(error(text),
            "topo.txt:2: expected 2 link cells and at most 0 affinity values for GPU0, found 'PIX' after them");
}

TEST(TopologyMalformed, EmptyFile) {
  EXPECT_EQ(error(""), "topo.txt:1: expected the header of `nvidia-smi topo -m`, found an empty file");
  EXPECT_EQ(sniffTopologyFile(" \n\t\n"), TopologyFileKind::Empty);
  auto t = loadTopologyFile(writeTemp("empty.topo.txt", ""));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("empty.topo.txt:1: expected a topology, found an empty file"), std::string::npos)
      << t.error();
}

TEST(TopologyMalformed, BinaryGarbage) {
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk.push_back(static_cast<char>((i * 131 + 7) & 0xff));
  EXPECT_EQ(sniffTopologyFile(junk), TopologyFileKind::Binary);
  auto t = loadTopologyFile(writeTemp("garbage.bin", junk));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("garbage.bin: expected a text topology file, found binary data"), std::string::npos)
      << t.error();
  // Straight into the parser, garbage is still only an error.
  EXPECT_FALSE(parseTopoMatrix(junk, "garbage.bin").ok());
  EXPECT_FALSE(parseP2pMatrix(junk, "garbage.bin").ok());
}

TEST(TopologyMalformed, TextThatIsNoMatrix) {
  EXPECT_EQ(error("hello world\nsecond line\n"),
            "topo.txt:1: expected the header of `nvidia-smi topo -m` (GPU0 GPU1 ...), found 'hello'");
}

TEST(TopologyMalformed, MissingFile) {
  auto t = loadTopologyFile("/nonexistent/dir/topo.txt");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("/nonexistent/dir/topo.txt: cannot open"), std::string::npos) << t.error();
}

TEST(TopologyMalformed, TruncatedHwlocXml) {
  std::ifstream in(std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/dgx2h-v100-sxm3-x16-nvswitch.hwloc.xml");
  std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(xml.size(), 1000u);
  const std::string cut = xml.substr(0, xml.size() / 2);
  EXPECT_EQ(sniffTopologyFile(cut), TopologyFileKind::HwlocXml);
  auto t = parseHwlocXml(cut, "cut.xml");
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(t.error().starts_with("cut.xml: ")) << t.error();
}

TEST(TopologyMalformed, ForeignXml) {
  EXPECT_EQ(sniffTopologyFile("<?xml version=\"1.0\"?>\n<!-- c -->\n<svg></svg>"), TopologyFileKind::OtherXml);
}

// ---- Unusual but valid shapes ----

TEST(TopologyMalformed, AnsiCodesPromptLineCrlfAndNbsp) {
  const std::string text =
      "$ nvidia-smi topo -m\r\n"
      "\t\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\x1b[0m\r\n"
      "GPU0\t X \tNV4\t0-15\t0\r\n"
      "GPU1\xc2\xa0NV4\t X \t0-15\t0\r\n";
  EXPECT_EQ(sniffTopologyFile(text), TopologyFileKind::TopoMatrix);
  auto t = parseTopoMatrix(text, "pasted.txt");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->link(0, 1).nvlinks, 4);
  EXPECT_EQ(t->gpu(1).numaNode, 0);
}

TEST(TopologyMalformed, OldDriverSocToken) {
  auto t = parseTopoMatrix("GPU0 GPU1 CPU Affinity\nGPU0 X SOC 0-7\nGPU1 SOC X 8-15\n", "old.txt");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->link(0, 1).path, PathKind::Sys);
  EXPECT_EQ(pairLinkClass(t.value(), 0, 1), LinkClass::PcieCrossSocket);  // NUMA unknown: pessimistic
}

TEST(TopologyMalformed, SingleGpu) {
  auto t = parseTopoMatrix("\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-7\t0\n", "one.txt");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->gpuCount(), 1);
  EXPECT_EQ(linkClassOfAll(t.value()), LinkClass::Unknown);
}

TEST(TopologyMalformed, P2pMatrixErrors) {
  const char* good = " \tGPU0\tGPU1\t\n GPU0\tX\tOK\t\n GPU1\tOK\tX\t\n";
  auto ok = parseP2pMatrix(good, "p2p.txt");
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->status[0][1], Support::Yes);

  auto shortRow = parseP2pMatrix(" \tGPU0\tGPU1\n GPU0\tX\tOK\n GPU1\tOK\n", "p2p.txt");
  ASSERT_FALSE(shortRow.ok());
  EXPECT_EQ(shortRow.error(), "p2p.txt:3: expected 2 P2P cells for GPU1, found 1");

  auto badToken = parseP2pMatrix("GPU0 GPU1\nGPU0 X PIX\nGPU1 PIX X\n", "p2p.txt");
  ASSERT_FALSE(badToken.ok());
  EXPECT_EQ(badToken.error(),
            "p2p.txt:2: unknown P2P status 'PIX' for GPU0 (expected X, OK, NS, CNS, GNS, TNS, DR or U)");

  auto unlisted = parseP2pMatrix("GPU0 GPU1\nGPU0 X ZZ\nGPU1 U X\n", "p2p.txt");
  ASSERT_TRUE(unlisted.ok()) << unlisted.error();
  EXPECT_EQ(unlisted->status[0][1], Support::No);
  EXPECT_EQ(unlisted->status[1][0], Support::Unknown);
  EXPECT_EQ(unlisted->notes.size(), 1u);
}

TEST(TopologyMalformed, P2pMatrixForMissingGpu) {
  auto topo = parseTopoMatrix("GPU0 GPU1\nGPU0 X PIX\nGPU1 PIX X\n", "t.txt");
  ASSERT_TRUE(topo.ok());
  auto m = parseP2pMatrix("GPU0 GPU5\nGPU0 X OK\nGPU5 OK X\n", "p.txt");
  ASSERT_TRUE(m.ok());
  auto applied = applyP2pMatrix(topo.value(), m.value(), P2pCapability::ReadWrite, "p.txt");
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.error(), "p.txt: the P2P matrix has GPU5, which the topology does not");
}

TEST(TopologyMalformed, ReadAndWriteMatricesCombine) {
  auto topo = parseTopoMatrix("GPU0 GPU1\nGPU0 X PIX\nGPU1 PIX X\n", "t.txt");
  ASSERT_TRUE(topo.ok());
  auto readOk = parseP2pMatrix("GPU0 GPU1\nGPU0 X OK\nGPU1 OK X\n", "r.txt");
  auto writeNo = parseP2pMatrix("GPU0 GPU1\nGPU0 X CNS\nGPU1 CNS X\n", "w.txt");
  ASSERT_TRUE(readOk.ok() && writeNo.ok());
  ASSERT_TRUE(applyP2pMatrix(topo.value(), readOk.value(), P2pCapability::Read, "r.txt").ok());
  EXPECT_EQ(pairP2p(topo.value(), 0, 1), Support::Unknown);  // write not known yet
  ASSERT_TRUE(applyP2pMatrix(topo.value(), writeNo.value(), P2pCapability::Write, "w.txt").ok());
  EXPECT_EQ(topo->link(0, 1).p2pRead, Support::Yes);
  EXPECT_EQ(topo->link(0, 1).p2pWrite, Support::No);
  EXPECT_EQ(pairP2p(topo.value(), 0, 1), Support::No);
}

TEST(TopologyMalformed, P2pCapabilityFromFileName) {
  bool guessed = true;
  EXPECT_EQ(p2pCapabilityFromFileName("/x/rtx-5090.p2p-rw.txt", &guessed), P2pCapability::ReadWrite);
  EXPECT_FALSE(guessed);
  EXPECT_EQ(p2pCapabilityFromFileName("box.p2p-r.txt", &guessed), P2pCapability::Read);
  EXPECT_EQ(p2pCapabilityFromFileName("box_p2p_w.txt", &guessed), P2pCapability::Write);
  EXPECT_EQ(p2pCapabilityFromFileName("box.p2p-n.txt", &guessed), P2pCapability::Other);
  EXPECT_EQ(p2pCapabilityFromFileName("peer.txt", &guessed), P2pCapability::ReadWrite);
  EXPECT_TRUE(guessed);
}

TEST(TopologyMalformed, OnlyP2pMatricesOrTwoTopologies) {
  const std::string dir = std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/";
  const std::vector<std::string> onlyP2p{dir + "rtx-5090-x2-wrx80-phb.p2p-rw.txt"};
  auto a = loadTopologyFiles(onlyP2p);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().find("only P2P matrices given"), std::string::npos) << a.error();
  const std::vector<std::string> two{dir + "h100-sxm-x8-nv18.topo.txt", dir + "rtx-5090-x2-wrx80-phb.topo.txt"};
  auto b = loadTopologyFiles(two);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().find("a second topology"), std::string::npos) << b.error();
}

TEST(TopologyMalformed, PciBusIdSpellings) {
  EXPECT_EQ(canonicalPciBusId("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(canonicalPciBusId("0000:3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(canonicalPciBusId("3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(canonicalPciBusId("0001:c1:1f.7"), "0001:c1:1f.7");
  EXPECT_FALSE(canonicalPciBusId("3b:00").has_value());
  EXPECT_FALSE(canonicalPciBusId("zz:00.0").has_value());
  EXPECT_FALSE(canonicalPciBusId("").has_value());
  EXPECT_FALSE(canonicalPciBusId("0000:3b:20.0").has_value());  // device > 31
}

}  // namespace
}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
// hwloc XML is read in a child process by the tools, and refused by the plugin: a crash or a hang of
// hwloc's importer must end as an error message, never as the end of the process that asked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <vector>

#include "core/bounded_file.h"
#include "tests/unit/required_parts.h"
#include "topology/classify.h"
#include "topology/hwloc_xml_child.h"
#include "topology/topology_file.h"
#include "topology/topology_record.h"

namespace symmem {
namespace {

using namespace std::chrono_literals;
using Kind = ChildOutcome::Kind;

std::string fixture(const std::string& name) { return std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/" + name; }

const std::string kHwlocFixture = "dgx2h-v100-sxm3-x16-nvswitch.hwloc.xml";

void expectSameTopology(const Topology& a, const Topology& b) {
  ASSERT_EQ(a.gpuCount(), b.gpuCount());
  EXPECT_EQ(a.source(), b.source());
  EXPECT_EQ(a.notes(), b.notes());
  for (int g = 0; g < a.gpuCount(); ++g) {
    EXPECT_EQ(a.gpu(g).index, b.gpu(g).index);
    EXPECT_EQ(a.gpu(g).pciBusId, b.gpu(g).pciBusId);
    EXPECT_EQ(a.gpu(g).name, b.gpu(g).name);
    EXPECT_EQ(a.gpu(g).capability, b.gpu(g).capability);
    EXPECT_EQ(a.gpu(g).numaNode, b.gpu(g).numaNode);
    EXPECT_EQ(a.gpu(g).cpuAffinity, b.gpu(g).cpuAffinity);
    for (int h = 0; h < a.gpuCount(); ++h) {
      if (g == h) continue;
      EXPECT_EQ(a.link(g, h).path, b.link(g, h).path) << g << "-" << h;
      EXPECT_EQ(a.link(g, h).nvlinks, b.link(g, h).nvlinks) << g << "-" << h;
      EXPECT_EQ(a.link(g, h).p2pRead, b.link(g, h).p2pRead) << g << "-" << h;
      EXPECT_EQ(a.link(g, h).p2pWrite, b.link(g, h).p2pWrite) << g << "-" << h;
    }
  }
}

TEST(TopologyHwlocChild, ACrashInTheChildIsAnOutcome) {
  const ChildOutcome o = runInChildProcess(
      []() -> Expected<std::string> {
        std::raise(SIGSEGV);
        return std::string("unreachable");
      },
      10s);
  EXPECT_EQ(o.kind, Kind::Crashed);
  EXPECT_EQ(o.what.rfind("signal 11 (", 0), 0u) << o.what;
}

TEST(TopologyHwlocChild, AHangingChildIsStoppedAtTheTimeout) {
  const ChildOutcome o = runInChildProcess(
      []() -> Expected<std::string> {
        for (;;) ::pause();
      },
      300ms);
  EXPECT_EQ(o.kind, Kind::TimedOut);
  EXPECT_EQ(o.what, "still running after 300 ms; stopped");
}

TEST(TopologyHwlocChild, ValuesErrorsAndExceptionsComeBack) {
  const std::string big(3 << 20, 'x');  // far more than a pipe holds at once
  const ChildOutcome value = runInChildProcess([&]() -> Expected<std::string> { return big; }, 10s);
  EXPECT_EQ(value.kind, Kind::Finished);
  EXPECT_TRUE(value.ok);
  EXPECT_EQ(value.value, big);
  const ChildOutcome error =
      runInChildProcess([]() -> Expected<std::string> { return Expected<std::string>::failure("no"); }, 10s);
  EXPECT_EQ(error.kind, Kind::Finished);
  EXPECT_FALSE(error.ok);
  EXPECT_EQ(error.value, "no");
  const ChildOutcome thrown =
      runInChildProcess([]() -> Expected<std::string> { throw std::runtime_error("boom"); }, 10s);
  EXPECT_EQ(thrown.kind, Kind::Finished);
  EXPECT_FALSE(thrown.ok);
  EXPECT_EQ(thrown.value, "exception: boom");
}

TEST(TopologyHwlocChild, ThePluginPolicyRefusesHwlocXmlByName) {
  const std::string path = fixture(kHwlocFixture);
  const std::vector<std::string> paths{path};
  const auto t = loadTopologyFiles(paths, HwlocXmlPolicy::Refuse);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().rfind(path + ": an hwloc XML export, which the plugin does not read inside an application", 0),
            0u)
      << t.error();
  // The plugin's advice for NCCL's XML no longer points at hwloc exports.
  const auto nccl = loadTopologyFile(fixture("aws-p4d-24xlarge-a100-x8.nccl-topo.xml"), HwlocXmlPolicy::Refuse);
  ASSERT_FALSE(nccl.ok());
  EXPECT_EQ(nccl.error().find("hwloc"), std::string::npos) << nccl.error();
  // Text captures are unaffected.
  EXPECT_TRUE(loadTopologyFile(fixture("h100-sxm-x8-nv18.topo.txt"), HwlocXmlPolicy::Refuse).ok());
}

TEST(TopologyHwlocChild, TheToolsStillReadTheHwlocFixture) {
  SYMMEM_SKIP_WITHOUT_HWLOC();
  const auto t = loadTopologyFile(fixture(kHwlocFixture));
  ASSERT_TRUE(t.ok()) << t.error();
  ASSERT_EQ(t->gpuCount(), 16);
  EXPECT_EQ(t->gpu(1).pciBusId, "0000:36:00.0");
  EXPECT_EQ(t->gpu(0).name, "Tesla V100-SXM3-32GB-H");
  EXPECT_EQ(t->gpu(15).numaNode, 1);
  EXPECT_EQ(t->link(3, 12).nvlinks, 6);
  EXPECT_EQ(linkClassOfAll(t.value()), LinkClass::NvLink);
  // The same model as hwloc gives in this process.
  const std::string text = readBoundedFile(fixture(kHwlocFixture), kTopologyFileMaxBytes).text;
  const auto direct = parseHwlocXml(text, fixture(kHwlocFixture));
  ASSERT_TRUE(direct.ok()) << direct.error();
  expectSameTopology(direct.value(), t.value());
}

TEST(TopologyHwlocChild, AnUnreadableExportIsAnErrorFromTheChild) {
  SYMMEM_SKIP_WITHOUT_HWLOC();
  const auto t = parseHwlocXmlInChildProcess("<topology version=\"2.0\"><object type=", "cut.xml");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().rfind("cut.xml: hwloc could not load this XML", 0), 0u) << t.error();
}

// ---- The record that carries a model out of the child ----

Topology sampleTopology() {
  std::vector<GpuInfo> gpus(3);
  gpus[0] = {0, "0000:3b:00.0", "GPU with: colons\nand a newline", {12, 0}, 1, "0-31,64-95"};
  gpus[1] = {1, "", "", {}, std::nullopt, ""};
  gpus[2] = {7, "0001:c1:1f.7", "x", {9, 0}, 0, "N/A"};
  Topology t(std::move(gpus));
  t.setSource("file a.txt + b.txt");
  t.addNote("p2p unknown: 12:34");
  t.addNote("");
  t.setPath(0, 1, PathKind::NvLink, 18);
  t.setPath(1, 2, PathKind::Sys);
  t.setP2p(0, 1, Support::Yes, Support::No);
  t.setP2p(2, 0, Support::No, Support::Yes);
  return t;
}

TEST(TopologyRecord, EveryFieldSurvivesTheTrip) {
  const Topology t = sampleTopology();
  const auto back = decodeTopology(encodeTopology(t));
  ASSERT_TRUE(back.ok()) << back.error();
  expectSameTopology(t, back.value());
  const auto empty = decodeTopology(encodeTopology(Topology()));
  ASSERT_TRUE(empty.ok()) << empty.error();
  EXPECT_EQ(empty->gpuCount(), 0);
}

TEST(TopologyRecord, DamagedRecordsAreRefused) {
  const std::string bytes = encodeTopology(sampleTopology());
  for (size_t cut = 0; cut < bytes.size(); ++cut)
    ASSERT_FALSE(decodeTopology(bytes.substr(0, cut)).ok()) << "cut at " << cut;
  EXPECT_EQ(decodeTopology(bytes + "1:x").error(), "topology record: trailing bytes");
  EXPECT_EQ(decodeTopology("garbage").error(), "topology record: not a topology record");
  std::string badEnum = encodeTopology(sampleTopology());
  const std::string lastPair = "1:51:01:01:0";  // the last pair, GPU2-GPU1: SYS, 0 links, p2p unknown
  ASSERT_EQ(badEnum.substr(badEnum.size() - lastPair.size()), lastPair);
  badEnum.replace(badEnum.size() - lastPair.size(), 3, "1:9");
  EXPECT_EQ(decodeTopology(badEnum).error(), "topology record: bad pair list");
}

}  // namespace
}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
// Discovery from recorded NVML and placement answers, the SYMMEM_TOPO_FILE override, and the
// node-wide facts the tuner uses.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "core/log.h"
#include "plugin/process/process.h"
#include "topology/classify.h"
#include "topology/discover.h"
#include "topology/node_facts.h"

namespace symmem {
namespace {

// What NVML said on one machine.
class RecordedNvml final : public NvmlSource {
 public:
  std::string reason;
  std::vector<std::optional<NvmlDevice>> devices;
  std::map<std::pair<unsigned, unsigned>, int> ancestor;           // filled for a < b
  std::map<std::tuple<unsigned, unsigned, int>, int> p2pOverride;  // (a, b, caps) -> status
  std::optional<int> p2pDefault = nvml::kP2pStatusOk;
  std::vector<std::optional<std::vector<std::string>>> links;  // per device; empty: no NVLink

  std::string unavailableReason() const override { return reason; }
  std::optional<unsigned> deviceCount() override { return static_cast<unsigned>(devices.size()); }
  std::optional<NvmlDevice> device(unsigned i) override { return devices.at(i); }
  std::optional<int> commonAncestor(unsigned a, unsigned b) override {
    auto it = ancestor.find({std::min(a, b), std::max(a, b)});
    if (it == ancestor.end()) return std::nullopt;
    return it->second;
  }
  std::optional<int> p2pStatus(unsigned a, unsigned b, int caps) override {
    auto it = p2pOverride.find({a, b, caps});
    return it != p2pOverride.end() ? std::optional<int>(it->second) : p2pDefault;
  }
  std::optional<std::vector<std::string>> nvlinkRemotes(unsigned i) override {
    return i < links.size() ? links[i] : std::vector<std::string>{};
  }
};

class RecordedPlacement final : public PlacementSource {
 public:
  std::string reason;
  std::map<std::string, GpuPlacement> byBusId;
  std::string unavailableReason() const override { return reason; }
  std::optional<GpuPlacement> placementOf(std::string_view busId) override {
    auto it = byBusId.find(std::string(busId));
    if (it == byBusId.end()) return std::nullopt;
    return it->second;
  }
};

bool hasNoteStartingWith(const Topology& t, std::string_view prefix) {
  for (const auto& n : t.notes())
    if (n.starts_with(prefix)) return true;
  return false;
}

// 2x H200 NVL joined by an NVLink bridge (18 links), on one NUMA node.
void recordH200Pair(RecordedNvml& nvml, RecordedPlacement& placement) {
  nvml.devices = {NvmlDevice{"00000000:1B:00.0", "NVIDIA H200 NVL", ComputeCapability{9, 0}},
                  NvmlDevice{"00000000:43:00.0", "NVIDIA H200 NVL", ComputeCapability{9, 0}}};
  nvml.ancestor[{0, 1}] = nvml::kTopologyNode;
  nvml.links = {std::vector<std::string>(18, "00000000:43:00.0"), std::vector<std::string>(18, "00000000:1B:00.0")};
  placement.byBusId["0000:1b:00.0"] = {0, "0-47,96-143"};
  placement.byBusId["0000:43:00.0"] = {0, "0-47,96-143"};
}

// 8x RTX PRO 6000 on two sockets, two GPUs per virtual switch (the ASUS ESC8000A-E13P layout).
// P2P write between GPU0 and GPU4 recorded as "topology not supported".
void recordPcieEight(RecordedNvml& nvml, RecordedPlacement& placement) {
  const char* bus[8] = {"06", "07", "75", "76", "84", "85", "F4", "F5"};
  for (int i = 0; i < 8; ++i) {
    nvml.devices.push_back(NvmlDevice{std::string("00000000:") + bus[i] + ":00.0",
                                      "NVIDIA RTX PRO 6000 Blackwell Server Edition", ComputeCapability{12, 0}});
    std::string canonical = std::string("0000:") + bus[i] + ":00.0";
    for (auto& c : canonical) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    placement.byBusId[canonical] = {i < 4 ? 0 : 1, i < 4 ? "0-63,128-191" : "64-127,192-238"};
  }
  for (unsigned a = 0; a < 8; ++a)
    for (unsigned b = a + 1; b < 8; ++b)
      nvml.ancestor[{a, b}] = (a / 2 == b / 2)   ? nvml::kTopologySingle
                              : (a / 4 == b / 4) ? nvml::kTopologyNode
                                                 : nvml::kTopologySystem;
  nvml.p2pOverride[{0, 4, nvml::kP2pCapsWrite}] = nvml::kP2pStatusTopologyNotSupported;
  nvml.links.assign(8, std::vector<std::string>{});
}

TEST(TopologyDiscovery, H200NvlinkPair) {
  RecordedNvml nvml;
  RecordedPlacement placement;
  recordH200Pair(nvml, placement);
  const Topology t = discoverTopology(nvml, placement);
  ASSERT_EQ(t.gpuCount(), 2);
  EXPECT_EQ(t.gpu(0).pciBusId, "0000:1b:00.0");
  EXPECT_EQ(t.gpu(1).name, "NVIDIA H200 NVL");
  EXPECT_EQ(t.gpu(1).capability, (ComputeCapability{9, 0}));
  EXPECT_EQ(t.link(0, 1).path, PathKind::NvLink);
  EXPECT_EQ(t.link(0, 1).nvlinks, 18);
  EXPECT_EQ(linkClassOfAll(t), LinkClass::NvLink);
  EXPECT_EQ(p2pOfAll(t), Support::Yes);
  EXPECT_EQ(t.gpu(1).numaNode, 0);
  EXPECT_EQ(t.gpu(0).cpuAffinity, "0-47,96-143");
  EXPECT_TRUE(t.notes().empty()) << t.notes().front();

  const NodeFacts f = nodeFactsOf(t);
  EXPECT_EQ(f.gpuCount, 2);
  EXPECT_EQ(f.minCapability, (ComputeCapability{9, 0}));
  EXPECT_TRUE(f.capabilitiesEqual);
  EXPECT_EQ(f.worstLink, LinkClass::NvLink);
  EXPECT_TRUE(f.allPairsP2p);
}

TEST(TopologyDiscovery, EightGpuPcieBox) {
  RecordedNvml nvml;
  RecordedPlacement placement;
  recordPcieEight(nvml, placement);
  const Topology t = discoverTopology(nvml, placement);
  ASSERT_EQ(t.gpuCount(), 8);
  EXPECT_EQ(t.gpu(6).pciBusId, "0000:f4:00.0");
  EXPECT_EQ(t.link(0, 1).path, PathKind::Pix);
  EXPECT_EQ(t.link(0, 2).path, PathKind::Node);
  EXPECT_EQ(t.link(3, 4).path, PathKind::Sys);
  EXPECT_EQ(pcieIslands(t), (std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(crossingOf(t, 1, 6), Crossing::Socket);
  EXPECT_EQ(t.gpu(5).numaNode, 1);
  EXPECT_EQ(t.link(0, 4).p2pWrite, Support::No);
  EXPECT_EQ(t.link(0, 4).p2pRead, Support::Yes);
  EXPECT_EQ(pairP2p(t, 4, 0), Support::No);  // either direction refusing is enough
  EXPECT_EQ(pairP2p(t, 0, 1), Support::Yes);
  const std::vector<int> firstSocket{0, 1, 2, 3};
  EXPECT_EQ(p2pOf(t, firstSocket), Support::Yes);
  EXPECT_EQ(linkClassOf(t, firstSocket), LinkClass::PcieSameRoot);

  const NodeFacts f = nodeFactsOf(t);
  EXPECT_EQ(f.minCapability, (ComputeCapability{12, 0}));
  EXPECT_EQ(f.worstLink, LinkClass::PcieCrossSocket);
  EXPECT_FALSE(f.allPairsP2p);
}

TEST(TopologyDiscovery, NvswitchFabricCountsSwitchLinks) {
  RecordedNvml nvml;
  RecordedPlacement placement;
  for (int i = 0; i < 4; ++i)
    nvml.devices.push_back(NvmlDevice{"00000000:0" + std::to_string(i + 1) + ":00.0", "H100", ComputeCapability{9, 0}});
  for (unsigned a = 0; a < 4; ++a)
    for (unsigned b = a + 1; b < 4; ++b) nvml.ancestor[{a, b}] = nvml::kTopologySystem;
  // 18 links each, to four different switches.
  std::vector<std::string> toSwitches;
  for (int l = 0; l < 18; ++l) toSwitches.push_back("00000000:8" + std::to_string(l % 4) + ":00.0");
  nvml.links.assign(4, toSwitches);
  placement.reason = "this build has no hwloc";
  const Topology t = discoverTopology(nvml, placement);
  EXPECT_EQ(t.link(0, 3).path, PathKind::NvLink);
  EXPECT_EQ(t.link(0, 3).nvlinks, 18);
  EXPECT_EQ(linkClassOfAll(t), LinkClass::NvLink);
  EXPECT_TRUE(hasNoteStartingWith(t, "numa unknown: this build has no hwloc"));
  EXPECT_FALSE(t.gpu(0).numaNode.has_value());
}

TEST(TopologyDiscovery, GapsBecomeUnknownWithNotes) {
  RecordedNvml nvml;
  RecordedPlacement placement;
  recordPcieEight(nvml, placement);
  nvml.devices[3] = std::nullopt;  // NVML refused PCI info
  nvml.ancestor.erase({0, 2});     // and one common ancestor
  nvml.p2pDefault = std::nullopt;  // and every P2P status
  nvml.links[5] = std::nullopt;    // and one device's links
  const Topology t = discoverTopology(nvml, placement);
  ASSERT_EQ(t.gpuCount(), 8);
  EXPECT_TRUE(t.gpu(3).pciBusId.empty());
  EXPECT_FALSE(t.gpu(3).numaNode.has_value());
  EXPECT_EQ(t.link(0, 2).path, PathKind::Unknown);
  EXPECT_EQ(linkClassOfAll(t), LinkClass::Unknown);
  EXPECT_EQ(pairP2p(t, 0, 1), Support::Unknown);
  EXPECT_EQ(p2pOfAll(t), Support::No);  // the recorded refusal on GPU0->GPU4 still counts
  EXPECT_TRUE(hasNoteStartingWith(t, "GPU3: NVML gave no PCI information"));
  EXPECT_TRUE(hasNoteStartingWith(t, "path unknown for GPU0-GPU2"));
  EXPECT_TRUE(hasNoteStartingWith(t, "p2p unknown"));
  EXPECT_TRUE(hasNoteStartingWith(t, "nvlink unknown"));
  EXPECT_TRUE(hasNoteStartingWith(t, "numa unknown for GPU3"));
  const NodeFacts f = nodeFactsOf(t);
  EXPECT_EQ(f.worstLink, LinkClass::Unknown);
  EXPECT_FALSE(f.allPairsP2p);
}

TEST(TopologyDiscovery, MixedCapabilitiesInNodeFacts) {
  RecordedNvml nvml;
  RecordedPlacement placement;
  recordH200Pair(nvml, placement);
  nvml.devices[1]->capability = ComputeCapability{8, 9};
  const NodeFacts f = nodeFactsOf(discoverTopology(nvml, placement));
  EXPECT_EQ(f.minCapability, (ComputeCapability{8, 9}));
  EXPECT_FALSE(f.capabilitiesEqual);
  nvml.devices[1]->capability.reset();
  const NodeFacts g = nodeFactsOf(discoverTopology(nvml, placement));
  EXPECT_FALSE(g.minCapability.known());
  EXPECT_FALSE(g.capabilitiesEqual);
}

TEST(TopologyDiscovery, NoNvmlGivesEmptyModel) {
  RecordedNvml nvml;
  nvml.reason = "cannot load libnvidia-ml.so.1";
  RecordedPlacement placement;
  const Topology t = discoverTopology(nvml, placement);
  EXPECT_EQ(t.gpuCount(), 0);
  EXPECT_TRUE(hasNoteStartingWith(t, "no GPUs discovered: cannot load libnvidia-ml.so.1"));
  const NodeFacts f = nodeFactsOf(t);
  EXPECT_EQ(f.gpuCount, 0);
  EXPECT_EQ(f.worstLink, LinkClass::Unknown);
  EXPECT_FALSE(f.allPairsP2p);
  EXPECT_FALSE(f.minCapability.known());
}

TEST(TopologyDiscovery, RealLibraryOnThisMachineNeverThrows) {
  // With a driver this finds GPUs; without one (CI) it reports why. Either way it returns.
  auto nvml = openNvmlLibrary();
  auto placement = openHwlocPlacement();
  const Topology t = discoverTopology(*nvml, *placement);
  if (!nvml->unavailableReason().empty()) {
    EXPECT_EQ(t.gpuCount(), 0);
    EXPECT_TRUE(hasNoteStartingWith(t, "no GPUs discovered"));
  }
  const Topology& process = Process::get().topology();
  EXPECT_EQ(nodeFactsOf(process).gpuCount, process.gpuCount());
  EXPECT_EQ(&Process::get().topology(), &process);  // once per process
}

TEST(TopologyDiscovery, NvmlVocabulary) {
  EXPECT_EQ(pathFromNvmlLevel(nvml::kTopologyInternal), PathKind::Pix);
  EXPECT_EQ(pathFromNvmlLevel(10), PathKind::Pix);
  EXPECT_EQ(pathFromNvmlLevel(20), PathKind::Pxb);
  EXPECT_EQ(pathFromNvmlLevel(30), PathKind::Phb);
  EXPECT_EQ(pathFromNvmlLevel(40), PathKind::Node);
  EXPECT_EQ(pathFromNvmlLevel(50), PathKind::Sys);
  EXPECT_EQ(pathFromNvmlLevel(60), PathKind::Unknown);
  EXPECT_EQ(supportFromNvmlP2pStatus(0), Support::Yes);
  for (int refusal = 1; refusal <= 5; ++refusal) EXPECT_EQ(supportFromNvmlP2pStatus(refusal), Support::No);
  EXPECT_EQ(supportFromNvmlP2pStatus(6), Support::Unknown);
  EXPECT_EQ(supportFromNvmlP2pStatus(42), Support::No);
}

// ---- SYMMEM_TOPO_FILE ----

struct CapturedLog {
  std::vector<std::pair<LogLevel, std::string>> lines;
  CapturedLog() {
    setLogSinkForTesting([this](LogLevel l, const std::string& m) { lines.emplace_back(l, m); });
  }
  ~CapturedLog() { setLogSinkForTesting({}); }
  int warnings() const {
    int n = 0;
    for (const auto& [l, m] : lines) n += l == LogLevel::Warn;
    return n;
  }
};

TEST(TopologyDiscovery, TopoFileOverridesDiscovery) {
  bool discovered = false;
  auto discover = [&] {
    discovered = true;
    return Topology();
  };
  const std::string dir = std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/";
  const Topology t =
      topologyForProcess(dir + "rtx-5090-x2-wrx80-phb.topo.txt," + dir + "rtx-5090-x2-wrx80-phb.p2p-rw.txt", discover);
  EXPECT_FALSE(discovered);
  ASSERT_EQ(t.gpuCount(), 2);
  EXPECT_EQ(pairP2p(t, 0, 1), Support::No);

  const Topology d = topologyForProcess("", discover);
  EXPECT_TRUE(discovered);
  EXPECT_EQ(d.gpuCount(), 0);
}

TEST(TopologyDiscovery, BadTopoFileWarnsOnceAndIsUnknown) {
  CapturedLog log;
  const std::string path = std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/aws-p4d-24xlarge-a100-x8.nccl-topo.xml";
  bool discovered = false;
  const Topology t = topologyForProcess(path, [&] {
    discovered = true;
    return Topology();
  });
  EXPECT_FALSE(discovered);
  EXPECT_EQ(t.gpuCount(), 0);
  EXPECT_EQ(linkClassOfAll(t), LinkClass::Unknown);
  ASSERT_EQ(log.warnings(), 1);
  const auto& warn = log.lines.front().second;
  EXPECT_NE(warn.find("SYMMEM_TOPO_FILE"), std::string::npos) << warn;
  EXPECT_NE(warn.find("aws-p4d-24xlarge-a100-x8.nccl-topo.xml: NCCL topology XML"), std::string::npos) << warn;
  EXPECT_TRUE(hasNoteStartingWith(t, "topology unknown: "));
}

TEST(TopologyDiscovery, HwlocXmlTopoFileIsRefusedInsideTheApplication) {
  // hwloc's XML importer can crash on a malformed file; SYMMEM_TOPO_FILE is read inside the job, so an
  // hwloc export there is refused by name (the tools still read it, in a child process).
  CapturedLog log;
  const std::string path = std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/dgx2h-v100-sxm3-x16-nvswitch.hwloc.xml";
  bool discovered = false;
  const Topology t = topologyForProcess(path, [&] {
    discovered = true;
    return Topology();
  });
  EXPECT_FALSE(discovered);
  EXPECT_EQ(t.gpuCount(), 0);
  ASSERT_EQ(log.warnings(), 1);
  const auto& warn = log.lines.front().second;
  EXPECT_NE(warn.find("SYMMEM_TOPO_FILE: " + path +
                      ": an hwloc XML export, which the plugin does not read inside an application"),
            std::string::npos)
      << warn;
  EXPECT_NE(warn.find("`symmem-info --topo " + path + "`"), std::string::npos) << warn;
  EXPECT_NE(warn.find("`nvidia-smi topo -m`"), std::string::npos) << warn;
  EXPECT_TRUE(hasNoteStartingWith(t, "topology unknown: " + path + ": an hwloc XML export"));
}

TEST(TopologyDiscovery, TruncatedTopoFileWarnsWithLine) {
  CapturedLog log;
  const std::string path = ::testing::TempDir() + "cut.topo.txt";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("\tGPU0\tGPU1\tGPU2\nGPU0\t X \tPIX\tPIX\nGPU1\tPIX\t X\n", f);
    std::fclose(f);
  }
  const Topology t = topologyForProcess(path, [] { return Topology(); });
  EXPECT_EQ(t.gpuCount(), 0);
  ASSERT_EQ(log.warnings(), 1);
  EXPECT_NE(log.lines.front().second.find("cut.topo.txt:3: expected 3 link cells for GPU1, found 2"), std::string::npos)
      << log.lines.front().second;
}

}  // namespace
}  // namespace symmem

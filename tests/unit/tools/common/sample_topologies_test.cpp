// SPDX-License-Identifier: Apache-2.0
// The sample topologies the tools ship: each listed one is in tests/data/topologies, reads, and has
// the GPUs its entry says; every usable capture there is listed; the build tree holds the copies the
// tools find beside them, and symmem-info --help names them.
#include "tools/common/sample_topologies.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/capability.h"
#include "tests/unit/tool_run.h"
#include "topology/topology_file.h"

namespace symmem {
namespace {

const std::string kData = std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/";

TEST(SampleTopologies, EveryEntryReadsWithItsGpusAndCapability) {
  ASSERT_FALSE(sampleTopologies().empty());
  for (const SampleTopology& s : sampleTopologies()) {
    std::vector<std::string> files = {kData + s.file};
    if (*s.p2pFile != '\0') files.push_back(kData + s.p2pFile);
    const Expected<Topology> loaded = loadTopologyFiles(files);
    ASSERT_TRUE(loaded.ok()) << s.file << ": " << loaded.error();
    EXPECT_EQ(loaded->gpuCount(), s.gpus) << s.file;
    EXPECT_TRUE(parseCapability(s.capability).has_value()) << s.file << ": " << s.capability;
    EXPECT_GT(std::string(s.gpu).size(), 0u) << s.file;
    EXPECT_GT(std::string(s.fabric).size(), 0u) << s.file;
  }
}

TEST(SampleTopologies, EveryUsableCaptureIsListed) {
  std::set<std::string> listed;
  for (const SampleTopology& s : sampleTopologies()) {
    listed.insert(s.file);
    if (*s.p2pFile != '\0') listed.insert(s.p2pFile);
  }
  DIR* dir = opendir(kData.c_str());
  ASSERT_NE(dir, nullptr) << kData;
  int files = 0;
  while (const dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    // NCCL's own XML cannot describe a machine alone (topology/topology_file.h); the manifest is prose.
    if (name[0] == '.' || name == "MANIFEST.md" || name.find(".nccl-topo.") != std::string::npos) continue;
    ++files;
    EXPECT_TRUE(listed.count(name)) << name << " is in tests/data/topologies but not in sample_topologies.cpp";
  }
  closedir(dir);
  EXPECT_EQ(static_cast<size_t>(files), listed.size());
}

TEST(SampleTopologies, TheBuildTreeHoldsThemWhereTheToolsLook) {
  const std::string info = SYMMEM_INFO_PATH;
  const std::string dir = info.substr(0, info.rfind('/')) + "/../share/nccl-symmem/topologies";
  for (const SampleTopology& s : sampleTopologies()) {
    std::vector<std::string> files = {dir + "/" + s.file};
    if (*s.p2pFile != '\0') files.push_back(dir + "/" + s.p2pFile);
    const Expected<Topology> loaded = loadTopologyFiles(files);
    EXPECT_TRUE(loaded.ok()) << dir << "/" << s.file << ": " << loaded.error();
  }
  const testing::ToolRun help = testing::runTool("'" + info + "' --help");
  EXPECT_EQ(help.exitCode, 0) << help.out;
  EXPECT_TRUE(help.has("Sample topologies (real captures; give the capability with --cc):")) << help.out;
  EXPECT_TRUE(help.has("/share/nccl-symmem/topologies\n")) << help.out;
  EXPECT_TRUE(help.has("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt")) << help.out;
  EXPECT_TRUE(help.has("with its P2P matrix: --topo rtx-5090-x2-wrx80-phb.topo.txt,rtx-5090-x2-wrx80-phb.p2p-rw.txt"))
      << help.out;
  EXPECT_TRUE(help.has("  e.g. symmem-info --topo ")) << help.out;
  EXPECT_FALSE(help.has("not found beside this program")) << help.out;
}

TEST(SampleTopologies, TheHelpSaysWhereToLookWhenTheyAreAbsent) {
  const std::string absent = sampleTopologiesHelp("symmem-tune", "");
  EXPECT_NE(absent.find("  share/nccl-symmem/topologies of an install, nccl_symmem/topologies in the wheel (not "
                        "found beside this program)\n"),
            std::string::npos)
      << absent;
  EXPECT_NE(
      absent.find("  e.g. symmem-tune --plan --topo DIR/rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt"
                  " --cc 12.0\n"),
      std::string::npos)
      << absent;
  const std::string present = sampleTopologiesHelp("symmem-info", "/opt/x/topologies");
  EXPECT_NE(present.find("\n  /opt/x/topologies\n"), std::string::npos) << present;
  EXPECT_NE(present.find("  e.g. symmem-info --topo /opt/x/topologies/rtx-pro-6000-"), std::string::npos) << present;
  EXPECT_EQ(present.find("not found"), std::string::npos) << present;
}

}  // namespace
}  // namespace symmem

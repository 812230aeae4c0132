// SPDX-License-Identifier: Apache-2.0
// The built symmem-info, run as a user runs it, prints the halves of the machine it describes.
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/temp_file.h"
#include "tests/unit/tool_run.h"

namespace symmem {
namespace {

using testing::runTool;
using testing::ToolRun;

constexpr const char* kHalves = "Halves (the two sides of the slowest level that splits the GPUs): ";

ToolRun info(const std::string& args) {
  return runTool("env -u SYMMEM_TABLE -u SYMMEM_TOPO_FILE -u SYMMEM_CC '" + std::string(SYMMEM_INFO_PATH) + "' " +
                 args);
}

ToolRun infoTopo(const std::string& fixture) {
  return info("--topo '" + std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/" + fixture + "'");
}

const std::string kEightAcross =
    "Pairs across the middle: 0-4 1-5 2-6 3-7\n"
    "Flows crossing the middle per all-reduce (halves: one per GPU, to its partner; the others: each GPU to the 4 "
    "GPUs of the other half, pull as reads, two-shot in its scatter and again in its gather):\n"
    "  one-shot push 32, pull 32, staged 32, halves 8\n"
    "  two-shot push 64, pull 64, staged 64, halves 8\n";

TEST(SymmemInfoHalves, EightGpuBoxes) {
  struct Case {
    const char* file;
    const char* split;
  };
  const Case cases[] = {
      {"rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt", "the socket"},
      {"rtx-pro-6000-server-x8-wrx90-microchip-3switch.topo.txt", "the CPU root complex"},
      {"rtx-4090-x8-dual-socket-all-sys-2nic.topo.txt", "the socket"},
  };
  for (const Case& c : cases) {
    const ToolRun r = infoTopo(c.file);
    EXPECT_EQ(r.exitCode, 0) << c.file << "\n" << r.out;
    EXPECT_TRUE(r.has(std::string(kHalves) + "{0,1,2,3} {4,5,6,7}, split at " + c.split + "\n" + kEightAcross))
        << c.file << "\n"
        << r.out;
  }
}

TEST(SymmemInfoHalves, BundledDefaultMachine) {
  const ToolRun r = info("--default-machine");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(r.has(std::string(kHalves) + "{0,1,2,3} {4,5,6,7}, split at the socket\n" + kEightAcross)) << r.out;
}

TEST(SymmemInfoHalves, FourGpusAndNone) {
  const ToolRun ada = infoTopo("rtx-6000-ada-x4-asus-esc8000a-e12-dual-socket.topo.txt");
  EXPECT_TRUE(ada.has(std::string(kHalves) + "{0,1} {2,3}, split at the socket\nPairs across the middle: 0-2 1-3\n"))
      << ada.out;
  EXPECT_TRUE(
      ada.has("  one-shot push 8, pull 8, staged 8, halves 4\n  two-shot push 16, pull 16, staged 16, halves 4\n"))
      << ada.out;
  const ToolRun l40s = infoTopo("l40s-x4-aws-g6e-12xlarge-vm.topo.txt");
  EXPECT_TRUE(l40s.has(std::string(kHalves) +
                       "none (4 groups at the root-complex level: GPUs {0} {1} {2} {3}; halves need exactly two)\n"))
      << l40s.out;
  EXPECT_FALSE(l40s.has("Pairs across the middle")) << l40s.out;
  const ToolRun h100 = infoTopo("h100-sxm-x8-nv18.topo.txt");
  EXPECT_TRUE(h100.has(std::string(kHalves) +
                       "none (GPU 0 and GPU 1 are joined by NVLink: halves are for PCIe-only communicators)\n"))
      << h100.out;
}

// A table naming the halves variant: its bands print as they are, and the decisions run halves where the
// ranks form two halves (8 ranks of the ASUS box), push where they do not (the L40S VM).
TEST(SymmemInfoHalves, BandsNamingHalves) {
  testing::TempFile table(
      "symmem-table 1\n"
      "sym cc=12.0 link=pcie-sys ranks=8 upto=16K algo=oneshot variant=halves\n"
      "sym cc=12.0 link=pcie-sys ranks=8 upto=256K algo=twoshot variant=halves\n"
      "sym cc=12.0 link=pcie-root ranks=4 upto=16K algo=oneshot variant=halves\n");
  ASSERT_TRUE(table.ok());
  const std::string topologies = std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/";
  const ToolRun asus = info("--topo '" + topologies + "rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt' " +
                            "--cc 12.0 --table " + table.path());
  ASSERT_EQ(asus.exitCode, 0) << asus.out;
  EXPECT_TRUE(asus.has("  symmetric bands: oneshot halves <=16KiB, twoshot halves <=256KiB\n")) << asus.out;
  EXPECT_TRUE(asus.has("8 ranks, cc 12.0 (--cc), link pcie-sys, P2P yes, two halves:\n")) << asus.out;
  EXPECT_TRUE(asus.has("       16KiB  symmetric one-shot halves   within a one-shot band\n")) << asus.out;
  EXPECT_TRUE(asus.has("      256KiB  symmetric two-shot halves   within a two-shot band\n")) << asus.out;

  const ToolRun l40s =
      info("--topo '" + topologies + "l40s-x4-aws-g6e-12xlarge-vm.topo.txt' --cc 12.0 --table " + table.path());
  ASSERT_EQ(l40s.exitCode, 0) << l40s.out;
  EXPECT_TRUE(l40s.has("  symmetric bands: oneshot halves <=16KiB\n")) << l40s.out;
  EXPECT_TRUE(l40s.has("4 ranks, cc 12.0 (--cc), link pcie-root, P2P yes:\n")) << l40s.out;
  EXPECT_TRUE(l40s.has("       16KiB  symmetric one-shot push     within a one-shot band\n"))
      << "no halves on these GPUs: the push variant of the same kernel\n"
      << l40s.out;

  // SYMMEM_HALVES as the plugin reads it: split declares them, off takes them away.
  const ToolRun split = runTool("env -u SYMMEM_TABLE -u SYMMEM_TOPO_FILE -u SYMMEM_CC SYMMEM_HALVES=split '" +
                                std::string(SYMMEM_INFO_PATH) + "' --topo '" + topologies +
                                "l40s-x4-aws-g6e-12xlarge-vm.topo.txt' --cc 12.0 --table " + table.path());
  EXPECT_TRUE(split.has("       16KiB  symmetric one-shot halves   within a one-shot band\n")) << split.out;
  const ToolRun off =
      runTool("env -u SYMMEM_TABLE -u SYMMEM_TOPO_FILE -u SYMMEM_CC SYMMEM_HALVES=off '" +
              std::string(SYMMEM_INFO_PATH) + "' --topo '" + topologies +
              "rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt' --cc 12.0 " + "--table " + table.path());
  EXPECT_TRUE(off.has("       16KiB  symmetric one-shot push     within a one-shot band\n")) << off.out;
}

}  // namespace
}  // namespace symmem

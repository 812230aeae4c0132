// SPDX-License-Identifier: Apache-2.0
// A tuned table found without SYMMEM_TABLE: the machine fingerprint, the pure choice, the installed
// directories, and the table in force on recorded machines (tests/data/topologies).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/installed_table.h"
#include "core/machine_fingerprint.h"
#include "core/settings.h"
#include "core/table_file.h"
#include "plugin/interpose/setup_vote.h"
#include "plugin/process/process_context.h"
#include "plugin/process/table_in_force.h"
#include "topology/fingerprint.h"
#include "topology/topology_file.h"

namespace symmem {
namespace {

namespace fs = std::filesystem;

MachineFingerprint twoH200() {
  MachineFingerprint m;
  m.gpuModels = {"NVIDIA H200", "NVIDIA H200"};
  m.links = {"NV18"};
  m.driverMajor = 580;
  return m;
}

Topology recorded(const std::string& file) {
  auto t = loadTopologyFile(std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/" + file, HwlocXmlPolicy::Refuse);
  EXPECT_TRUE(t.ok()) << file;
  return t.ok() ? t.value() : Topology{};
}

Settings settingsWith(const std::map<std::string, std::string>& env) {
  return Settings::load(
      [&](const char* name) {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      nullptr);
}

// A configuration home under /tmp, removed at the end of the test.
class ConfigHome {
 public:
  ConfigHome() {
    std::string pattern = "/tmp/symmem-config-XXXXXX";
    if (mkdtemp(pattern.data())) path_ = pattern;
  }
  ~ConfigHome() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string tables() const { return userTableDirectory(path_); }

 private:
  std::string path_;
};

// The table symmem-tune --install writes for `machine`: one changed entry (8 ranks of H100/H200 on
// NVLink, one-shot to 4 KiB) and the machine's line.
const Thresholds& tunedEntry() {
  static const Thresholds entry = [] {
    Thresholds t = *DecisionTable::builtIn().thresholdsFor(ComputeCapability{9, 0}, LinkClass::NvLink, 8).entry;
    setPushLimits(t, 4096, 8192);
    return t;
  }();
  return entry;
}

std::string install(const std::string& dir, const MachineFingerprint& machine) {
  fs::create_directories(dir);
  const std::string path = installedTablePath(dir, machine);
  std::ofstream(path) << formatTable({tunedEntry()}, {"written by symmem-tune", machineLine(machine)});
  return path;
}

uint64_t oneShotMax(const DecisionTable& table) {
  return table.thresholdsFor(ComputeCapability{9, 0}, LinkClass::NvLink, 8).entry->oneShotMaxBytes;
}

TEST(MachineFingerprint, TheLineReadsBack) {
  const MachineFingerprint m = twoH200();
  EXPECT_EQ(machineLine(m), "machine gpus 2; models NVIDIA H200 | NVIDIA H200; links NV18; driver 580");
  EXPECT_EQ(parseMachineLine(machineLine(m)), m);
  MachineFingerprint unknown;
  unknown.gpuModels = {"", "", ""};
  unknown.links = {"PIX", "?", "SYS"};
  EXPECT_EQ(parseMachineLine(machineLine(unknown)), unknown);
  EXPECT_EQ(parseMachineLine(machineLine(MachineFingerprint{})), MachineFingerprint{});
  // Not a machine line, or one that contradicts itself.
  EXPECT_FALSE(parseMachineLine("written by symmem-tune"));
  EXPECT_FALSE(parseMachineLine("machine gpus 3; models A | B; links NV18; driver 580"));
  EXPECT_FALSE(parseMachineLine("machine gpus 2; models A | B; links NV18 PIX; driver 580"));
  EXPECT_FALSE(parseMachineLine("machine gpus 2; models A | B; links NV18; driver five"));
}

TEST(MachineFingerprint, KeysDifferWithTheMachine) {
  MachineFingerprint other = twoH200();
  other.driverMajor = 570;
  EXPECT_EQ(machineKey(twoH200()), machineKey(twoH200()));
  EXPECT_NE(machineKey(twoH200()), machineKey(other));
  EXPECT_EQ(machineKey(twoH200()).size(), 16u);
}

TEST(MachineFingerprint, TheDifferenceIsNamed) {
  const MachineFingerprint here = twoH200();
  EXPECT_EQ(machineDifference(here, here), "");
  MachineFingerprint m = here;
  m.gpuModels.push_back("NVIDIA H200");
  m.links = {"NV18", "NV18", "NV18"};
  EXPECT_EQ(machineDifference(m, here), "3 GPUs there, 2 here");
  m = here;
  m.gpuModels[1] = "NVIDIA H100 80GB HBM3";
  EXPECT_EQ(machineDifference(m, here), "GPU 1 is NVIDIA H100 80GB HBM3 there, NVIDIA H200 here");
  m = here;
  m.links = {"PIX"};
  EXPECT_EQ(machineDifference(m, here), "the link between GPU 0 and GPU 1 is PIX there, NV18 here");
  m = here;
  m.driverMajor = 570;
  EXPECT_EQ(machineDifference(m, here), "driver 570 there, 580 here");
}

TEST(MachineFingerprint, DriverMajorFromTheKernelModule) {
  EXPECT_EQ(driverMajorFromProcText("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.03  Thu Oct  2 "
                                    "2025\nGCC version:  gcc version 12.2.0\n"),
            580);
  EXPECT_EQ(driverMajorFromProcText("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release "
                                    "Build\n"),
            570);
  EXPECT_EQ(driverMajorFromProcText(""), 0);
  EXPECT_EQ(driverMajorFromProcText("NVRM version: something else\n"), 0);
}

TEST(TableChoice, SymmemTableWins) {
  const std::vector<InstalledTableFile> installed = {{"/u/table-a.txt", twoH200(), ""}};
  const TableChoice c = chooseTable("/mine.txt", twoH200(), installed, {"/u"});
  EXPECT_EQ(c.source, TableSource::Setting);
  EXPECT_EQ(c.path, "/mine.txt");
  EXPECT_TRUE(c.ignored.empty());
}

TEST(TableChoice, TheFirstTableOfThisMachineIsUsedAndOthersAreNamed) {
  MachineFingerprint other = twoH200();
  other.gpuModels = {"NVIDIA H100", "NVIDIA H100"};
  const std::vector<InstalledTableFile> installed = {{"/u/table-b.txt", other, ""},
                                                     {"/u/table-n.txt", std::nullopt, ""},
                                                     {"/u/table-x.txt", std::nullopt, "/u/table-x.txt:1: bad"},
                                                     {"/u/table-a.txt", twoH200(), ""},
                                                     {"/etc/table-a.txt", twoH200(), ""}};
  const TableChoice c = chooseTable("", twoH200(), installed, {"/u", "/etc"});
  EXPECT_EQ(c.source, TableSource::Installed);
  EXPECT_EQ(c.path, "/u/table-a.txt");
  ASSERT_EQ(c.ignored.size(), 3u);
  EXPECT_EQ(c.ignored[0],
            "installed table /u/table-b.txt ignored: tuned for another machine (GPU 0 is NVIDIA H100 there, NVIDIA "
            "H200 here)");
  EXPECT_NE(c.ignored[1].find("names no machine"), std::string::npos) << c.ignored[1];
  EXPECT_NE(c.ignored[2].find("table-x.txt:1: bad"), std::string::npos) << c.ignored[2];
}

TEST(TableChoice, NothingInstalledMeansTheBuiltInTable) {
  const TableChoice c = chooseTable("", twoH200(), {}, {"/home/u/.config/nccl-symmem", "/etc/nccl-symmem"});
  EXPECT_EQ(c.source, TableSource::BuiltIn);
  EXPECT_EQ(c.why,
            "no SYMMEM_TABLE, and no table installed for this machine in /home/u/.config/nccl-symmem, "
            "/etc/nccl-symmem");
}

TEST(InstalledTable, TheUserDirectoryFollowsXdgThenHome) {
  EXPECT_EQ(settingsWith({{"XDG_CONFIG_HOME", "/x/cfg"}, {"HOME", "/home/u"}}).userConfigHome(), "/x/cfg");
  EXPECT_EQ(settingsWith({{"HOME", "/home/u"}}).userConfigHome(), "/home/u/.config");
  // XDG: a relative value is ignored.
  EXPECT_EQ(settingsWith({{"XDG_CONFIG_HOME", "cfg"}, {"HOME", "/home/u"}}).userConfigHome(), "/home/u/.config");
  EXPECT_EQ(settingsWith({}).userConfigHome(), "");
  EXPECT_EQ(installedTableDirectories("/home/u/.config"),
            (std::vector<std::string>{"/home/u/.config/nccl-symmem", "/etc/nccl-symmem"}));
  EXPECT_EQ(installedTableDirectories(""), (std::vector<std::string>{"/etc/nccl-symmem"}));
}

// The recorded 8x H100 SXM node, with a table installed for it: used with no SYMMEM_TABLE.
TEST(InstalledTable, ARecordedMachineRunsWithTheTableInstalledForIt) {
  const Topology h100 = recorded("h100-sxm-x8-nv18.topo.txt");
  ConfigHome home;
  ASSERT_FALSE(home.path().empty());
  const std::string path = install(home.tables(), fingerprintOf(h100, 580));
  const TableInForce t = tableInForce(settingsWith({{"XDG_CONFIG_HOME", home.path()}}), h100, 580);
  EXPECT_EQ(t.choice.source, TableSource::Installed) << t.choice.why;
  EXPECT_EQ(t.choice.path, path);
  EXPECT_EQ(oneShotMax(t.table), 4096u);
  EXPECT_NE(oneShotMax(DecisionTable::builtIn()), 4096u);
  // Found by the table-<key> name alone: the same machine after another driver branch does not use it.
  const TableInForce newer = tableInForce(settingsWith({{"XDG_CONFIG_HOME", home.path()}}), h100, 590);
  EXPECT_EQ(newer.choice.source, TableSource::BuiltIn);
  ASSERT_EQ(newer.choice.ignored.size(), 1u);
  EXPECT_NE(newer.choice.ignored[0].find("(driver 580 there, 590 here)"), std::string::npos) << newer.choice.ignored[0];
}

TEST(InstalledTable, ATableOfAnotherRecordedMachineIsIgnoredNamingTheDifference) {
  const Topology h100 = recorded("h100-sxm-x8-nv18.topo.txt");
  const Topology a100 = recorded("a100-sxm4-x8-aws-p4d-24xlarge-nv12.topo.txt");
  ConfigHome home;
  install(home.tables(), fingerprintOf(a100, 580));
  const TableInForce t = tableInForce(settingsWith({{"XDG_CONFIG_HOME", home.path()}}), h100, 580);
  EXPECT_EQ(t.choice.source, TableSource::BuiltIn);
  ASSERT_EQ(t.choice.ignored.size(), 1u);
  EXPECT_NE(t.choice.ignored[0].find("tuned for another machine (the link between GPU 0 and GPU 1 is NV12 there, "
                                     "NV18 here)"),
            std::string::npos)
      << t.choice.ignored[0];
  EXPECT_EQ(oneShotMax(t.table), oneShotMax(DecisionTable::builtIn()));
}

TEST(InstalledTable, SymmemTableStillWinsAndDisabledReadsNothing) {
  const Topology h100 = recorded("h100-sxm-x8-nv18.topo.txt");
  ConfigHome home;
  install(home.tables(), fingerprintOf(h100, 580));
  Thresholds mine = tunedEntry();
  setPushLimits(mine, 1024, 2048);
  const std::string own = home.path() + "/own.txt";
  std::ofstream(own) << formatTable({mine}, {});
  const TableInForce t =
      tableInForce(settingsWith({{"XDG_CONFIG_HOME", home.path()}, {"SYMMEM_TABLE", own}}), h100, 580);
  EXPECT_EQ(t.choice.source, TableSource::Setting);
  EXPECT_EQ(oneShotMax(t.table), 1024u);
  const TableInForce off =
      tableInForce(settingsWith({{"XDG_CONFIG_HOME", home.path()}, {"SYMMEM_ENABLE", "0"}}), h100, 580);
  EXPECT_EQ(off.choice.source, TableSource::BuiltIn);
}

// Ranks decide alike: a rank that found an installed table and one that did not vote differently, so
// every rank of the communicator stays on NCCL.
TEST(InstalledTable, ARankWithoutTheInstalledTableVotesDifferently) {
  const Topology h100 = recorded("h100-sxm-x8-nv18.topo.txt");
  ConfigHome home, empty;
  install(home.tables(), fingerprintOf(h100, 580));
  const TableInForce withTable = tableInForce(settingsWith({{"XDG_CONFIG_HOME", home.path()}}), h100, 580);
  const TableInForce without = tableInForce(settingsWith({{"XDG_CONFIG_HOME", empty.path()}}), h100, 580);
  ProcessContext a, b;
  a.table = &withTable.table;
  b.table = &without.table;
  const VoteOutcome out = tallyVotes({voteOf(a), voteOf(b)});
  EXPECT_FALSE(out.go);
  EXPECT_NE(out.why.find("different decision tables"), std::string::npos) << out.why;
  EXPECT_TRUE(tallyVotes({voteOf(a), voteOf(a)}).go);
}

// symmem-info's output, run with `env` (VAR=value ...) on `args`.
std::string symmemInfo(const std::string& env, const std::string& args) {
  const std::string cmd =
      "env -u SYMMEM_TABLE -u SYMMEM_TOPO_FILE -u SYMMEM_CC " + env + " '" + SYMMEM_INFO_PATH + "' " + args + " 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

TEST(InstalledTable, SymmemInfoShowsTheTableInForceAndWhy) {
  const std::string file = std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/h100-sxm-x8-nv18.topo.txt";
  ConfigHome home, other;
  const std::string path =
      install(home.tables(), fingerprintOf(recorded("h100-sxm-x8-nv18.topo.txt"), thisDriverMajor()));
  std::string out =
      symmemInfo("XDG_CONFIG_HOME=" + home.path(), "--topo " + file + " --cc 9.0 --link nvlink --ranks 8");
  EXPECT_NE(out.find("Decision table: installed " + path + " (installed for this machine (machine gpus 8;"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(" 4KiB  symmetric one-shot"), std::string::npos) << out;
  EXPECT_NE(out.find(" 8KiB  symmetric two-shot"), std::string::npos) << out;
  // Another machine's table: named, with the difference, and the built-in table decides.
  install(other.tables(), fingerprintOf(recorded("a100-sxm4-x8-aws-p4d-24xlarge-nv12.topo.txt"), thisDriverMajor()));
  out = symmemInfo("XDG_CONFIG_HOME=" + other.path(), "--topo " + file + " --cc 9.0 --link nvlink --ranks 8");
  EXPECT_NE(out.find("Decision table: built-in (no SYMMEM_TABLE, and no table installed for this machine in " +
                     other.tables()),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("ignored: tuned for another machine (the link between GPU 0 and GPU 1 is NV12 there, NV18 here)"),
            std::string::npos)
      << out;
  // SYMMEM_TABLE wins.
  out = symmemInfo("XDG_CONFIG_HOME=" + home.path() + " SYMMEM_TABLE=" + path,
                   "--topo " + file + " --cc 9.0 --link nvlink --ranks 8");
  EXPECT_NE(out.find("Decision table: SYMMEM_TABLE " + path + " (SYMMEM_TABLE is set"), std::string::npos) << out;
  // A SYMMEM_TABLE that cannot be read: the built-in table decides, and the line says so and why
  // (it used to name the unreadable file as the table in force).
  const std::string missing = home.path() + "/no-such.table";
  out = symmemInfo("XDG_CONFIG_HOME=" + home.path() + " SYMMEM_TABLE=" + missing,
                   "--topo " + file + " --cc 9.0 --link nvlink --ranks 8");
  EXPECT_NE(out.find("Decision table: built-in (SYMMEM_TABLE=" + missing + " cannot be used: "), std::string::npos)
      << out;
  EXPECT_EQ(out.find("Decision table: SYMMEM_TABLE"), std::string::npos) << out;
}

}  // namespace
}  // namespace symmem

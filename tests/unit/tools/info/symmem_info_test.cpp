// SPDX-License-Identifier: Apache-2.0
// Runs the built symmem-info the way a user does and checks what it prints.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "core/settings.h"
#include "core/symmetric_limits.h"
#include "core/table_file.h"
#include "tests/unit/required_parts.h"
#include "tests/unit/temp_file.h"

namespace symmem {
namespace {

struct ToolRun {
  int exitCode = -1;
  std::string out;
};

ToolRun run(const std::string& args, const std::string& env = "") {
  const std::string cmd =
      "env -u SYMMEM_TABLE -u SYMMEM_TOPO_FILE -u SYMMEM_CC " + env + " '" + SYMMEM_INFO_PATH + "' " + args + " 2>&1";
  ToolRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool has(const ToolRun& r, const std::string& s) { return r.out.find(s) != std::string::npos; }

TEST(SymmemInfo, DefaultShowsVersionSettingsAndDecisions) {
  // The bundled default machine, whatever GPUs this machine has.
  ToolRun r = run("--default-machine");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r, "nccl-symmem ")) << r.out;
  EXPECT_TRUE(has(r, "NCCL built against: 2."));
  EXPECT_TRUE(has(r, "SYMMEM_TIMEOUT_MS  = 600000       [default]"));
  EXPECT_TRUE(has(r, "8B  symmetric one-shot"));
  EXPECT_TRUE(has(r, "256MiB  NCCL"));
  // The default machine: 8 ranks across two sockets, and what was published for such boxes.
  EXPECT_TRUE(has(r, "what to expect against NCCL, 8 ranks, pcie-sys")) << r.out;
  EXPECT_TRUE(has(r, "8x RTX PRO 6000, two sockets, Broadcom switches, fp16")) << r.out;
  EXPECT_TRUE(has(r, "per step of 120")) << r.out;
}

TEST(SymmemInfo, Capability120Pcie) {
  ToolRun r = run("--cc 12.0 --link pcie-sys --ranks 8");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r, "table entry: cc=12.0 link=pcie-sys ranks=8 oneshot<=16KiB twoshot<=128KiB")) << r.out;
  EXPECT_TRUE(has(r, "  symmetric bands: oneshot pull <=16KiB, twoshot pull <=128KiB\n")) << r.out;
  EXPECT_TRUE(has(r, "     16KiB  symmetric one-shot pull     within a one-shot band"));
  EXPECT_TRUE(has(r, "     32KiB  symmetric two-shot pull     within a two-shot band"));
  EXPECT_TRUE(has(r, "    128KiB  symmetric two-shot pull"));
  EXPECT_TRUE(has(r, "    256KiB  NCCL "));
  ToolRun two = run("--cc 12.0 --link pcie-switch --ranks 2");
  ASSERT_EQ(two.exitCode, 0) << two.out;
  EXPECT_TRUE(has(two, "  symmetric bands: oneshot push <=128KiB, twoshot push <=1MiB\n")) << two.out;
  EXPECT_TRUE(has(two, "      1MiB  symmetric two-shot push")) << two.out;
  ToolRun eight = run("--cc 12.0 --link pcie-switch --ranks 8");
  EXPECT_TRUE(has(eight, "    256KiB  symmetric two-shot staged")) << eight.out;
}

std::string firstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// Only what goes to stdout, with `env` before the tool.
ToolRun runStdout(const std::string& args, const std::string& env) {
  const std::string cmd = "env -u SYMMEM_TABLE -u SYMMEM_TOPO_FILE -u SYMMEM_CC " + env + " '" + SYMMEM_INFO_PATH +
                          "' " + args + " 2>/dev/null";
  ToolRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The bottom line comes first: the sizes on the symmetric kernels, and what NCCL_TUNER_PLUGIN in this
// shell makes of the plugin.
TEST(SymmemInfo, TheFirstLineIsTheVerdict) {
  const std::string args = "--cc 12.0 --link pcie-sys --ranks 8";
  ToolRun unset = runStdout(args, "-u NCCL_TUNER_PLUGIN");
  ASSERT_EQ(unset.exitCode, 0) << unset.out;
  EXPECT_EQ(firstLine(unset.out),
            "8 ranks, pcie-sys: symmetric kernels up to 128KiB, NCCL above; NCCL_TUNER_PLUGIN unset: the plugin is "
            "inactive in this shell")
      << unset.out;
  EXPECT_EQ(firstLine(runStdout(args, "NCCL_TUNER_PLUGIN=none").out),
            "8 ranks, pcie-sys: symmetric kernels up to 128KiB, NCCL above; NCCL_TUNER_PLUGIN=none: NCCL loads no "
            "tuner plugin in this shell");
  EXPECT_EQ(firstLine(runStdout(args, "NCCL_TUNER_PLUGIN=symmem").out),
            "8 ranks, pcie-sys: symmetric kernels up to 128KiB, NCCL above; NCCL_TUNER_PLUGIN=symmem: NCCL loads this "
            "plugin in this shell");
  EXPECT_NE(firstLine(runStdout(args, "NCCL_TUNER_PLUGIN=other").out).find("names another tuner plugin"),
            std::string::npos);
  EXPECT_EQ(firstLine(runStdout("--cc 12.0 --link pcie-sys --ranks 8", "-u NCCL_TUNER_PLUGIN SYMMEM_SYMMETRIC=0").out),
            "8 ranks, pcie-sys: NCCL at every size: symmetric path off (SYMMEM_SYMMETRIC=0); NCCL_TUNER_PLUGIN unset: "
            "the plugin is inactive in this shell");
}

TEST(SymmemInfo, Capability90NvLink) {
  ToolRun r = run("--cc 9.0 --link nvlink --ranks 2");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r, "      1MiB  symmetric one-shot")) << r.out;
  EXPECT_TRUE(has(r, "      2MiB  symmetric two-shot"));
  EXPECT_TRUE(has(r, "      8MiB  symmetric two-shot"));
  EXPECT_TRUE(has(r, "     16MiB  NCCL "));
}

TEST(SymmemInfo, UnlistedCapabilityWorksAndWarnsOnce) {
  ToolRun r = run("--cc 13.0 --link pcie-switch --ranks 4");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r, "nearest lower capability")) << r.out;
  EXPECT_TRUE(has(r, "compute capability 13.0 has no table entry; using the entry of 12.1"));
  EXPECT_EQ(r.out.find("compute capability 13.0"), r.out.rfind("compute capability 13.0")) << "one WARN only";
  ToolRun old = run("--cc 7.5 --link pcie-switch --ranks 4");
  ASSERT_EQ(old.exitCode, 0) << old.out;
  EXPECT_TRUE(has(old, "table entry: none")) << old.out;
  EXPECT_TRUE(has(old, "8B  NCCL"));
}

TEST(SymmemInfo, WithoutArgumentsRunsAnywhere) {
  ToolRun r = run("");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r, "nccl-symmem ")) << r.out;
  EXPECT_TRUE(has(r, "256MiB  NCCL")) << r.out;
}

TEST(SymmemInfo, CapabilityOverrideAppliesAsInThePlugin) {
  ToolRun env = run("--link nvlink --ranks 2", "SYMMEM_CC=9.0");
  ASSERT_EQ(env.exitCode, 0) << env.out;
  EXPECT_TRUE(has(env, "table entry: cc=9.0 link=nvlink ranks=2")) << env.out;
  EXPECT_TRUE(has(env, "cc 9.0 (SYMMEM_CC)")) << env.out;
  ToolRun flag = run("--cc 12 --link nvlink --ranks 2", "SYMMEM_CC=9.0");
  ASSERT_EQ(flag.exitCode, 0) << flag.out;
  EXPECT_TRUE(has(flag, "table entry: cc=12.0 link=nvlink ranks=2")) << flag.out;
  EXPECT_EQ(run("--cc 12.-0").exitCode, 2);
}

TEST(SymmemInfo, MoreThanEightRanksStayOnNccl) {
  ToolRun r = run("--cc 9.0 --link nvlink --ranks 16");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_FALSE(has(r, "symmetric two-shot")) << r.out;
  EXPECT_TRUE(has(r, "the symmetric kernels take at most 8 ranks")) << r.out;
}

TEST(SymmemInfo, ShowsTheBufferMemoryOfTheEntry) {
  ToolRun r = run("--cc 12.0 --link pcie-sys --ranks 8");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  // The entry's limits (16 KiB one-shot, 128 KiB two-shot), by the rule the setup applies.
  const std::string buffer = approximateBytes(symmetricBufferBytes(8, 16 << 10, 128 << 10));
  EXPECT_TRUE(has(r, "symmetric buffer: " + buffer + " per GPU (cap 2GiB)")) << r.out;
}

TEST(SymmemInfo, TableBeyondTheKernelsIsRefusedWithAWarning) {
  testing::TempFile table("symmem-table 1\nentry cc=12.0 link=pcie-sys ranks=8 oneshot=1G twoshot=0\n");
  ASSERT_TRUE(table.ok());
  ToolRun r = run("--cc 12.0 --link pcie-sys --ranks 8", "SYMMEM_TABLE=" + table.path());
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r, table.path() + ":2: needs 24.0GiB of symmetric buffer per GPU")) << r.out;
  EXPECT_TRUE(has(r, "oneshot<=16KiB")) << r.out;
}

// --dump-table writes the table in use as a file that reads back to the same decisions.
TEST(SymmemInfo, DumpTableRoundTrips) {
  ToolRun dump = run("--dump-table");
  ASSERT_EQ(dump.exitCode, 0) << dump.out;
  EXPECT_TRUE(has(dump, "sym cc=12.0 link=pcie-sys ranks=8 upto=16KiB algo=oneshot variant=pull\n")) << dump.out;
  EXPECT_TRUE(has(dump, "entry cc=9.0 link=nvlink ranks=2 oneshot=1MiB twoshot=8MiB\n")) << dump.out;
  TableFileResult file = parseTableText(dump.out, "dump.txt");
  ASSERT_TRUE(file.ok()) << file.error;
  DecisionTable loaded;
  applyTableFile(file, loaded);
  const DecisionTable& builtIn = DecisionTable::builtIn();
  ASSERT_EQ(loaded.entries().size(), builtIn.entries().size());
  for (size_t i = 0; i < builtIn.entries().size(); ++i) {
    const Thresholds& a = builtIn.entries()[i];
    const Thresholds& b = loaded.entries()[i];
    EXPECT_EQ(a.symBands, b.symBands) << i;
    EXPECT_EQ(a.numSymBands, b.numSymBands) << i;
    EXPECT_EQ(a.oneShotMaxBytes, b.oneShotMaxBytes) << i;
    EXPECT_EQ(a.twoShotMaxBytes, b.twoShotMaxBytes) << i;
  }

  // A table file of sym lines: the tool decides by it and dumps it back as sym lines.
  testing::TempFile table(
      "symmem-table 1\nsym cc=12.0 link=pcie-root ranks=6 upto=8K algo=oneshot variant=staged\n"
      "sym cc=12.0 link=pcie-root ranks=6 upto=64K algo=twoshot variant=push\n");
  ASSERT_TRUE(table.ok());
  ToolRun own = run("--cc 12.0 --link pcie-root --ranks 6 --table " + table.path());
  ASSERT_EQ(own.exitCode, 0) << own.out;
  EXPECT_TRUE(has(own, "      8KiB  symmetric one-shot staged")) << own.out;
  EXPECT_TRUE(has(own, "     64KiB  symmetric two-shot push")) << own.out;
  EXPECT_TRUE(has(own, "source: " + table.path() + ":2")) << own.out;
  ToolRun back = run("--dump-table --table " + table.path());
  EXPECT_TRUE(has(back,
                  "sym cc=12.0 link=pcie-root ranks=6 upto=8KiB algo=oneshot variant=staged\n"
                  "sym cc=12.0 link=pcie-root ranks=6 upto=64KiB algo=twoshot variant=push\n"))
      << back.out;
}

TEST(SymmemInfo, CheckValidatesTheFiles) {
  ToolRun clean = run("--check");
  EXPECT_EQ(clean.exitCode, 0) << clean.out;
  EXPECT_TRUE(has(clean, "no problems")) << clean.out;

  testing::TempFile good("symmem-table 1\nentry cc=12.0 link=pcie-sys ranks=8 oneshot=16K twoshot=0\n");
  testing::TempFile bad("symmem-table 1\nentry cc=12 link=pcie-sys ranks=8 oneshot=16K twoshot=0 speed=1\n");
  testing::TempFile topo("\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tPIX\n");
  ASSERT_TRUE(good.ok() && bad.ok() && topo.ok());
  EXPECT_EQ(run("--check", "SYMMEM_TABLE=" + good.path()).exitCode, 0);
  EXPECT_EQ(run("--check --table " + good.path()).exitCode, 0);
  ToolRun badTable = run("--check", "SYMMEM_TABLE=" + bad.path());
  EXPECT_EQ(badTable.exitCode, 1) << badTable.out;
  EXPECT_TRUE(has(badTable, bad.path() + ":2: unknown key 'speed'")) << badTable.out;
  ToolRun badFlag = run("--check --table " + bad.path());
  EXPECT_EQ(badFlag.exitCode, 1) << badFlag.out;
  ToolRun missing = run("--check --table /nonexistent/table.txt");
  EXPECT_EQ(missing.exitCode, 1) << missing.out;
  EXPECT_TRUE(has(missing, "/nonexistent/table.txt")) << missing.out;
  ToolRun badTopo = run("--check", "SYMMEM_TOPO_FILE=" + topo.path());
  EXPECT_EQ(badTopo.exitCode, 1) << badTopo.out;
  EXPECT_TRUE(has(badTopo, topo.path() + ":3")) << badTopo.out;
  ToolRun both = run("--check --topo " + topo.path(), "SYMMEM_TABLE=" + bad.path());
  EXPECT_EQ(both.exitCode, 1) << both.out;
  EXPECT_TRUE(has(both, "2 problems")) << both.out;
}

TEST(SymmemInfo, UnknownSettingNamesAreWarnedAbout) {
  ToolRun r = run("--cc 12.0 --link nvlink --ranks 2", "SYMEM_ENABLE=0 SYMMEM_TIMEOUT=5");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r, "SYMEM_ENABLE is not a setting; did you mean SYMMEM_ENABLE?")) << r.out;
  EXPECT_TRUE(has(r, "SYMMEM_TIMEOUT is not a setting; did you mean SYMMEM_TIMEOUT_MS?")) << r.out;
  ToolRun check = run("--check", "SYMMEM_ENABLED=0");
  EXPECT_EQ(check.exitCode, 1) << check.out;
  EXPECT_TRUE(has(check, "SYMMEM_ENABLED is not a setting")) << check.out;
}

TEST(SymmemInfo, EnvPrintsTheRegistryTable) {
  ToolRun r = run("--env");
  ASSERT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.out, settingsMarkdownTable());
}

TEST(SymmemInfo, SettingsShowTheirSource) {
  ToolRun r = run("", "SYMMEM_TIMEOUT_MS=500 SYMMEM_SYMMETRIC=maybe");
  ASSERT_EQ(r.exitCode, 0);
  EXPECT_TRUE(has(r, "SYMMEM_TIMEOUT_MS  = 500          [environment]")) << r.out;
  EXPECT_TRUE(has(r, "SYMMEM_SYMMETRIC   = 1            [invalid, default used: 'maybe']"));
  EXPECT_TRUE(has(r, "SYMMEM_SYMMETRIC='maybe' is not valid"));
}

TEST(SymmemInfo, SymmetricOffKeepsEverythingOnNccl) {
  ToolRun r = run("--cc 12.0 --link pcie-switch --ranks 2", "SYMMEM_SYMMETRIC=0");
  ASSERT_EQ(r.exitCode, 0);
  EXPECT_FALSE(has(r, "symmetric one-shot ")) << r.out;
  EXPECT_TRUE(has(r, "symmetric path off (SYMMEM_SYMMETRIC=0)"));
}

TEST(SymmemInfo, BadArgumentsExitWithUsage) {
  EXPECT_EQ(run("--cc banana").exitCode, 2);
  EXPECT_EQ(run("--link token-ring").exitCode, 2);
  EXPECT_EQ(run("--ranks 0").exitCode, 2);
  EXPECT_EQ(run("--frobnicate").exitCode, 2);
  EXPECT_EQ(run("--help").exitCode, 0);
}

TEST(SymmemInfo, DumpTableRoundTripsThroughSymmemTable) {
  testing::TempFile dumped("");
  ASSERT_TRUE(dumped.ok());
  ToolRun dump = run("--dump-table > " + dumped.path());
  ASSERT_EQ(dump.exitCode, 0);
  ToolRun again = run("--dump-table", "SYMMEM_TABLE=" + dumped.path());
  ToolRun plain = run("--dump-table");
  EXPECT_EQ(again.out.substr(again.out.find("symmem-table")), plain.out);
}

}  // namespace
}  // namespace symmem

namespace symmem {
namespace {

// `symmem-info --topo FILE` classifies every fixture and prints a decision table for it.
TEST(SymmemInfoTopo, EveryFixture) {
  struct Case {
    const char* file;
    const char* link;  // the communicator's link class over all GPUs
  };
  const Case cases[] = {
      {"rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt", "pcie-sys"},
      {"rtx-pro-6000-server-x8-wrx90-microchip-3switch.topo.txt", "pcie-root"},
      {"rtx-5090-x2-wrx80-phb.topo.txt", "pcie-root"},
      {"rtx-6000-ada-x4-asus-esc8000a-e12-dual-socket.topo.txt", "pcie-sys"},
      {"rtx-6000-ada-x2-puget-threadripper-wrx90-phb.topo.txt", "pcie-root"},
      {"l40s-x4-aws-g6e-12xlarge-vm.topo.txt", "pcie-root"},
      {"rtx-4090-x8-dual-socket-all-sys-2nic.topo.txt", "pcie-sys"},
      {"rtx-a6000-x3-nvlink-bridge-pair.topo.txt", "pcie-root"},
      {"h100-sxm-x8-nv18.topo.txt", "nvlink"},
      {"a100-sxm4-x8-aws-p4d-24xlarge-nv12.topo.txt", "nvlink"},
      {"h20-3e-x8-nv18-8nic.topo.txt", "nvlink"},
  };
  for (const Case& c : cases) {
    const std::string path = std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/" + c.file;
    ToolRun r = run("--topo " + path);
    EXPECT_EQ(r.exitCode, 0) << c.file << "\n" << r.out;
    EXPECT_TRUE(has(r, std::string("Communicator over all GPUs: link class ") + c.link)) << c.file << "\n" << r.out;
    EXPECT_TRUE(has(r, "256MiB  NCCL")) << c.file;
  }
}

TEST(SymmemInfoTopo, HwlocXmlFixture) {
  SYMMEM_SKIP_WITHOUT_HWLOC();
  const std::string path = std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/dgx2h-v100-sxm3-x16-nvswitch.hwloc.xml";
  ToolRun r = run("--topo " + path);
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r, "Communicator over all GPUs: link class nvlink")) << r.out;
  EXPECT_TRUE(has(r, "256MiB  NCCL")) << r.out;
}

TEST(SymmemInfoTopo, P2pMatrixTurnsThePathOff) {
  const std::string dir = std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/";
  ToolRun r = run("--topo " + dir + "rtx-5090-x2-wrx80-phb.topo.txt," + dir + "rtx-5090-x2-wrx80-phb.p2p-rw.txt");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r, "P2P no")) << r.out;
  EXPECT_TRUE(has(r, "8B  NCCL                        not every pair can do P2P"));
}

TEST(SymmemInfoTopo, BadFileIsAnErrorNamingFileAndLine) {
  testing::TempFile topo("\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tPIX\n");
  ASSERT_TRUE(topo.ok());
  ToolRun r = run("--topo " + topo.path());
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_TRUE(has(r, topo.path() + ":3")) << r.out;
  ToolRun missing = run("--topo /nonexistent/topo.txt");
  EXPECT_EQ(missing.exitCode, 1);
  EXPECT_TRUE(has(missing, "/nonexistent/topo.txt")) << missing.out;
  // On stderr, with nothing before it on stdout.
  EXPECT_EQ(runStdout("--topo /nonexistent/topo.txt", "").out, "");
}

}  // namespace
}  // namespace symmem

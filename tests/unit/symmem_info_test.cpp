// Runs the built symmem-info the way a user does and checks what it prints.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "plugin/settings.h"

namespace symmem {
namespace {

struct ToolRun {
  int exitCode = -1;
  std::string out;
};

ToolRun run(const std::string& args, const std::string& env = "") {
  const std::string cmd = "env -u SYMMEM_TABLE -u SYMMEM_TOPO_FILE -u SYMMEM_CC " + env + " '" + SYMMEM_INFO_PATH +
                          "' " + args + " 2>&1";
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
  ToolRun r = run("");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r, "nccl-symmem ")) << r.out;
  EXPECT_TRUE(has(r, "NCCL built against: 2."));
  EXPECT_TRUE(has(r, "SYMMEM_TIMEOUT_MS  = 10000        [default]"));
  EXPECT_TRUE(has(r, "8B  symmetric one-shot"));
  EXPECT_TRUE(has(r, "256MiB  NCCL"));
}

TEST(SymmemInfo, Capability120Pcie) {
  ToolRun r = run("--cc 12.0 --link pcie-sys --ranks 8");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r, "table entry: cc=12.0 link=pcie-sys ranks=8 oneshot<=32KiB twoshot off")) << r.out;
  EXPECT_TRUE(has(r, "     32KiB  symmetric one-shot"));
  EXPECT_TRUE(has(r, "     64KiB  NCCL "));
}

TEST(SymmemInfo, Capability90NvLink) {
  ToolRun r = run("--cc 9.0 --link nvlink --ranks 2");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r, "    256KiB  symmetric one-shot")) << r.out;
  EXPECT_TRUE(has(r, "    512KiB  symmetric two-shot"));
  EXPECT_TRUE(has(r, "      8MiB  NCCL "));
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
  char path[] = "/tmp/symmem-dump-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  ToolRun dump = run("--dump-table > " + std::string(path));
  ASSERT_EQ(dump.exitCode, 0);
  ToolRun again = run("--dump-table", "SYMMEM_TABLE=" + std::string(path));
  ToolRun plain = run("--dump-table");
  unlink(path);
  EXPECT_EQ(again.out.substr(again.out.find("symmem-table")), plain.out);
}

}  // namespace
}  // namespace symmem

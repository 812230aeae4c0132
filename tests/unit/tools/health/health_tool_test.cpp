// SPDX-License-Identifier: Apache-2.0
// The built symmem-health as a user runs it, without a GPU: usage errors, the no-GPU message, and
// recorded measurements judged with --judge (the exit code each verdict promises, and --csv writing
// back what it read).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <string>

#include "core/bounded_file.h"
#include "tests/unit/tool_run.h"

namespace symmem {
namespace {

using testing::ToolRun;

ToolRun runHealth(const std::string& args) {
  return testing::runTool(std::string("env -u SYMMEM_TOPO_FILE '") + SYMMEM_HEALTH_PATH + "' " + args);
}

bool has(const ToolRun& r, const std::string& s) { return r.has(s); }

std::string recorded(const std::string& name) { return std::string(SYMMEM_TEST_DATA_DIR) + "/tools/health/" + name; }

TEST(HealthTool, UsageAndBadArguments) {
  const ToolRun help = runHealth("--help");
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_TRUE(has(help, "usage: symmem-health")) << help.out;
  const ToolRun bad = runHealth("--timeout-s 0");
  EXPECT_EQ(bad.exitCode, 2) << bad.out;
  EXPECT_TRUE(has(bad, "symmem-health: bad --timeout-s '0'")) << bad.out;
  EXPECT_TRUE(has(bad, "symmem-health --help lists the options")) << bad.out;
  // An unknown option's message names --help already: the hint is not said twice.
  const ToolRun unknown = runHealth("--bogus");
  EXPECT_EQ(unknown.exitCode, 2) << unknown.out;
  const size_t hint = unknown.out.find("--help lists the options");
  ASSERT_NE(hint, std::string::npos) << unknown.out;
  EXPECT_EQ(unknown.out.find("--help lists the options", hint + 1), std::string::npos) << unknown.out;
  const ToolRun missing = runHealth("--judge /nonexistent/health.csv");
  EXPECT_EQ(missing.exitCode, 2) << missing.out;
  EXPECT_TRUE(has(missing, "symmem-health: cannot read /nonexistent/health.csv")) << missing.out;
}

TEST(HealthTool, NoGpuSaysThereIsNothingToDo) {
  struct stat st;
  if (stat("/dev/nvidiactl", &st) == 0) GTEST_SKIP() << "this machine has an NVIDIA device";
  const ToolRun r = runHealth("");
  EXPECT_EQ(r.exitCode, 3) << r.out;
  EXPECT_EQ(r.out.rfind("symmem-health: no CUDA GPU found", 0), 0u) << r.out;
}

TEST(HealthTool, RecordedVerdictsKeepTheirExitCodes) {
  struct Case {
    const char* file;
    int exitCode;
    const char* says;
  };
  for (const Case& c : {Case{"nvlink-h200-x2.csv", 0, "verdict: safe and useful (exit 0)"},
                        Case{"pcie-switch-x8-write-collapse.csv", 0, "[SLOW] posted-write-collapse"},
                        Case{"broken-p2p-x2-timeout-mismatch.csv", 1, "[UNSAFE]"},
                        Case{"direct-attach-x2-sysmem-staging.csv", 3, "[NOT USEFUL]"},
                        Case{"one-gpu-loopback.csv", 3, "[NOT USEFUL]"}}) {
    const ToolRun r = runHealth("--judge " + recorded(c.file));
    EXPECT_EQ(r.exitCode, c.exitCode) << c.file << "\n" << r.out;
    EXPECT_TRUE(has(r, c.says)) << c.file << "\n" << r.out;
  }
}

TEST(HealthTool, JudgeWritesBackWhatItRead) {
  const std::string copy = "/tmp/symmem-health-tool-test.csv";
  std::remove(copy.c_str());
  const ToolRun first = runHealth("--judge " + recorded("pcie-switch-x4-pix.csv") + " --csv " + copy);
  ASSERT_EQ(first.exitCode, 0) << first.out;
  const ToolRun again = runHealth("--judge " + copy);
  EXPECT_EQ(again.exitCode, 0) << again.out;
  // The same table and verdict from the copy as from the original (the first line names the file).
  EXPECT_EQ(again.out.substr(again.out.find('\n')),
            first.out.substr(first.out.find('\n'), again.out.size() - again.out.find('\n')));
  std::remove(copy.c_str());
}

}  // namespace
}  // namespace symmem

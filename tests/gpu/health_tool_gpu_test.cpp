// SPDX-License-Identifier: Apache-2.0
// symmem-health on the GPUs present, run as a user runs it (its own process, so its parent stays
// CUDA-free as it must): every pattern check passes, every number is measured and plausible, and
// the verdict fits the GPU count (one GPU: a loopback that checks the tool, exit 3, "not useful").
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "core/bounded_file.h"
#include "tests/gpu/gpu_test_macros.h"
#include "tests/unit/tool_run.h"
#include "tools/health/csv.h"

namespace symmem {
namespace {

using testing::ToolRun;

ToolRun runHealth(const std::string& args, const std::string& env = "") {
  return testing::runTool("env " + env + " '" + SYMMEM_HEALTH_PATH + "' " + args);
}

TEST(HealthToolGpu, EveryCheckPassesAndEveryNumberIsMeasured) {
  SKIP_WITHOUT_GPUS(1);
  std::string why;
  const int gpus = testing::gpuCount(&why);
  const std::string csv = "/tmp/symmem-health-gpu-test.csv";
  std::remove(csv.c_str());
  const ToolRun r = runHealth("--quick --csv " + csv + (gpus > 8 ? " --gpus 0,1,2,3,4,5,6,7" : ""));
  std::printf("%s", r.out.c_str());  // the numbers, for the log of the GPU machine
  const BoundedFileText file = readBoundedFile(csv, size_t{4} << 20);
  ASSERT_TRUE(file.ok()) << file.error << "\n" << r.out;
  HealthMeasurements m;
  std::string error;
  ASSERT_TRUE(parseHealthCsv(file.text, &m, &error)) << error;

  ASSERT_FALSE(m.pairs.empty());
  for (const HealthGpu& g : m.gpus) {
    EXPECT_TRUE(g.cc.known()) << g.index;
    EXPECT_GT(g.hostCopyGBs, 1.0) << g.index;  // any PCIe link moves more than 1 GB/s
  }
  for (const HealthPair& p : m.pairs) {
    const std::string pair = "GPU" + std::to_string(p.a) + "->GPU" + std::to_string(p.b);
    if (p.driverP2p != Support::Yes) continue;  // a box without P2P on this pair: nothing measured there
    EXPECT_EQ(p.writeCheck, PatternResult::Ok) << pair << ": " << p.detail;
    EXPECT_EQ(p.readCheck, PatternResult::Ok) << pair << ": " << p.detail;
    EXPECT_TRUE(p.writeLatencyUs > 0.05 && p.writeLatencyUs < 100) << pair << " " << p.writeLatencyUs;
    EXPECT_TRUE(p.readLatencyUs > 0.05 && p.readLatencyUs < 100) << pair << " " << p.readLatencyUs;
    EXPECT_GT(p.writeGBs, 1.0) << pair;
    EXPECT_GT(p.readGBs, 1.0) << pair;
  }
  if (gpus == 1) {
    EXPECT_TRUE(m.loopback);
    EXPECT_EQ(r.exitCode, 3) << "one GPU: the plugin has nothing to gain\n" << r.out;
  } else {
    EXPECT_FALSE(m.loopback);
    EXPECT_EQ(m.allAtOnce.check, PatternResult::Ok) << m.allAtOnce.detail;
    ASSERT_EQ(m.allAtOnce.writeGBsPerGpu.size(), m.gpus.size());
    for (double gbs : m.allAtOnce.writeGBsPerGpu) EXPECT_GT(gbs, 1.0);
  }
}

// A write that lands wrong, a kernel that never ends and a child stuck on the host, each injected into
// the first write check: each is named in that pair's detail, the other steps and the tool carry on,
// and the verdict follows (one GPU: its loopback failed, exit 3; more: P2P broken, exit 1).
TEST(HealthToolGpu, InjectedFaultsAreReportedAndTheToolCarriesOn) {
  SKIP_WITHOUT_GPUS(1);
  std::string why;
  const int gpus = testing::gpuCount(&why);
  struct Case {
    const char* fault;
    PatternResult result;
    const char* detail;
  };
  for (const Case& c : {Case{"corrupt", PatternResult::Mismatch, "words differ, the first at word 0"},
                        Case{"hang", PatternResult::Timeout, "did not finish within 2 s"},
                        Case{"stall", PatternResult::Timeout, "the probe was stopped"}}) {
    const std::string csv = std::string("/tmp/symmem-health-gpu-fault-") + c.fault + ".csv";
    std::remove(csv.c_str());
    const ToolRun r = runHealth("--quick --timeout-s 2 --gpus 0" + std::string(gpus > 1 ? ",1" : "") + " --csv " + csv,
                                std::string("SYMMEM_GPU_TESTS_HEALTH_FAULT=") + c.fault);
    std::printf("--- %s\n%s", c.fault, r.out.c_str());
    EXPECT_EQ(r.exitCode, gpus > 1 ? 1 : 3) << c.fault;
    const BoundedFileText file = readBoundedFile(csv, size_t{4} << 20);
    ASSERT_TRUE(file.ok()) << c.fault << ": " << file.error;
    HealthMeasurements m;
    std::string error;
    ASSERT_TRUE(parseHealthCsv(file.text, &m, &error)) << error;
    ASSERT_FALSE(m.pairs.empty());
    EXPECT_EQ(m.pairs[0].writeCheck, c.result) << c.fault << ": " << m.pairs[0].detail;
    EXPECT_NE(m.pairs[0].detail.find(c.detail), std::string::npos) << c.fault << ": " << m.pairs[0].detail;
    EXPECT_TRUE(std::isnan(m.pairs[0].writeGBs)) << c.fault << ": a broken pair is not timed";
  }
}

}  // namespace
}  // namespace symmem

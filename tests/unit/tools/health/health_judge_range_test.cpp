// SPDX-License-Identifier: Apache-2.0
// symmem-health --judge reads numbers from other machines: an impossible one (a negative or infinite
// bandwidth, a 309-digit one, a pair of one GPU with itself on a two-GPU node) is refused with its line,
// never judged; text from the file is printed with its control characters escaped, and an error is
// not cut at a NUL byte; an empty --judge or --csv is refused, not taken as "measure".
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/temp_file.h"
#include "tests/unit/tool_run.h"
#include "tools/health/csv.h"
#include "tools/health/plan.h"

namespace symmem {
namespace {

using namespace std::string_literals;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string kTwoGpus =
    "record,gpu_a,gpu_b,field,value\n"
    "node,,,link,nvlink\n"
    "node,,,loopback,false\n"
    "gpu,0,,name,NVIDIA H200\n"
    "gpu,1,,name,NVIDIA H200\n"
    "pair,0,1,writeCheck,ok\n"
    "pair,0,1,readCheck,ok\n"
    "pair,1,0,writeCheck,ok\n"
    "pair,1,0,readCheck,ok\n"
    "pair,1,0,writeGBs,376.65\n";  // line 10

std::string errorOf(const std::string& text) {
  HealthMeasurements m;
  std::string error;
  if (parseHealthCsv(text, &m, &error)) return "(read)";
  return error;
}

TEST(HealthJudgeRange, ImpossibleBandwidthsAndLatenciesAreRefusedWithTheirLine) {
  EXPECT_EQ(errorOf(kTwoGpus + "pair,0,1,writeGBs,-54\n"),
            "line 11: writeGBs: -54 is not a measured bandwidth (above 0, at most 100000 GB/s)");
  EXPECT_EQ(errorOf(kTwoGpus + "pair,0,1,writeGBs,1e308\n"),
            "line 11: writeGBs: 1e308 is not a measured bandwidth (above 0, at most 100000 GB/s)");
  EXPECT_EQ(errorOf(kTwoGpus + "pair,0,1,readGBs,0\n"),
            "line 11: readGBs: 0 is not a measured bandwidth (above 0, at most 100000 GB/s)");
  EXPECT_EQ(errorOf(kTwoGpus + "pair,0,1,writeLatencyUs,-0.5\n"),
            "line 11: writeLatencyUs: -0.5 is not a measured latency (above 0, at most 3600 s)");
  EXPECT_EQ(errorOf(kTwoGpus + "all,1,,writeGBsPerGpu,-1\n"),
            "line 11: writeGBsPerGpu: -1 is not a measured bandwidth (above 0, at most 100000 GB/s)");
  EXPECT_EQ(errorOf(kTwoGpus + "gpu,1,,hostCopyGBs,2e5\n"),
            "line 11: hostCopyGBs: 2e5 is not a measured bandwidth (above 0, at most 100000 GB/s)");
  for (const char* infinite : {"inf", "-inf", "nan", "1e999"})
    EXPECT_EQ(errorOf(kTwoGpus + "pair,0,1,writeGBs," + infinite + "\n"),
              "line 11: writeGBs: '" + std::string(infinite) + "' is not a number");
  // Empty is "not measured"; the largest real values read.
  EXPECT_EQ(errorOf(kTwoGpus + "pair,0,1,writeGBs,\npair,0,1,readGBs,99999\n"), "(read)");
}

TEST(HealthJudgeRange, APairIsTwoDifferentGpusOfTheFile) {
  EXPECT_EQ(errorOf(kTwoGpus + "pair,0,0,writeGBs,50\n"),
            "line 11: pair 0->0: a pair is two different GPUs (a GPU with itself is only the loopback check of a "
            "one-GPU file)");
  EXPECT_EQ(errorOf(kTwoGpus + "pair,0,2,writeGBs,50\n"), "line 11: pair 0->2 names GPU 2, which has no gpu record");
  EXPECT_EQ(errorOf(kTwoGpus + "pair,0,64,writeGBs,50\n"), "line 11: gpu_b '64' is not a GPU index (0-63)");
  EXPECT_EQ(errorOf(kTwoGpus + "all,2,,writeGBsPerGpu,50\n"),
            "line 11: writeGBsPerGpu for position 2, but there are 2 GPUs");
  EXPECT_EQ(errorOf("record,gpu_a,gpu_b,field,value\nnode,,,loopback,true\ngpu,0,,name,A\ngpu,1,,name,B\n"),
            "line 2: loopback is true, but the file has 2 GPUs (the loopback check is for one GPU)");
  // One GPU's loopback pair is what symmem-health writes on one GPU.
  EXPECT_EQ(errorOf("record,gpu_a,gpu_b,field,value\nnode,,,loopback,true\ngpu,0,,name,A\npair,0,0,writeGBs,9\n"),
            "(read)");
}

TEST(HealthJudgeRange, TextFromTheFileHasItsControlCharactersEscaped) {
  HealthMeasurements m;
  std::string error;
  ASSERT_TRUE(
      parseHealthCsv("record,gpu_a,gpu_b,field,value\ngpu,0,,name,\x1b[2J\x1b[31mH200\x07\n"
                     "node,,,topologySource,a\tb\n",
                     &m, &error))
      << error;
  EXPECT_EQ(m.gpus[0].name, "\\x1b[2J\\x1b[31mH200\\x07");
  EXPECT_EQ(m.topologySource, "a\\tb");
  // An error quoting the file: escaped, and whole past a NUL byte.
  const std::string withNul = kTwoGpus + "pair,0,1,writeGBs,5\0after\x1b[0m\n"s;
  EXPECT_EQ(errorOf(withNul), "line 11: writeGBs: '5\\x00after\\x1b[0m' is not a number");
}

TEST(HealthJudgeRange, EmptyFileNamesAreRefused) {
  EXPECT_EQ(parseHealthArgs({"--judge", ""}).error,
            "--judge needs a file name (an empty one would start a measurement)");
  EXPECT_EQ(parseHealthArgs({"--csv", ""}).error, "--csv needs a file name");
}

testing::ToolRun judge(const std::string& text) {
  testing::TempFile file(text, "symmem-judge");
  return testing::runTool(std::string("env -u SYMMEM_TOPO_FILE '") + SYMMEM_HEALTH_PATH + "' --judge " + file.path());
}

TEST(HealthJudgeRange, TheToolRefusesImpossibleNumbersAndEscapesWhatItPrints) {
  const testing::ToolRun negative = judge(kTwoGpus + "pair,0,1,writeGBs,-54\n");
  EXPECT_EQ(negative.exitCode, 2) << negative.out;
  EXPECT_TRUE(has(negative.out, "line 11: writeGBs: -54 is not a measured bandwidth")) << negative.out;
  EXPECT_FALSE(has(negative.out, "verdict")) << negative.out;
  const testing::ToolRun self = judge(kTwoGpus + "pair,0,0,writeGBs,50\n");
  EXPECT_EQ(self.exitCode, 2) << self.out;
  EXPECT_FALSE(has(self.out, "one GPU")) << self.out;
  const testing::ToolRun nul = judge(kTwoGpus + "pair,0,1,writeGBs,5\0after\n"s);
  EXPECT_EQ(nul.exitCode, 2) << nul.out;
  EXPECT_TRUE(has(nul.out, "'5\\x00after' is not a number")) << nul.out;
  std::string named = kTwoGpus;
  named.replace(named.find("gpu,0,,name,NVIDIA H200"), 23, "gpu,0,,name,\x1b[31mred H200");
  const testing::ToolRun ansi = judge(named + "pair,0,1,writeGBs,371\n");
  EXPECT_FALSE(has(ansi.out, "\x1b")) << ansi.out;
  EXPECT_TRUE(has(ansi.out, "\\x1b[31mred")) << ansi.out;
  const testing::ToolRun empty =
      testing::runTool(std::string("env -u SYMMEM_TOPO_FILE '") + SYMMEM_HEALTH_PATH + "' --judge ''");
  EXPECT_EQ(empty.exitCode, 2) << empty.out;
  EXPECT_TRUE(has(empty.out, "--judge needs a file name")) << empty.out;
}

}  // namespace
}  // namespace symmem

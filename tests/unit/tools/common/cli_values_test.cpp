// SPDX-License-Identifier: Apache-2.0
// The tools' command lines are parsed strictly before anything runs: a bad value names its flag and
// the value, an unknown flag is named with a pointer to --help.
#include "tools/common/cli_values.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tools/bench/options.h"
#include "tools/common/output_file.h"
#include "tools/tune/options.h"

namespace symmem {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

TEST(CliValues, CountsAreWholeNumbersInRange) {
  int64_t n = 0;
  EXPECT_EQ(parseCountArg("--iters", "200", 1, 1000, n), "");
  EXPECT_EQ(n, 200);
  for (const char* bad : {"1e3", "5x", "-5", "+5", "0x10", "", " 5", "5 ", "2.0", "99999999999999999999"})
    EXPECT_NE(parseCountArg("--iters", bad, 1, 1000, n).find(std::string("--iters '") + bad + "'"), std::string::npos)
        << bad;
  EXPECT_EQ(parseCountArg("--ngpus", "1000", 2, 64, n), "bad --ngpus '1000': expected a whole number from 2 to 64");
}

TEST(CliValues, SizesTakeBinarySuffixesAndNothingElse) {
  uint64_t b = 0;
  EXPECT_EQ(parseSizeArg("-b", "8K", 1, 1ull << 40, b), "");
  EXPECT_EQ(b, 8 * KiB);
  EXPECT_EQ(parseSizeArg("-e", "64MiB", 1, 1ull << 40, b), "");
  EXPECT_EQ(b, 64 * MiB);
  for (const char* bad : {"8Kfoo", "-1", "1.5K", "1e3", "", "K", "0x10"})
    EXPECT_NE(parseSizeArg("-b", bad, 1, 1ull << 40, b).find(std::string("bad -b '") + bad + "'"), std::string::npos)
        << bad;
  EXPECT_NE(parseSizeArg("--one-shot-max", "2G", 0, 1ull << 30, b).find("at most 1GiB"), std::string::npos);
}

TEST(CliValues, PercentIsDecimal) {
  double p = 0;
  EXPECT_EQ(parsePercentArg("--margin", "2.5%", 0, 50, p), "");
  EXPECT_NEAR(p, 0.025, 1e-12);
  EXPECT_EQ(parsePercentArg("--margin", "10", 0, 50, p), "");
  EXPECT_NEAR(p, 0.10, 1e-12);
  for (const char* bad : {"0x10", "1e1", "five", "-1", "50", "", "%", "5%%", " 5", "inf", "nan", ".", "5."})
    EXPECT_NE(parsePercentArg("--margin", bad, 0, 50, p), "") << bad;
}

TEST(CliValues, IndexListsAreDistinctWholeNumbers) {
  std::vector<int> v;
  EXPECT_EQ(parseIndexListArg("--gpus", "0,3,1", 63, v), "");
  EXPECT_EQ(v, (std::vector<int>{0, 3, 1}));
  for (const char* bad : {"", ",", "0,", ",0", "0,,1", "1,1", "-1", "+1", "64", "0x1", "1 ", "a"})
    EXPECT_NE(parseIndexListArg("--gpus", bad, 63, v).find(std::string("bad --gpus '") + bad + "'"), std::string::npos)
        << bad;
  EXPECT_EQ(v, (std::vector<int>{0, 3, 1}));  // untouched by a bad value
}

TEST(CliValues, UnknownOptionPointsToHelp) {
  EXPECT_EQ(unknownOptionMessage("symmem-bench", "--x"), "unknown option --x (symmem-bench --help lists the options)");
}

BenchArgsResult bench(const std::vector<std::string>& args) { return parseBenchArgs(args); }

TEST(BenchOptions, DefaultsAndValues) {
  const BenchArgsResult d = bench({});
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_EQ(d.options.minBytes, 8u);
  EXPECT_EQ(d.options.maxBytes, 64 * MiB);
  const BenchArgsResult r = bench({"-b", "1K", "-e", "1M", "--iters", "50", "--ngpus", "4", "--one-shot-max", "0",
                                   "--timeout-s", "60", "--dtype", "fp16", "--no-pdl"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.options.minBytes, 1 * KiB);
  EXPECT_EQ(r.options.iters, 50);
  EXPECT_EQ(r.options.nGpus, 4);
  EXPECT_EQ(r.options.oneShotMax, 0u);
  EXPECT_EQ(r.options.timeoutSec, 60);
  EXPECT_FALSE(r.options.pdl);
  EXPECT_EQ(r.options.dtype, DataType::Float16);
  EXPECT_EQ(bench({"--dtype", "half"}).options.dtype, DataType::Float16);
  EXPECT_EQ(bench({"--dtype", "float"}).options.dtype, DataType::Float32);
  EXPECT_EQ(d.options.dtype, DataType::Bfloat16);
  EXPECT_TRUE(bench({"--help"}).options.help);
}

TEST(BenchOptions, BadValuesNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  } cases[] = {
      {{"-b", "8Kfoo"}, "bad -b '8Kfoo'"},
      {{"--iters", "1e3"}, "bad --iters '1e3'"},
      {{"--reps", "5x"}, "bad --reps '5x'"},
      {{"--one-shot-max", "-1"}, "bad --one-shot-max '-1'"},
      {{"--ngpus", "-5"}, "bad --ngpus '-5'"},
      {{"--ngpus", "1000"}, "bad --ngpus '1000'"},
      {{"--timeout-s", "0"}, "bad --timeout-s '0'"},
      {{"-f", "1"}, "bad -f '1'"},
      {{"--dtype", "fp8"}, "bad --dtype 'fp8'"},
      {{"-b", "1M", "-e", "1K"}, "-b 1MiB is above -e 1KiB"},
      {{"--iters"}, "--iters needs a value"},
      {{"--x"}, "unknown option --x (symmem-bench --help lists the options)"},
  };
  for (const Case& c : cases) {
    const BenchArgsResult r = bench(c.args);
    EXPECT_FALSE(r.ok()) << c.args[0];
    EXPECT_NE(r.error.find(c.message), std::string::npos) << "got: " << r.error << "\nwanted: " << c.message;
  }
}

TEST(TuneOptionsStrict, MarginIsDecimalAndUnknownOptionPointsToHelp) {
  EXPECT_NE(parseTuneArgs({"--margin", "0x10"}).error.find("--margin"), std::string::npos);
  EXPECT_FALSE(parseTuneArgs({"--margin", "1e1"}).ok());
  EXPECT_EQ(parseTuneArgs({"--frobnicate"}).error,
            "unknown option --frobnicate (symmem-tune --help lists the options)");
}

TEST(TuneOutput, UnwritableOutIsNamedBeforeAnythingRuns) {
  const std::string cmd = std::string("env -u SYMMEM_TOPO_FILE '") + SYMMEM_TUNE_PATH +
                          "' --out /nonexistent/dir/table.txt 2>&1; echo \"rc=$?\"";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  EXPECT_EQ(out.rfind("symmem-tune: cannot write --out /nonexistent/dir/table.txt", 0), 0u) << out;
  EXPECT_NE(out.find("rc=2"), std::string::npos) << out;
  EXPECT_NE(tuneOutputProblem("/tmp").find("is a directory"), std::string::npos);
  EXPECT_EQ(tuneOutputProblem("/tmp/symmem-tune-output-check.txt"), "");
  struct stat st;
  EXPECT_NE(stat("/tmp/symmem-tune-output-check.txt", &st), 0) << "the check must not create the file";
}

}  // namespace
}  // namespace symmem

TEST(BenchOptions, TooFewGpusSaysWhatThisMachineHas) {
  EXPECT_EQ(symmem::tooFewGpusText(0).find("found 0"), std::string::npos);
  EXPECT_NE(symmem::tooFewGpusText(0).find("no NVIDIA GPU on this machine"), std::string::npos);
  EXPECT_NE(symmem::tooFewGpusText(1).find("needs at least 2 GPUs, and this machine has 1"), std::string::npos);
}

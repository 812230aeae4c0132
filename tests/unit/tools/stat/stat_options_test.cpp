// SPDX-License-Identifier: Apache-2.0
// symmem-stat's command line (tools/stat/options.h): the forms and how often each refreshes, strict
// values, and the typo of an option named with its nearest.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/stat/options.h"

namespace symmem::stat {
namespace {

StatArgsResult parse(std::vector<std::string> args, const std::string& dirSetting = "") {
  return parseStatArgs(args, dirSetting);
}

TEST(StatOptions, Defaults) {
  const StatArgsResult r = parse({});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.options.form, OutputForm::Table);
  EXPECT_EQ(r.options.count, 0) << "live until stopped";
  EXPECT_DOUBLE_EQ(r.options.intervalSeconds, 1.0);
  EXPECT_EQ(r.options.dir, "/dev/shm");
  EXPECT_TRUE(r.options.pids.empty());
  EXPECT_EQ(parse({}, "/run/stats").options.dir, "/run/stats") << "SYMMEM_STATS_DIR";
  EXPECT_EQ(parse({"--dir", "/x"}, "/run/stats").options.dir, "/x") << "--dir over SYMMEM_STATS_DIR";
}

TEST(StatOptions, HowOftenEachFormRefreshes) {
  EXPECT_EQ(parse({"--once"}).options.count, 1);
  EXPECT_EQ(parse({"--count", "3"}).options.count, 3);
  EXPECT_EQ(parse({"--json"}).options.count, 1) << "one document";
  EXPECT_EQ(parse({"--json"}).options.form, OutputForm::Json);
  EXPECT_EQ(parse({"--json", "--interval", "2"}).options.count, 0) << "JSON Lines until stopped";
  EXPECT_EQ(parse({"--json", "--count", "4"}).options.count, 4);
  EXPECT_EQ(parse({"--prometheus"}).options.count, 1);
  EXPECT_EQ(parse({"--prometheus"}).options.form, OutputForm::Prometheus);
  EXPECT_NE(parse({"--prometheus", "--interval", "2"}).error.find("one exposition"), std::string::npos);
  EXPECT_NE(parse({"--prometheus", "--count", "2"}).error.find("one exposition"), std::string::npos);
  EXPECT_FALSE(parse({"--once", "--count", "2"}).ok());
  EXPECT_FALSE(parse({"--once", "--interval", "2"}).ok());
  EXPECT_FALSE(parse({"--json", "--prometheus"}).ok());
}

TEST(StatOptions, Pids) {
  const StatArgsResult r = parse({"12", "--once", "345"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.options.pids, (std::vector<pid_t>{12, 345}));
  for (const char* bad : {"0", "12a", "2147483648", "1e3"}) EXPECT_FALSE(parse({bad}).ok()) << bad;
}

TEST(StatOptions, Seconds) {
  double s = 0;
  EXPECT_EQ(parseSecondsArg("--interval", "0.5", s), "");
  EXPECT_DOUBLE_EQ(s, 0.5);
  EXPECT_EQ(parseSecondsArg("--interval", "3600", s), "");
  EXPECT_DOUBLE_EQ(s, 3600);
  EXPECT_EQ(parseSecondsArg("--interval", "0.125", s), "");
  EXPECT_DOUBLE_EQ(s, 0.125);
  for (const char* bad : {"0", "0.05", "3600.5", ".5", "1.", "-1", "1e2", " 1", "1s", "0.1234", "", "99999"})
    EXPECT_NE(parseSecondsArg("--interval", bad, s), "") << bad;
  EXPECT_EQ(parseSecondsArg("--interval", "x", s), "bad --interval 'x': expected seconds from 0.1 to 3600 (2, 0.5)");
}

TEST(StatOptions, Estimate) {
  const StatArgsResult r = parse({"--estimate", "tune.csv"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.options.form, OutputForm::Estimate);
  EXPECT_EQ(r.options.estimateCsv, "tune.csv");
  EXPECT_TRUE(r.options.overInterval);
  EXPECT_DOUBLE_EQ(r.options.intervalSeconds, kEstimateSeconds) << "5 s between the two snapshots";
  EXPECT_EQ(r.options.dir, "/dev/shm");
  EXPECT_DOUBLE_EQ(parse({"--estimate", "t.csv", "--interval", "2"}).options.intervalSeconds, 2.0);
  EXPECT_FALSE(parse({"--estimate", "t.csv", "--once"}).options.overInterval) << "since each was opened";
  EXPECT_EQ(parse({"--estimate", "r.csv", "--case", "ar-latency"}).options.caseName, "ar-latency");
  EXPECT_NE(parse({"--estimate", "t.csv", "--json"}).error.find("--estimate prints an estimate of its own"),
            std::string::npos);
  EXPECT_NE(parse({"--estimate", "t.csv", "--check"}).error.find("--estimate"), std::string::npos);
  EXPECT_NE(parse({"--estimate", "t.csv", "--count", "2"}).error.find("--estimate"), std::string::npos);
  EXPECT_NE(parse({"--estimate", "t.csv", "--once", "--interval", "2"}).error.find("--once takes one snapshot"),
            std::string::npos);
  EXPECT_NE(parse({"--case", "x"}).error.find("--case picks the case"), std::string::npos);
  EXPECT_EQ(parse({"--estimate"}).error, "--estimate needs a value");
  EXPECT_FALSE(parse({"--estimate", ""}).ok());
  EXPECT_EQ(parse({"--estimat", "t.csv"}).error,
            "unknown option --estimat (did you mean --estimate? symmem-stat --help lists the options)");
  EXPECT_NE(statUsage().find("--estimate CSV"), std::string::npos);
}

TEST(StatOptions, Mistakes) {
  EXPECT_EQ(parse({"--intervl", "2"}).error,
            "unknown option --intervl (did you mean --interval? symmem-stat --help lists the options)");
  EXPECT_EQ(parse({"--jsn"}).error, "unknown option --jsn (did you mean --json? symmem-stat --help lists the options)");
  EXPECT_EQ(parse({"--frobnicate"}).error, "unknown option --frobnicate (symmem-stat --help lists the options)");
  EXPECT_EQ(parse({"--count"}).error, "--count needs a value");
  EXPECT_FALSE(parse({"--count", "0"}).ok());
  EXPECT_FALSE(parse({"--dir", ""}).ok());
  EXPECT_TRUE(parse({"--json", "--help"}).options.help);
  EXPECT_TRUE(parse({"--version"}).options.version);
  EXPECT_NE(statVersionText().find("statistics layout 3"), std::string::npos);
}

}  // namespace
}  // namespace symmem::stat

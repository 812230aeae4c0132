// SPDX-License-Identifier: Apache-2.0
// The CSVs symmem-stat --estimate reads its times from (tools/stat/latency_csv.h): symmem-tune's and
// nccl-tests-configs/run.sh's, each cell checked, and the times between measured sizes.
#include "tools/stat/latency_csv.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <string>

#include "tests/unit/temp_file.h"

namespace symmem {
namespace {

constexpr const char* kTune = "ranks,link,cc,bytes,path,median_us,min_us,max_us,chosen\n";
constexpr const char* kTests =
    "case,size_bytes,dtype,redop,stock_oop_us,plugin_oop_us,oop_ratio,stock_ip_us,plugin_ip_us,ip_ratio\n";

TEST(LatencyCsv, ReadsATuneCsvByWorld) {
  const std::string text = std::string(kTune) +
                           "2,pcie-switch,12.0,1024,nccl,10.000,9,11,0\n"
                           "2,pcie-switch,12.0,1024,oneshot-push,3.000,2.9,3.1,1\n"
                           "2,pcie-switch,12.0,1024,twoshot-pull,,,,0\n"
                           "4,pcie-switch,12.0,1024,nccl,14.5,14,15,1\r\n";
  const LatencyTableRead r = parseLatencyTable(text, "t.csv", "");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.table.source, LatencyTable::Source::TuneCsv);
  ASSERT_EQ(r.table.worlds.size(), 2u);
  EXPECT_EQ(r.table.rankList(), "2, 4");
  const LatencyWorld* two = r.table.world(2);
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->link, "pcie-switch");
  EXPECT_EQ(two->cc, "12.0");
  EXPECT_DOUBLE_EQ(two->medianUs.at("nccl").at(1024), 10.0);
  EXPECT_DOUBLE_EQ(two->medianUs.at("oneshot-push").at(1024), 3.0);
  EXPECT_EQ(two->medianUs.count("twoshot-pull"), 0u) << "an empty median is no number";
  EXPECT_EQ(two->chosen.at(1024), "oneshot-push");
  EXPECT_DOUBLE_EQ(r.table.world(4)->medianUs.at("nccl").at(1024), 14.5) << "a CRLF line";
  EXPECT_EQ(r.table.world(8), nullptr);
  EXPECT_EQ(r.table.describe(), "symmem-tune CSV t.csv");
}

TEST(LatencyCsv, ReadsOneCaseOfAnNcclTestsResultsFile) {
  const std::string text = std::string(kTests) +
                           "ar-latency,1024,float,sum,20.0,5.0,0.25,19.0,5.0,0.26\n"
                           "ar-latency,1024,half,sum,22.0,7.0,0.32,21.0,7.0,0.33\n"
                           "ar-latency,4096,float,sum,24.0,6.0,0.25,-,-,-\n"
                           "ar-check-all,1024,float,sum,900,800,0.9,900,800,0.9\n";
  const LatencyTableRead several = parseLatencyTable(text, "results.csv", "");
  EXPECT_FALSE(several.ok());
  EXPECT_NE(several.error.find("holds 2 cases (ar-check-all, ar-latency): name one with --case"), std::string::npos)
      << several.error;
  const LatencyTableRead r = parseLatencyTable(text, "results.csv", "ar-latency");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.table.source, LatencyTable::Source::NcclTestsCsv);
  EXPECT_EQ(r.table.describe(), "nccl-tests results results.csv (case ar-latency)");
  const LatencyWorld* w = r.table.world(8);
  ASSERT_NE(w, nullptr) << "no world size recorded: one world for every communicator";
  EXPECT_EQ(r.table.world(2), w);
  EXPECT_DOUBLE_EQ(w->medianUs.at("nccl").at(1024), 21.0) << "the mean over the case's types";
  EXPECT_DOUBLE_EQ(w->medianUs.at("plugin").at(1024), 6.0);
  EXPECT_DOUBLE_EQ(w->medianUs.at("plugin").at(4096), 6.0);
  const LatencyTableRead missing = parseLatencyTable(text, "results.csv", "ar-nope");
  EXPECT_NE(missing.error.find("has no case 'ar-nope' (it has ar-check-all, ar-latency)"), std::string::npos)
      << missing.error;
  const std::string one = std::string(kTests) + "ar-latency,8,float,sum,20.0,5.0,0.25,19.0,5.0,0.26\n";
  EXPECT_TRUE(parseLatencyTable(one, "r.csv", "").ok()) << "a file of one case needs no --case";
}

TEST(LatencyCsv, EveryBadCellIsNamedWithItsLine) {
  auto error = [](const std::string& body, const std::string& caseName = "") {
    return parseLatencyTable(body, "f.csv", caseName).error;
  };
  EXPECT_NE(error("").find("f.csv: empty"), std::string::npos);
  EXPECT_NE(error("size,time\n1,2\n").find("f.csv: not a CSV this reads"), std::string::npos);
  EXPECT_NE(error(kTune).find("without rows"), std::string::npos);
  EXPECT_NE(error(std::string(kTune) + "2,pcie,12.0,1024,nccl,10\n").find("f.csv line 2: expected 9 cells"),
            std::string::npos);
  EXPECT_NE(error(std::string(kTune) + "1,pcie,12.0,1024,nccl,10,9,11,0\n").find("bad ranks '1'"), std::string::npos);
  EXPECT_NE(error(std::string(kTune) + "2,pcie,12.0,1k,nccl,10,9,11,0\n").find("bad bytes '1k'"), std::string::npos);
  EXPECT_NE(error(std::string(kTune) + "2,pcie,12.0,1024,,10,9,11,0\n").find("empty path"), std::string::npos);
  EXPECT_NE(error(std::string(kTune) + "2,pcie,12.0,1024,nccl,-3,9,11,0\n").find("bad median_us '-3'"),
            std::string::npos);
  EXPECT_NE(error(std::string(kTune) + "2,pcie,12.0,1024,nccl,nan,9,11,0\n").find("bad median_us 'nan'"),
            std::string::npos);
  EXPECT_NE(error(std::string(kTune) + "2,pcie,12.0,1024,nccl,10,9,11,yes\n").find("bad chosen 'yes'"),
            std::string::npos);
  EXPECT_NE(error(std::string(kTune) + "2,pcie,12.0,1024,nccl,10,9,11,0\n", "ar-latency").find("--case picks"),
            std::string::npos);
  EXPECT_NE(error(std::string(kTests) + "a,1024,float,sum,x,5,1,1,1,1\n").find("f.csv line 2: bad stock_oop_us"),
            std::string::npos);
  EXPECT_NE(error(std::string(kTests) + "a,1024,float,sum,-,-,-,-,-,-\n").find("no size with both"), std::string::npos);
}

TEST(LatencyCsv, AFileThatIsNotARegularFileIsRefusedWithoutBlocking) {
  symmem::testing::TempDir dir("symmem-latency-csv");
  const std::string fifo = dir.path() + "/fifo.csv";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const LatencyTableRead r = readLatencyTable(fifo, "");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("is a FIFO (named pipe), not a regular file"), std::string::npos) << r.error;
  EXPECT_NE(readLatencyTable(dir.path() + "/absent.csv", "").error.find("cannot open"), std::string::npos);
  symmem::testing::TempFile good(std::string(kTune) + "2,nvlink,9.0,8,nccl,10,9,11,1\n");
  EXPECT_TRUE(readLatencyTable(good.path(), "").ok());
}

TEST(LatencyCsv, TimesBetweenMeasuredSizesOnALogLogLine) {
  LatencyWorld w;
  w.medianUs["nccl"] = {{1024, 10.0}, {4096, 40.0}};
  EXPECT_DOUBLE_EQ(*latencyAt(w, "nccl", 1024), 10.0);
  EXPECT_DOUBLE_EQ(*latencyAt(w, "nccl", 4096), 40.0);
  EXPECT_NEAR(*latencyAt(w, "nccl", 2048), 20.0, 1e-9) << "halfway on a log scale: the geometric mean";
  EXPECT_FALSE(latencyAt(w, "nccl", 512).has_value()) << "below the measured sizes";
  EXPECT_FALSE(latencyAt(w, "nccl", 8192).has_value()) << "above";
  EXPECT_FALSE(latencyAt(w, "oneshot-push", 1024).has_value()) << "a path without numbers";
  w.medianUs["zero"] = {{0, 0.0}, {10, 10.0}};
  EXPECT_NEAR(*latencyAt(w, "zero", 5), 5.0, 1e-9) << "a straight line through 0";
}

}  // namespace
}  // namespace symmem

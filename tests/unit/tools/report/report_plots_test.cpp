// SPDX-License-Identifier: Apache-2.0
// symmem-report-plots on a folder someone else made: names taken from the data never leave the folder,
// a link named like a PNG is not followed, impossible numbers (inf, 1e300) are skipped and named instead
// of ending in a traceback, 64 GPUs draw an image of a legible size, and the exit codes are the
// documented ones (0, 2, 3) whatever the input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/unit/temp_file.h"
#include "tests/unit/tool_run.h"

namespace symmem::report {
namespace {

namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A folder of its own per test, named for this file.
struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("symmem-plots-test") {}
};

std::string script() { return fs::path(SYMMEM_REPORT_PATH).parent_path().string() + "/symmem-report-plots"; }

// A python3 with matplotlib (the one on PATH, else Debian's), or "" when there is none.
std::string pythonWithMatplotlib() {
  for (const char* python : {"python3", "/usr/bin/python3"})
    if (testing::runTool(std::string(python) + " -c 'import matplotlib'").exitCode == 0) return python;
  return "";
}

testing::ToolRun plots(const std::string& folder, const std::string& python = "python3") {
  return testing::runTool(python + " '" + script() + "' '" + folder + "'");
}

const char* kLatencyHeader = "ranks,link,cc,bytes,path,median_us,min_us,max_us,chosen\n";

TEST(ReportPlots, ImpossibleNumbersAreSkippedAndNamedNotATraceback) {
  TempDir t;
  std::ofstream(t.path() + "/latency.csv") << kLatencyHeader << "inf,pcie-switch,12.0,8,nccl,5,5,5,1\n"
                                           << "1e300,pcie-switch,12.0,8,nccl,5,5,5,1\n"
                                           << "2,pcie-switch,12.0,inf,nccl,5,5,5,1\n"
                                           << "2,pcie-switch,12.0,8,nccl,inf,5,5,1\n";
  std::ofstream(t.path() + "/health.csv") << "record,gpu_a,gpu_b,field,value\npair,0,1,writeGBs,inf\n"
                                          << "pair,0,1,readGBs,-3\npair,0,64,writeGBs,20\npair,1,0,writeGBs,nan\n";
  // Everything refused: nothing to plot, said, with or without matplotlib.
  const testing::ToolRun r = plots(t.path());
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_FALSE(has(r.out, "Traceback")) << r.out;
  EXPECT_TRUE(has(r.out, "nothing to plot")) << r.out;
  EXPECT_TRUE(has(r.out, "latency.csv: 4 rows skipped (line 2: ranks 'inf' is not a world size (1-1024))")) << r.out;
  EXPECT_TRUE(has(r.out, "health.csv: 4 rows skipped (line 2: writeGBs 'inf' is not a bandwidth)")) << r.out;
}

TEST(ReportPlots, BadCommandLinesAndFoldersExit2) {
  EXPECT_EQ(testing::runTool("python3 '" + script() + "'").exitCode, 2);
  EXPECT_EQ(plots("").exitCode, 2);
  EXPECT_EQ(plots("/no/such/folder").exitCode, 2);
  TempDir t;
  std::ofstream(t.path() + "/file") << "x";
  EXPECT_EQ(plots(t.path() + "/file").exitCode, 2);
  // A CSV that is no CSV at all is said, not a crash.
  std::ofstream(t.path() + "/latency.csv") << std::string("ranks\0,\"x\n", 10);
  const testing::ToolRun r = plots(t.path());
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_FALSE(has(r.out, "Traceback")) << r.out;
}

TEST(ReportPlots, NamesFromTheDataAndLinksNeverLeaveTheFolder) {
  const std::string python = pythonWithMatplotlib();
  if (python.empty()) GTEST_SKIP() << "no python3 here has matplotlib: the drawing is not checked";
  TempDir t;
  const std::string dir = t.path() + "/a/b";
  fs::create_directories(dir);
  std::ofstream(dir + "/latency.csv") << kLatencyHeader << "2,d/../../outside-a,12.0,8,nccl,12,11,13,1\n"
                                      << "2,pcie-root,x/../../../y,8,nccl,12,11,13,1\n"
                                      << "2,$x^$,12.0,16,nccl,12,11,13,1\n";
  std::ofstream(dir + "/health.csv") << "record,gpu_a,gpu_b,field,value\npair,0,1,writeGBs,25\n";
  fs::create_symlink(t.path() + "/victim.png", dir + "/health-bandwidth.png");  // dangling
  const testing::ToolRun r = plots(dir, python);
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r.out, "health-bandwidth.png exists, not replaced")) << r.out;
  EXPECT_FALSE(fs::exists(t.path() + "/victim.png")) << "a link named like a PNG was followed";
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(t.path()))
    if (e.path().extension() == ".png" && !e.is_symlink())
      EXPECT_EQ(e.path().parent_path(), fs::path(dir)) << e.path() << " is outside the folder";
  EXPECT_TRUE(fs::exists(dir + "/latency-2ranks-d_.._.._outside-a-cc12.0.png")) << r.out;
}

// The width of a PNG, from its IHDR chunk.
uint32_t pngWidth(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char head[24] = {};
  in.read(reinterpret_cast<char*>(head), sizeof head);
  return (uint32_t{head[16]} << 24) | (uint32_t{head[17]} << 16) | (uint32_t{head[18]} << 8) | head[19];
}

TEST(ReportPlots, SixtyFourGpusDrawALegibleImage) {
  const std::string python = pythonWithMatplotlib();
  if (python.empty()) GTEST_SKIP() << "no python3 here has matplotlib: the drawing is not checked";
  TempDir t;
  {
    std::ofstream csv(t.path() + "/health.csv");
    csv << "record,gpu_a,gpu_b,field,value\n";
    for (int a = 0; a < 64; ++a) {
      for (int b = 0; b < 64; ++b)
        if (a != b)
          csv << "pair," << a << "," << b << ",writeGBs," << 20 + a % 5 << "\npair," << a << "," << b << ",readGBs,"
              << 18 + b % 3 << "\n";
      csv << "all," << a << ",,writeGBsPerGpu,30\n";
    }
  }
  const testing::ToolRun r = plots(t.path(), python);
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r.out, "wrote health-bandwidth.png")) << r.out;
  const uint32_t width = pngWidth(t.path() + "/health-bandwidth.png");
  EXPECT_GT(width, 500u);
  EXPECT_LT(width, 2000u) << "a figure too wide to read (or to draw)";
}

}  // namespace
}  // namespace symmem::report

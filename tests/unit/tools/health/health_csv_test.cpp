// SPDX-License-Identifier: Apache-2.0
// symmem-health's CSV: every value written comes back the same (NaN as empty, doubles exactly,
// text with commas and quotes), every recorded fixture reads and round-trips, and a bad file is
// refused with the line it went wrong on.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tools/health/csv.h"

namespace symmem {
namespace {

// Equal, with NaN equal to NaN.
bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void expectSame(const HealthMeasurements& x, const HealthMeasurements& y) {
  EXPECT_EQ(x.link, y.link);
  EXPECT_EQ(x.loopback, y.loopback);
  EXPECT_EQ(x.topologySource, y.topologySource);
  ASSERT_EQ(x.gpus.size(), y.gpus.size());
  for (size_t i = 0; i < x.gpus.size(); ++i) {
    const HealthGpu& a = x.gpus[i];
    const HealthGpu& b = y.gpus[i];
    EXPECT_EQ(a.index, b.index);
    EXPECT_EQ(a.busId, b.busId);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.cc, b.cc);
    EXPECT_TRUE(same(a.hostCopyGBs, b.hostCopyGBs)) << i << ": " << a.hostCopyGBs << " " << b.hostCopyGBs;
  }
  ASSERT_EQ(x.pairs.size(), y.pairs.size());
  for (size_t i = 0; i < x.pairs.size(); ++i) {
    const HealthPair& a = x.pairs[i];
    const HealthPair& b = y.pairs[i];
    EXPECT_EQ(a.a, b.a);
    EXPECT_EQ(a.b, b.b);
    EXPECT_EQ(a.path, b.path);
    EXPECT_EQ(a.nvlinks, b.nvlinks);
    EXPECT_EQ(a.driverP2p, b.driverP2p);
    EXPECT_EQ(a.nvmlRead, b.nvmlRead);
    EXPECT_EQ(a.nvmlWrite, b.nvmlWrite);
    EXPECT_EQ(a.writeCheck, b.writeCheck);
    EXPECT_EQ(a.readCheck, b.readCheck);
    EXPECT_EQ(a.detail, b.detail);
    EXPECT_TRUE(same(a.writeLatencyUs, b.writeLatencyUs)) << i;
    EXPECT_TRUE(same(a.readLatencyUs, b.readLatencyUs)) << i;
    EXPECT_TRUE(same(a.writeGBs, b.writeGBs)) << i << ": " << a.writeGBs << " " << b.writeGBs;
    EXPECT_TRUE(same(a.readGBs, b.readGBs)) << i;
  }
  const HealthAllAtOnce& a = x.allAtOnce;
  const HealthAllAtOnce& b = y.allAtOnce;
  EXPECT_EQ(a.check, b.check);
  EXPECT_EQ(a.detail, b.detail);
  ASSERT_EQ(a.writeGBsPerGpu.size(), b.writeGBsPerGpu.size());
  ASSERT_EQ(a.readGBsPerGpu.size(), b.readGBsPerGpu.size());
  for (size_t i = 0; i < a.writeGBsPerGpu.size(); ++i) EXPECT_TRUE(same(a.writeGBsPerGpu[i], b.writeGBsPerGpu[i])) << i;
  for (size_t i = 0; i < a.readGBsPerGpu.size(); ++i) EXPECT_TRUE(same(a.readGBsPerGpu[i], b.readGBsPerGpu[i])) << i;
}

HealthMeasurements everyKindOfValue() {
  HealthMeasurements m;
  m.link = LinkClass::PcieSameRoot;
  m.loopback = false;
  m.topologySource = "file rtx, \"odd\" name.topo.txt";
  m.gpus.resize(3);
  m.gpus[0] = {3, "0000:41:00.0", "NVIDIA RTX 5880 Ada Generation", {8, 9}, 0.1 + 0.2};
  m.gpus[1] = {5, "", "", {}, NAN};
  m.gpus[2] = {7, "0000:e1:00.0", " leading and trailing spaces ", {12, 1}, 1e-300};
  const PathKind paths[] = {PathKind::NvLink, PathKind::Pix, PathKind::Pxb,    PathKind::Phb,
                            PathKind::Node,   PathKind::Sys, PathKind::Unknown};
  const PatternResult results[] = {PatternResult::NotRun, PatternResult::Ok, PatternResult::Mismatch,
                                   PatternResult::Timeout, PatternResult::Fault};
  const Support supports[] = {Support::Unknown, Support::Yes, Support::No};
  int k = 0;
  for (int a : {0, 1, 2}) {  // positions of GPUs 3, 5 and 7
    for (int b : {0, 1, 2}) {
      if (a == b) continue;
      HealthPair p;
      p.a = a;
      p.b = b;
      p.path = paths[k % 7];
      p.nvlinks = p.path == PathKind::NvLink ? 18 : 0;
      p.driverP2p = supports[k % 3];
      p.nvmlRead = supports[(k + 1) % 3];
      p.nvmlWrite = supports[(k + 2) % 3];
      p.writeCheck = results[k % 5];
      p.readCheck = results[(k + 2) % 5];
      p.detail = k % 2 ? "word 17 differs, read \"0x0\", wrote 0x5a\nsecond line" : "";
      p.writeLatencyUs = k == 0 ? NAN : 0.1 * k + 1.0 / 3.0;
      p.readLatencyUs = 123456.0123456789;
      p.writeGBs = k == 1 ? NAN : 376.65 + k;
      p.readGBs = 1e-300;
      m.pairs.push_back(p);
      ++k;
    }
  }
  m.allAtOnce.check = PatternResult::Mismatch;
  m.allAtOnce.detail = "GPU1, GPU2";
  m.allAtOnce.writeGBsPerGpu = {1.35, NAN, 2.0 / 3.0};
  m.allAtOnce.readGBsPerGpu = {25.65};
  return m;
}

TEST(HealthCsv, RoundTripKeepsEveryValue) {
  HealthMeasurements m = everyKindOfValue();
  const std::string csv = healthCsv(m);
  EXPECT_EQ(csv.substr(0, kHealthCsvHeader.size() + 1), std::string(kHealthCsvHeader) + "\n");
  EXPECT_NE(csv.find("pair,3,5,path,NV\n"), std::string::npos) << csv;     // GPUs by index, not position
  EXPECT_NE(csv.find("gpu,5,,hostCopyGBs,\n"), std::string::npos) << csv;  // NaN as empty
  EXPECT_NE(csv.find("gpu,3,,hostCopyGBs,0.30000000000000004\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("node,,,topologySource,\"file rtx, \"\"odd\"\" name.topo.txt\"\n"), std::string::npos) << csv;

  HealthMeasurements back;
  std::string error;
  ASSERT_TRUE(parseHealthCsv(csv, &back, &error)) << error << "\n" << csv;
  // Text is one line in the file: the line break comes back as a space, everything else as written.
  for (HealthPair& p : m.pairs) {
    if (!p.detail.empty()) p.detail = "word 17 differs, read \"0x0\", wrote 0x5a second line";
  }
  expectSame(m, back);
  EXPECT_EQ(healthCsv(back), csv);
}

TEST(HealthCsv, EveryFixtureParsesAndRoundTrips) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(SYMMEM_TEST_DATA_DIR) + "/tools/health")) {
    if (entry.path().extension() != ".csv") continue;
    ++files;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    HealthMeasurements m;
    std::string error;
    ASSERT_TRUE(parseHealthCsv(text.str(), &m, &error)) << entry.path() << ": " << error;
    EXPECT_EQ(text.str().rfind("# ", 0), 0u) << entry.path() << " must say where its numbers come from";
    EXPECT_FALSE(m.gpus.empty()) << entry.path();
    HealthMeasurements back;
    ASSERT_TRUE(parseHealthCsv(healthCsv(m), &back, &error)) << entry.path() << ": " << error;
    expectSame(m, back);
  }
  EXPECT_GE(files, 8);
}

TEST(HealthCsv, ShortFilesFillDefaults) {
  HealthMeasurements m;
  std::string error;
  ASSERT_TRUE(
      parseHealthCsv("# two GPUs, one value\r\n\r\nrecord,gpu_a,gpu_b,field,value\r\npair,0,1,writeGBs,53\r\n"
                     "gpu,0,,name,A\r\ngpu,1,,name,B\r\nall,1,,readGBsPerGpu,7\r\n",
                     &m, &error))
      << error;
  ASSERT_EQ(m.gpus.size(), 2u);
  EXPECT_EQ(m.gpus[1].index, 1);
  EXPECT_TRUE(std::isnan(m.gpus[0].hostCopyGBs));
  ASSERT_EQ(m.pairs.size(), 1u);
  EXPECT_EQ(m.pairs[0].writeGBs, 53);
  EXPECT_EQ(m.pairs[0].path, PathKind::Unknown);
  EXPECT_EQ(m.pairs[0].writeCheck, PatternResult::NotRun);
  ASSERT_EQ(m.allAtOnce.readGBsPerGpu.size(), 2u);
  EXPECT_TRUE(std::isnan(m.allAtOnce.readGBsPerGpu[0]));
  EXPECT_EQ(m.allAtOnce.readGBsPerGpu[1], 7);
  EXPECT_TRUE(m.allAtOnce.writeGBsPerGpu.empty());
}

TEST(HealthCsv, PairsNameGpusByIndexAndHoldPositions) {
  HealthMeasurements m;
  std::string error;
  ASSERT_TRUE(parseHealthCsv(std::string(kHealthCsvHeader) + "\ngpu,5,,name,B\ngpu,2,,name,A\npair,2,5,writeGBs,1\n"
                                                             "pair,5,2,writeGBs,2\n",
                             &m, &error))
      << error;
  ASSERT_EQ(m.gpus.size(), 2u);
  EXPECT_EQ(m.gpus[0].index, 5);  // the order of the file
  ASSERT_EQ(m.pairs.size(), 2u);
  EXPECT_EQ(m.pairs[0].a, 1);  // GPU2 is at position 1
  EXPECT_EQ(m.pairs[0].b, 0);
  EXPECT_EQ(m.pairs[1].a, 0);
  const std::string csv = healthCsv(m);
  EXPECT_NE(csv.find("pair,2,5,writeGBs,1\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("pair,5,2,writeGBs,2\n"), std::string::npos) << csv;
}

std::string errorOf(const std::string& text) {
  HealthMeasurements m;
  std::string error;
  EXPECT_FALSE(parseHealthCsv(text, &m, &error)) << text;
  return error;
}

const std::string kHeader = std::string(kHealthCsvHeader) + "\n";

TEST(HealthCsv, BadHeaderIsRefused) {
  EXPECT_EQ(errorOf("record,gpu_a,gpu_b,field\ngpu,0,,name,A\n"),
            "line 1: expected the header record,gpu_a,gpu_b,field,value");
  EXPECT_EQ(errorOf("# a comment\n\nrecord,gpu,gpu_b,field,value\n"),
            "line 3: expected the header record,gpu_a,gpu_b,field,value");
  EXPECT_EQ(errorOf("# only a comment\n"), "line 2: expected the header record,gpu_a,gpu_b,field,value");
  EXPECT_EQ(errorOf(""), "line 1: expected the header record,gpu_a,gpu_b,field,value");
}

TEST(HealthCsv, UnknownFieldIsRefused) {
  EXPECT_EQ(errorOf(kHeader + "gpu,0,,name,A\npair,0,0,writeGB,53\n"),
            "line 3: unknown field 'writeGB' for a pair record");
  EXPECT_EQ(errorOf(kHeader + "gpu,0,,writeGBs,53\n"), "line 2: unknown field 'writeGBs' for a gpu record");
  EXPECT_EQ(errorOf(kHeader + "node,,,index,0\n"), "line 2: unknown field 'index' for a node record");
  EXPECT_EQ(errorOf(kHeader + "all,0,,writeGBs,1\n"), "line 2: unknown field 'writeGBs' for an all record");
  EXPECT_EQ(errorOf(kHeader + "host,0,,name,A\n"), "line 2: unknown record 'host' (node, gpu, pair or all)");
}

TEST(HealthCsv, BadNumberIsRefused) {
  const std::string gpu = kHeader + "gpu,0,,name,A\n";
  EXPECT_EQ(errorOf(gpu + "pair,0,0,writeGBs,5x\n"), "line 3: writeGBs: '5x' is not a number");
  for (const char* bad : {"nan", "inf", " 5", "5 ", "+5", "0x10", "1e999", "--1"}) {
    EXPECT_EQ(errorOf(gpu + "pair,0,0,readLatencyUs," + std::string(bad) + "\n"),
              "line 3: readLatencyUs: '" + std::string(bad) + "' is not a number");
  }
  EXPECT_EQ(errorOf(gpu + "gpu,0,,hostCopyGBs,fast\n"), "line 3: hostCopyGBs: 'fast' is not a number");
  EXPECT_EQ(errorOf(gpu + "all,0,,readGBsPerGpu,1,5\n"),
            "line 3: expected 5 columns (record,gpu_a,gpu_b,field,value), found 6");
  EXPECT_EQ(errorOf(gpu + "gpu,x,,name,A\n"), "line 3: gpu_a 'x' is not a GPU index (0-63)");
  EXPECT_EQ(errorOf(gpu + "pair,0,-1,path,PIX\n"), "line 3: gpu_b '-1' is not a GPU index (0-63)");
  EXPECT_EQ(errorOf(gpu + "pair,0,0,nvlinks,many\n"), "line 3: nvlinks: 'many' is not a count of NVLinks");
}

TEST(HealthCsv, OtherMistakesNameTheirLine) {
  const std::string gpu = kHeader + "gpu,0,,name,A\n";
  EXPECT_EQ(errorOf(gpu + "pair,0,0,path,NV18\n"),
            "line 3: path: 'NV18' is not NV, PIX, PXB, PHB, NODE, SYS or unknown");
  EXPECT_EQ(errorOf(gpu + "pair,0,0,driverP2p,Yes\n"), "line 3: driverP2p: 'Yes' is not yes, no or unknown");
  EXPECT_EQ(errorOf(gpu + "pair,0,0,writeCheck,passed\n"),
            "line 3: writeCheck: 'passed' is not not-run, ok, mismatch, timeout or fault");
  EXPECT_EQ(errorOf(gpu + "node,,,link,pcie\n"),
            "line 3: link: 'pcie' is not a link class (nvlink, pcie-switch, pcie-root, pcie-sys, unknown)");
  EXPECT_EQ(errorOf(gpu + "node,,,loopback,1\n"), "line 3: loopback: '1' is not true or false");
  EXPECT_EQ(errorOf(gpu + "gpu,0,,cc,90\n"),
            "line 3: cc: '90': expected major.minor (12.0), a major alone (12) or sm_120");
  EXPECT_EQ(errorOf(gpu + "gpu,0,,name,B\n"), "line 3: gpu 0 name given twice");
  EXPECT_EQ(errorOf(gpu + "node,0,,link,nvlink\n"), "line 3: a node record leaves gpu_a and gpu_b empty");
  EXPECT_EQ(errorOf(gpu + "all,0,,check,ok\n"), "line 3: an all record's check leaves gpu_a empty");
  EXPECT_EQ(errorOf(gpu + "pair,0,1,detail,\"unterminated\n"), "line 3: a quoted value has no closing quote");
  EXPECT_EQ(errorOf(gpu + "pair,0,1,detail,\"a\"b\n"), "line 3: text after a closing quote");
  EXPECT_EQ(errorOf(gpu + "pair,0,1,detail,a\"b\n"), "line 3: a quote inside an unquoted value");
  // Checked once every row is in: what the pairs and per-GPU values refer to exists.
  EXPECT_EQ(errorOf(gpu + "pair,0,7,writeGBs,53\npair,0,7,readGBs,50\n"),
            "line 3: pair 0->7 names GPU 7, which has no gpu record");
  EXPECT_EQ(errorOf(gpu + "\nall,1,,writeGBsPerGpu,3\n"),
            "line 4: writeGBsPerGpu for position 1, but there are 1 GPUs");
}

}  // namespace
}  // namespace symmem

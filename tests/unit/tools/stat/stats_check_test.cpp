// SPDX-License-Identifier: Apache-2.0
// symmem-stat --check (tools/common/stats_check.h): the verdict on the captured all-reduces of each
// communicator, from snapshots, and the built tool against statistics files written as the plugin
// writes them.
#include "tools/common/stats_check.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/call_stats_writer.h"
#include "tests/unit/stats_process.h"
#include "tests/unit/temp_file.h"
#include "tests/unit/tool_run.h"

namespace symmem {
namespace {

using stats::Route;

stats::SlotSnapshot comm(uint64_t id, int nRanks = 2, const std::string& path = "symmetric (test)") {
  stats::SlotSnapshot s;
  s.state = stats::SlotState::Live;
  s.comm = id;
  s.nRanks = nRanks;
  s.symmetric = path.rfind("symmetric", 0) == 0;
  s.path = path;
  return s;
}

void count(stats::SlotSnapshot& s, Route r, bool captured, uint64_t n, int bucket = 12) {
  s.calls[static_cast<int>(r)][bucket][captured ? stats::kCaptured : stats::kEager] += n;
}

stats::ProcessSnapshot process(std::vector<stats::SlotSnapshot> comms) {
  stats::ProcessSnapshot p;
  p.pid = 4242;
  p.program = "python3";
  p.comms = std::move(comms);
  return p;
}

std::string joined(const StatsCheck& c) {
  std::string out;
  for (const std::string& l : c.lines) out += l + "\n";
  return out;
}

TEST(StatsCheck, CapturedOnTheSymmetricPathOrLeftToNcclByTheTablePass) {
  stats::SlotSnapshot a = comm(0xa1);
  count(a, Route::OneShotPush, true, 120);
  count(a, Route::TwoShotPull, true, 8);
  count(a, Route::NcclTable, true, 4, 24);     // above the table's symmetric sizes
  count(a, Route::NcclBeforeSetup, false, 1);  // the warm-up: eager, not judged
  const StatsCheck c = checkCapturedPaths({process({a})});
  EXPECT_EQ(c.verdict, CheckVerdict::Pass) << joined(c);
  EXPECT_EQ(checkExitCode(c.verdict), 0);
  EXPECT_NE(joined(c).find("pid 4242 (python3) comm 0xa1 rank 0/2: 132 captured all-reduces, 128 symmetric, 4 on "
                           "NCCL by the table"),
            std::string::npos)
      << joined(c);
}

TEST(StatsCheck, CapturedBeforeSetupFailsAndSaysWhatToDo) {
  stats::SlotSnapshot a = comm(0xa1);
  count(a, Route::NcclBeforeSetup, true, 40);
  count(a, Route::OneShotPush, false, 3);
  const StatsCheck c = checkCapturedPaths({process({a})});
  EXPECT_EQ(c.verdict, CheckVerdict::Fail) << joined(c);
  EXPECT_EQ(checkExitCode(c.verdict), 3);
  EXPECT_NE(joined(c).find("FAIL pid 4242"), std::string::npos) << joined(c);
  EXPECT_NE(joined(c).find("40 captured before the communicator was set up"), std::string::npos) << joined(c);
  EXPECT_NE(joined(c).find("capture after one eager all-reduce"), std::string::npos) << joined(c);
}

TEST(StatsCheck, APathOffFailsWithItsReason) {
  stats::SlotSnapshot a = comm(0xb2, 4, "NCCL: a peer has no P2P access");
  count(a, Route::NcclPathOff, true, 9);
  stats::SlotSnapshot ok = comm(0xa1);
  count(ok, Route::OneShotPush, true, 5);
  const StatsCheck c = checkCapturedPaths({process({ok, a})});
  EXPECT_EQ(c.verdict, CheckVerdict::Fail) << joined(c);
  EXPECT_NE(joined(c).find("9 on NCCL because the symmetric path is off: NCCL: a peer has no P2P access"),
            std::string::npos)
      << joined(c);
  EXPECT_NE(joined(c).find("FAIL: 1 of 2 communicators"), std::string::npos) << joined(c);
}

TEST(StatsCheck, NothingCapturedSingleRanksAndEndedCommunicatorsAreNotJudged) {
  stats::SlotSnapshot eager = comm(0xa1);
  count(eager, Route::OneShotPush, false, 50);
  stats::SlotSnapshot single = comm(0xc3, 1, "NCCL: single rank");
  count(single, Route::NcclPathOff, true, 7);
  stats::SlotSnapshot ended = comm(0xd4, 2, "NCCL: a peer has no P2P access");
  ended.state = stats::SlotState::Ended;
  count(ended, Route::NcclPathOff, true, 7);
  const StatsCheck c = checkCapturedPaths({process({eager, single, ended})});
  EXPECT_EQ(c.verdict, CheckVerdict::Nothing) << joined(c);
  EXPECT_EQ(checkExitCode(c.verdict), 4);
  EXPECT_EQ(checkCapturedPaths({}).verdict, CheckVerdict::Nothing);
}

// The built tool against files the plugin's way of writing them produced.
symmem::testing::ToolRun check(const std::string& dir) {
  return symmem::testing::runTool(std::string("env -u SYMMEM_STATS_DIR '") + SYMMEM_STAT_PATH + "' --check --dir '" +
                                  dir + "'");
}

TEST(StatsCheckTool, ExitsByTheVerdict) {
  {
    symmem::testing::TempDir dir("symmem-stat-check");
    symmem::testing::StatsWritingProcess p(dir.path());  // 5 captured one-shot push calls
    ASSERT_TRUE(p.ready());
    const auto r = check(dir.path());
    EXPECT_EQ(r.exitCode, 0) << r.out;
    EXPECT_NE(r.out.find("ok   pid " + std::to_string(p.pid()) + " (stat-child) comm 0xa1 rank 0/2: 5 captured"),
              std::string::npos)
        << r.out;
  }
  {
    symmem::testing::TempDir dir("symmem-stat-check");
    symmem::testing::StatsWritingProcess p(dir.path(), [](stats::WrittenSegment& seg) {
      symmem::testing::SlotIdentity a;
      a.comm = 0xe5;
      symmem::testing::claimSlot(seg.slot(0), a);
      symmem::testing::countCalls(seg.slot(0), Route::NcclBeforeSetup, 4096, true, 6);
    });
    ASSERT_TRUE(p.ready());
    const auto r = check(dir.path());
    EXPECT_EQ(r.exitCode, 3) << r.out;
    EXPECT_NE(r.out.find("6 captured before the communicator was set up"), std::string::npos) << r.out;
  }
  {
    symmem::testing::TempDir dir("symmem-stat-check");
    const auto r = check(dir.path());
    EXPECT_EQ(r.exitCode, 4) << r.out;
    EXPECT_NE(r.out.find("nothing to check yet"), std::string::npos) << r.out;
  }
  const auto bad = symmem::testing::runTool(std::string(SYMMEM_STAT_PATH) + " --check --json");
  EXPECT_EQ(bad.exitCode, 2) << bad.out;
}

}  // namespace
}  // namespace symmem

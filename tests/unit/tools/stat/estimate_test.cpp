// SPDX-License-Identifier: Apache-2.0
// symmem-stat --estimate (tools/stat/estimate.h): the time saved each second, from two snapshots of a
// communicator's counts and a CSV of measured times, with the figures worked out by hand; and the built
// tool against statistics files written as the plugin writes them, one of them still counting.
#include "tools/stat/estimate.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/call_stats_writer.h"
#include "tests/unit/stats_process.h"
#include "tests/unit/temp_file.h"
#include "tests/unit/tool_run.h"

namespace symmem {
namespace {

using stats::Route;

constexpr uint64_t kSecond = 1000000000ull;
constexpr uint64_t kT0 = 1000 * kSecond;  // the first snapshot's time

// Stock NCCL 10/12/20 us and one-shot push 3/4/8 us at 1, 4 and 16 KiB; NCCL ring/LL chosen at 1 MiB.
const char* kTuneCsv =
    "ranks,link,cc,bytes,path,median_us,min_us,max_us,chosen\n"
    "2,pcie-switch,12.0,1024,nccl,10,10,10,0\n"
    "2,pcie-switch,12.0,1024,oneshot-push,3,3,3,1\n"
    "2,pcie-switch,12.0,4096,nccl,12,12,12,0\n"
    "2,pcie-switch,12.0,4096,oneshot-push,4,4,4,1\n"
    "2,pcie-switch,12.0,16384,nccl,20,20,20,0\n"
    "2,pcie-switch,12.0,16384,oneshot-push,8,8,8,1\n"
    "2,pcie-switch,12.0,1048576,nccl,100,100,100,0\n"
    "2,pcie-switch,12.0,1048576,nccl-ring-ll,90,90,90,1\n";

LatencyTable tuneTable(const std::string& text = kTuneCsv) {
  const LatencyTableRead r = parseLatencyTable(text, "tune.csv", "");
  EXPECT_TRUE(r.ok()) << r.error;
  return r.table;
}

stats::SlotSnapshot comm(int nRanks = 2, uint32_t sampling = 1) {
  stats::SlotSnapshot s;
  s.state = stats::SlotState::Live;
  s.comm = 0xa1;
  s.nRanks = nRanks;
  s.symmetric = true;
  s.gpuSampling = sampling;
  s.openedNs = kT0 - 10 * kSecond;
  s.path = "symmetric (test)";
  return s;
}

stats::ProcessSnapshot process(const stats::SlotSnapshot& s, uint64_t takenNs) {
  stats::ProcessSnapshot p;
  p.pid = 4242;
  p.startTicks = 7;
  p.program = "python3";
  p.takenNs = takenNs;
  p.comms = {s};
  return p;
}

void timed(stats::SlotSnapshot& s, int kind, int bucket, uint64_t count) { s.gpu.timed[kind][bucket].count = count; }

void calls(stats::SlotSnapshot& s, Route r, int bucket, bool captured, uint64_t n) {
  s.calls[static_cast<int>(r)][bucket][captured ? stats::kCaptured : stats::kEager] = n;
}

std::string joined(const StatsEstimate& e) {
  std::string out;
  for (const std::string& l : e.lines) out += l + "\n";
  return out;
}

bool has(const StatsEstimate& e, const std::string& part) { return joined(e).find(part) != std::string::npos; }

TEST(StatsEstimate, KernelExecutionsOverTheIntervalTimesStockMinusKernel) {
  stats::SlotSnapshot before = comm(), now = comm();
  timed(before, 0, 12, 100);                    // one-shot push, 4 KiB
  timed(now, 0, 12, 1100);                      // 1000 more in 2 s: 500 a second
  calls(now, Route::OneShotPush, 12, true, 3);  // captured once each: the GPU's count is what ran
  const StatsEstimate e = estimateSavings({process(now, kT0 + 2 * kSecond)}, {process(before, kT0)}, tuneTable());
  EXPECT_EQ(e.communicators, 1);
  EXPECT_DOUBLE_EQ(e.savedUsPerSecond, 500 * (12 - 4));
  EXPECT_TRUE(has(e,
                  "pid 4242 (python3) comm 0xa1 rank 0/2, over 2.0 s: saves 4.000 ms of all-reduce time a second "
                  "(500 symmetric all-reduces a second: stock NCCL 6.000 ms, the kernels 2.000 ms, 3.00x)"))
      << joined(e);
  EXPECT_TRUE(has(e, "4KiB        500.0/s  one-shot push      12.00 -> 4.00 us a call")) << joined(e);
  EXPECT_TRUE(has(e, "times from symmem-tune CSV tune.csv (pcie-switch, cc 12.0; worlds of 2 ranks)")) << joined(e);
  EXPECT_TRUE(has(e, "estimate: 4.000 ms of all-reduce time saved a second")) << joined(e);
  EXPECT_EQ(estimateExitCode(e), 0);
}

TEST(StatsEstimate, SampledExecutionsAreSharedAmongBucketsAsTheTimedOnesAre) {
  // One call in 64 timed: the algorithm's run count (every execution) is what ran, the timed ones
  // say at which sizes.
  stats::SlotSnapshot before = comm(2, 64), now = comm(2, 64);
  now.gpu.runs[0] = 6400;  // 3200 a second over 2 s
  timed(now, 0, 10, 50);   // 1 KiB: half of them
  timed(now, 0, 14, 50);   // 16 KiB: the other half
  const StatsEstimate e = estimateSavings({process(now, kT0 + 2 * kSecond)}, {process(before, kT0)}, tuneTable());
  EXPECT_DOUBLE_EQ(e.savedUsPerSecond, 1600 * (10 - 3) + 1600 * (20 - 8)) << joined(e);
  EXPECT_TRUE(has(e, "1KiB       1600.0/s")) << joined(e);
  EXPECT_TRUE(has(e, "16KiB      1600.0/s")) << joined(e);
}

TEST(StatsEstimate, SizesBetweenTheMeasuredOnesAreInterpolatedAndOthersSaidNotEstimated) {
  stats::SlotSnapshot before = comm(), now = comm();
  timed(now, 0, 11, 200);  // 2 KiB: between 1 and 4 KiB
  timed(now, 0, 30, 20);   // 1 GiB: above what the file measured
  const StatsEstimate e = estimateSavings({process(now, kT0 + 2 * kSecond)}, {process(before, kT0)}, tuneTable());
  const double stock = std::sqrt(10.0 * 12.0), kernel = std::sqrt(3.0 * 4.0);
  EXPECT_NEAR(e.savedUsPerSecond, 100 * (stock - kernel), 1e-9) << joined(e);
  EXPECT_TRUE(has(e, "10.0/s at sizes or on paths tune.csv has no time for (1GiB one-shot push): not estimated"))
      << joined(e);
}

TEST(StatsEstimate, NcclWithTheTablesConfigurationAndCallsTheKernelsCouldTake) {
  stats::SlotSnapshot before = comm(), now = comm();
  calls(now, Route::NcclTuned, 20, false, 100);       // 1 MiB eager: 50 a second, ring/LL 90 us against 100
  calls(now, Route::NcclBeforeSetup, 12, false, 20);  // 4 KiB eager before set-up: 10 a second
  calls(now, Route::NcclBeforeSetup, 12, true, 6);    // captured: replays seen by no counter
  const StatsEstimate e = estimateSavings({process(now, kT0 + 2 * kSecond)}, {process(before, kT0)}, tuneTable());
  EXPECT_DOUBLE_EQ(e.savedUsPerSecond, 50 * (100 - 90)) << joined(e);
  EXPECT_TRUE(has(e, "50.0/s on NCCL with the table's configuration: 0.500 ms of that")) << joined(e);
  EXPECT_TRUE(has(e, "10.0/s on NCCL that the kernels could take would save 0.080 ms more a second")) << joined(e);
  EXPECT_TRUE(has(e, "6 all-reduces captured on NCCL: their graphs' replays are counted nowhere")) << joined(e);
}

TEST(StatsEstimate, WithoutAnEarlierSnapshotTheRatesAreSinceTheCommunicatorOpened) {
  stats::SlotSnapshot now = comm();
  timed(now, 0, 12, 1000);  // opened 10 s before kT0: 100 a second
  const StatsEstimate e = estimateSavings({process(now, kT0)}, {}, tuneTable());
  EXPECT_DOUBLE_EQ(e.savedUsPerSecond, 100 * (12 - 4)) << joined(e);
  EXPECT_TRUE(has(e, "rank 0/2, since it was opened 10.0 s ago: saves 0.800 ms")) << joined(e);
}

TEST(StatsEstimate, WithoutGpuCountsTheHostsCallsGiveAFloor) {
  stats::SlotSnapshot before = comm(2, 0), now = comm(2, 0);
  calls(now, Route::OneShotPush, 12, false, 40);  // 20 a second
  const StatsEstimate e = estimateSavings({process(now, kT0 + 2 * kSecond)}, {process(before, kT0)}, tuneTable());
  EXPECT_DOUBLE_EQ(e.savedUsPerSecond, 20 * (12 - 4)) << joined(e);
  EXPECT_TRUE(has(e, "the GPU does not count here (SYMMEM_STATS_GPU=0)")) << joined(e);
}

TEST(StatsEstimate, AWorldTheFileDidNotMeasureAndNothingToEstimate) {
  stats::SlotSnapshot now = comm(4);
  timed(now, 0, 12, 1000);
  const StatsEstimate e = estimateSavings({process(now, kT0)}, {}, tuneTable());
  EXPECT_EQ(e.communicators, 0);
  EXPECT_TRUE(has(e, "rank 0/4: not estimated: tune.csv has no world of 4 ranks (it has 2)")) << joined(e);
  EXPECT_TRUE(has(e, "nothing to estimate yet")) << joined(e);
  EXPECT_EQ(estimateExitCode(e), 4);
  stats::SlotSnapshot idle = comm(), single = comm(1), ended = comm();
  timed(single, 0, 12, 1000);
  timed(ended, 0, 12, 1000);
  ended.state = stats::SlotState::Ended;
  EXPECT_EQ(
      estimateSavings({process(idle, kT0), process(single, kT0), process(ended, kT0)}, {}, tuneTable()).communicators,
      0)
      << "no calls, one rank, ended: nothing to estimate";
}

TEST(StatsEstimate, AnNcclTestsResultsFileGivesThePluginsTimeToEveryKernel) {
  const LatencyTableRead r = parseLatencyTable(
      "case,size_bytes,dtype,redop,stock_oop_us,plugin_oop_us,oop_ratio,stock_ip_us,plugin_ip_us,ip_ratio\n"
      "ar-latency,4096,float,sum,30,5,0.17,30,5,0.17\n",
      "results.csv", "");
  ASSERT_TRUE(r.ok()) << r.error;
  stats::SlotSnapshot before = comm(8), now = comm(8);
  timed(now, 0, 12, 100);  // one-shot push
  timed(now, 6, 12, 100);  // two-shot staged
  const StatsEstimate e = estimateSavings({process(now, kT0 + 2 * kSecond)}, {process(before, kT0)}, r.table);
  EXPECT_DOUBLE_EQ(e.savedUsPerSecond, 100 * (30 - 5)) << joined(e);
  EXPECT_TRUE(has(e, "(its world size is not recorded: it is applied to every communicator)")) << joined(e);
}

// ---- the built tool ---------------------------------------------------------------------------------

symmem::testing::ToolRun estimate(const std::string& dir, const std::string& args) {
  return symmem::testing::runTool(std::string("env -u SYMMEM_STATS_DIR '") + SYMMEM_STAT_PATH + "' --dir '" + dir +
                                  "' " + args);
}

// For the default process's counts (tests/unit/stats_process.h): one-shot push at 8 B and 4 KiB.
const char* kToolCsv =
    "ranks,link,cc,bytes,path,median_us,min_us,max_us,chosen\n"
    "2,pcie-switch,12.0,8,nccl,1010,1010,1010,0\n"
    "2,pcie-switch,12.0,8,oneshot-push,10,10,10,1\n"
    "2,pcie-switch,12.0,4096,nccl,1012,1012,1012,0\n"
    "2,pcie-switch,12.0,4096,oneshot-push,12,12,12,1\n";

TEST(StatsEstimateTool, OnceEstimatesSinceEachCommunicatorOpened) {
  symmem::testing::TempDir dir("symmem-stat-estimate");
  symmem::testing::TempFile csv(kToolCsv);
  symmem::testing::StatsWritingProcess p(dir.path());
  ASSERT_TRUE(p.ready());
  const auto r = estimate(dir.path(), "--estimate '" + csv.path() + "' --once");
  EXPECT_EQ(r.exitCode, 0) << r.out;
  // 7 runs at 8 B and 5 at 4 KiB in 10 s: 0.7 x 1000 + 0.5 x 1000 us a second.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("comm 0xa1 rank 0/2, since it was opened 10\\.[0-9] s ago: saves "
                                                  "1\\.(19|20)[0-9] ms of all-reduce time a second")))
      << r.out;
  EXPECT_TRUE(r.has("at sizes or on paths")) << "the 1 MiB NCCL calls have no time in the file\n" << r.out;
}

TEST(StatsEstimateTool, CountsWhatALiveProcessRunsOverTheInterval) {
  symmem::testing::TempDir dir("symmem-stat-estimate");
  symmem::testing::TempFile csv(kToolCsv);
  symmem::testing::StatsWritingProcess p(dir.path(), [](stats::WrittenSegment& seg) {
    symmem::testing::SlotIdentity a;
    a.comm = 0xc3;
    a.openedNs = symmem::testing::realtimeNs();
    symmem::testing::claimSlot(seg.slot(0), a);
    stats::CommSlot* slot = seg.slot(0);
    std::thread([slot] {  // one-shot push at 4 KiB, 10 more every 10 ms, while the process lives
      for (uint64_t n = 10;; n += 10) {
        symmem::testing::storeKernelEntry(&slot->gpu.timed[0][12], n, n * 5000, 5000, 5000);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    })
        .detach();
  });
  ASSERT_TRUE(p.ready());
  const auto r = estimate(dir.path(), "--estimate '" + csv.path() + "' --interval 0.5");
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(r.has("counting the all-reduces of 1 process(es) for 0.5 s")) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("comm 0xc3 rank 0/2, over [0-9]+\\.[0-9] s: saves [1-9][0-9.]* ms")))
      << r.out;
}

TEST(StatsEstimateTool, AnEstimateOnlyReadsTheFileOfAnEndedProcessStays) {
  symmem::testing::TempDir dir("symmem-stat-estimate");
  symmem::testing::TempFile csv(kToolCsv);
  const pid_t ended = fork();
  ASSERT_GE(ended, 0);
  if (ended == 0) {
    std::string why;
    auto seg = stats::WrittenSegment::createShared(dir.path(), "ended-child", "0.1.0", &why);
    _exit(seg == nullptr ? 3 : 0);  // no destructor: the file stays, as after a kill
  }
  int status = 0;
  ASSERT_EQ(waitpid(ended, &status, 0), ended);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  const std::string left = dir.path() + "/" + stats::segmentFileName(getuid(), ended);
  ASSERT_EQ(access(left.c_str(), F_OK), 0);
  const auto r = estimate(dir.path(), "--estimate '" + csv.path() + "' --once");
  EXPECT_TRUE(r.has("pid " + std::to_string(ended) + " ended without removing its statistics file")) << r.out;
  EXPECT_EQ(access(left.c_str(), F_OK), 0) << "a viewer removes nothing\n" << r.out;
}

TEST(StatsEstimateTool, ABadCsvNoProcessAndBadArguments) {
  symmem::testing::TempDir dir("symmem-stat-estimate");
  symmem::testing::TempFile bad("size,time\n");
  const auto r = estimate(dir.path(), "--estimate '" + bad.path() + "'");
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_TRUE(r.has("not a CSV this reads")) << r.out;
  symmem::testing::TempFile csv(kToolCsv);
  const auto none = estimate(dir.path(), "--estimate '" + csv.path() + "'");
  EXPECT_EQ(none.exitCode, 4) << none.out;
  EXPECT_TRUE(none.has("nothing to estimate yet")) << none.out;
  EXPECT_EQ(estimate(dir.path(), "--estimate '" + csv.path() + "' --json").exitCode, 2);
  EXPECT_EQ(estimate(dir.path(), "--case ar-latency").exitCode, 2);
}

}  // namespace
}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
// symmem-stat's forms of the live statistics (tools/common/stats_view.h), from snapshots made by
// hand: the table's exact lines with rates over an interval and since opening, the JSON document and
// the Prometheus exposition, and the escaping of what a process names itself.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/common/json_text.h"
#include "tools/common/stats_view.h"

namespace symmem {
namespace {

using stats::ProcessSnapshot;
using stats::Route;
using stats::SlotSnapshot;

constexpr uint64_t kSecond = 1000000000ull;

SlotSnapshot comm(int index, uint64_t id, uint64_t openedNs) {
  SlotSnapshot s;
  s.index = index;
  s.state = stats::SlotState::Live;
  s.rank = 1;
  s.nRanks = 2;
  s.comm = id;
  s.openedNs = openedNs;
  s.symmetric = true;
  s.gpuSampling = 1;
  s.path = "symmetric (cc 9.0, link nvlink)";
  return s;
}

uint64_t& calls(SlotSnapshot& s, Route r, int bucket, int mode) { return s.calls[static_cast<int>(r)][bucket][mode]; }

ProcessSnapshot process(uint64_t takenNs) {
  ProcessSnapshot p;
  p.file = "/dev/shm/nccl-symmem-1000-4242.stats";
  p.pid = 4242;
  p.uid = 1000;
  p.startTicks = 777;
  p.createdNs = 10 * kSecond;
  p.program = "python3";
  p.pluginVersion = "0.1.0";
  p.takenNs = takenNs;
  return p;
}

// One communicator: one-shot push at 8 B and 16 KiB (eager and captured) with the GPU's entries,
// NCCL past the table at 1 MiB; taken `at` seconds after it was opened at 100 s.
ProcessSnapshot sample(uint64_t at, uint64_t scale) {
  ProcessSnapshot p = process((100 + at) * kSecond);
  SlotSnapshot s = comm(0, 0x7f00aa00, 100 * kSecond);
  calls(s, Route::OneShotPush, 3, stats::kEager) = 30 * scale;
  calls(s, Route::OneShotPush, 14, stats::kCaptured) = 10 * scale;
  calls(s, Route::NcclTable, 20, stats::kEager) = 4 * scale;
  s.gpu.timed[0][3] = {30 * scale, 30 * scale * 4000, 3500, 9800};
  s.gpu.timed[0][14] = {10 * scale, 10 * scale * 12000, 11000, 15500};
  s.gpu.runs[0] = 40 * scale;
  p.comms.push_back(s);
  return p;
}

TEST(StatsView, BucketLabels) {
  EXPECT_EQ(bucketLabel(0), "1B");
  EXPECT_EQ(bucketLabel(3), "8B");
  EXPECT_EQ(bucketLabel(10), "1KiB");
  EXPECT_EQ(bucketLabel(14), "16KiB");
  EXPECT_EQ(bucketLabel(20), "1MiB");
  EXPECT_EQ(bucketLabel(30), "1GiB");
  EXPECT_EQ(bucketLabel(31), ">1GiB");
}

TEST(StatsView, TableWithRatesSinceOpened) {
  const std::vector<ProcessSnapshot> now = {sample(4, 1)};
  EXPECT_EQ(
      statsTable(now, {}),
      "#   pid    uid  program          comm            rank     route                    calls/s        calls  sizes  "
      "         eager/capt  gpu runs/s   gpu mean    gpu max\n"
      "#                                                                                      1/s               bytes  "
      " "
      "                 %        1/s         us         us\n"
      "   4242   1000  python3          0x7f00aa00      1/2      one-shot push               10.0           40  "
      "8B-16KiB             75/25       10.0        6.0       15.5\n"
      "   4242   1000  python3          0x7f00aa00      1/2      NCCL (past the table)        1.0            4  "
      "1MiB                 100/0          -          -          -\n");
}

TEST(StatsView, TableWithRatesOverTheInterval) {
  // 2 s later the counts have tripled: 80 more one-shot calls in 2 s, 8 more NCCL calls.
  const std::vector<ProcessSnapshot> before = {sample(4, 1)};
  const std::vector<ProcessSnapshot> now = {sample(6, 3)};
  const std::vector<std::string> rows = statsTableRows(now, before);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0],
            "   4242   1000  python3          0x7f00aa00      1/2      one-shot push               40.0          120  "
            "8B-16KiB             75/25       40.0        6.0       15.5");
  EXPECT_EQ(rows[1],
            "   4242   1000  python3          0x7f00aa00      1/2      NCCL (past the table)        4.0           12  "
            "1MiB                 100/0          -          -          -");
}

TEST(StatsView, AnotherProcessOrCommunicatorIsNotAnInterval) {
  const std::vector<ProcessSnapshot> now = {sample(6, 3)};
  std::vector<ProcessSnapshot> before = {sample(4, 1)};
  before[0].startTicks = 778;  // the PID's earlier process
  EXPECT_NE(statsTableRows(now, before)[0].find(" 20.0 "), std::string::npos) << "120 calls in 6 s since opened";
  before = {sample(4, 1)};
  before[0].comms[0].openedNs += 1;  // an earlier communicator in the same slot
  EXPECT_NE(statsTableRows(now, before)[0].find(" 20.0 "), std::string::npos);
  before = {sample(4, 5)};  // more calls than now: not the same communicator
  EXPECT_NE(statsTableRows(now, before)[0].find(" 20.0 "), std::string::npos);
  const ProcessSnapshot earlier = sample(4, 1);
  const std::vector<CommFigures> figures = commFigures(now[0], &earlier);
  ASSERT_EQ(figures.size(), 1u);
  EXPECT_TRUE(figures[0].overInterval);
  EXPECT_DOUBLE_EQ(figures[0].rateSeconds, 2.0);
}

TEST(StatsView, EndedUncountedAndUntimedCommunicators) {
  ProcessSnapshot p = process(200 * kSecond);
  p.program = "a-very-long-program-name";
  SlotSnapshot ended = comm(2, 0xbeef, 100 * kSecond);
  ended.state = stats::SlotState::Ended;
  ended.closedNs = 150 * kSecond;
  ended.gpuSampling = 0;
  calls(ended, Route::TwoShotPull, 31, stats::kCaptured) = 5;
  ended.gpu.timed[4][31] = {5, 5000, 1000, 1000};  // the kernels kept nothing: not shown
  p.comms.push_back(ended);
  SlotSnapshot idle = comm(3, 0xcafe, 199 * kSecond);
  idle.symmetric = false;
  idle.path = "NCCL: a peer has no P2P access";
  p.comms.push_back(idle);
  SlotSnapshot fresh = comm(4, 0xf00d, 200 * kSecond);
  fresh.symmetric = false;
  fresh.path = "";
  calls(fresh, Route::NcclBeforeSetup, 0, stats::kEager) = 1;
  p.comms.push_back(fresh);
  p.untrackedComms = 3;
  EXPECT_EQ(
      statsTable({p}, {}),
      statsTableHeader() +
          "   4242   1000  a-very-long-pro  0xbeef          1/2      two-shot pull              ended            5  "
          ">1GiB                0/100          -          -          -\n"
          "   4242   1000  a-very-long-pro  0xcafe          1/2      -                              -            0  "
          "-                        -          -          -          -\n"
          "   4242   1000  a-very-long-pro  0xf00d          1/2      NCCL (before setup)            -            1  "
          "1B                   100/0          -          -          -\n"
          "pid 4242 comm 0xcafe rank 1/2: symmetric path off: NCCL: a peer has no P2P access\n"
          "pid 4242 comm 0xf00d rank 1/2: symmetric path off: not set up yet\n"
          "pid 4242: 3 communicators not shown: every one of its 64 slots was live when they were set up\n");
  // The ended communicator's rate is over its life (5 calls in 50 s).
  const std::vector<CommFigures> f = commFigures(p, nullptr);
  ASSERT_EQ(f[0].routes.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].routes[0].perSecond.value(), 0.1);
  EXPECT_FALSE(f[2].routes[0].perSecond.has_value()) << "opened when the snapshot was taken: no time to rate";
}

TEST(StatsView, NotesHaveStableKeys) {
  ProcessSnapshot p = process(200 * kSecond);
  SlotSnapshot off = comm(1, 0xcafe, 100 * kSecond);
  off.symmetric = false;
  off.path = "off\x1b[2J";
  p.comms.push_back(off);
  const std::vector<StatsNote> a = statsNotes({p});
  p.takenNs += kSecond;
  const std::vector<StatsNote> b = statsNotes({p});
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].key, b[0].key);
  EXPECT_EQ(a[0].text, "pid 4242 comm 0xcafe rank 1/2: symmetric path off: off\\x1b[2J") << "no terminal control";
  p.comms[0].openedNs += 1;
  EXPECT_NE(statsNotes({p})[0].key, a[0].key) << "another communicator in the slot is said again";
}

TEST(StatsView, Json) {
  const std::vector<ProcessSnapshot> before = {sample(4, 1)};
  std::vector<ProcessSnapshot> now = {sample(6, 3)};
  now[0].comms[0].path = "symmetric \"quoted\"";
  EXPECT_EQ(
      statsJson(now, before, {"pid 9 ended without removing its statistics file x (...)"}),
      R"({"layout_version":3,"processes":[{"pid":4242,"program":"python3","uid":1000,"start_ticks":777,)"
      R"("plugin_version":"0.1.0","file":"/dev/shm/nccl-symmem-1000-4242.stats","created_ns":10000000000,)"
      R"("taken_ns":106000000000,"untracked_communicators":0,"communicators":[{"slot":0,"comm":"0x7f00aa00",)"
      R"("state":"live","rank":1,"nranks":2,"device":0,"opened_ns":100000000000,"closed_ns":null,"symmetric":true,)"
      R"("gpu_sampling":1,"gpu_runs":{"one_shot":120,"two_shot":0},"path":"symmetric \"quoted\"","calls":132,)"
      R"("rates_over_s":2,)"
      R"("rates_since":"previous_snapshot","routes":{"one_shot_push":{"calls":120,"eager":90,"captured":30,)"
      R"("calls_per_s":40,"buckets":[{"bucket":3,"le_bytes":8,"eager":90,"captured":0},)"
      R"({"bucket":14,"le_bytes":16384,"eager":0,"captured":30}]},"nccl_table":{"calls":12,"eager":12,)"
      R"("captured":0,"calls_per_s":4,"buckets":[{"bucket":20,"le_bytes":1048576,"eager":12,"captured":0}]}},)"
      R"("kernels":{"one_shot_push":{"executions":120,"executions_per_s":40,"timed":120,"sum_ns":720000,)"
      R"("min_ns":3500,"max_ns":15500,)"
      R"("buckets":[{"bucket":3,"le_bytes":8,"count":90,"sum_ns":360000,"min_ns":3500,"max_ns":9800},)"
      R"({"bucket":14,"le_bytes":16384,"count":30,"sum_ns":360000,"min_ns":11000,"max_ns":15500}]}}}]}],)"
      R"j("notes":["pid 9 ended without removing its statistics file x (...)"]})j");
}

TEST(StatsView, JsonOfNothing) {
  EXPECT_EQ(statsJson({}, {}, {}), R"({"layout_version":3,"processes":[],"notes":[]})");
}

TEST(StatsView, Prometheus) {
  std::vector<ProcessSnapshot> now = {sample(4, 1)};
  now[0].program = "py\"th\\on\n3";
  now[0].untrackedComms = 2;
  now[0].comms[0].calls[static_cast<int>(Route::NcclTable)][31][stats::kCaptured] = 1;
  const std::string id = R"(pid="4242",uid="1000",program="py\"th\\on\n3",comm="0x7f00aa00",rank="1",nranks="2")";
  EXPECT_EQ(
      statsPrometheus(now),
      "# HELP nccl_symmem_calls_total All-reduces the nccl-symmem plugin routed, by communicator, route, size "
      "bucket (upper bound in bytes) and mode (eager or captured in a CUDA graph).\n"
      "# TYPE nccl_symmem_calls_total counter\n"
      "nccl_symmem_calls_total{" +
          id +
          R"(,route="one_shot_push",bucket_le_bytes="8",mode="eager"} 30)"
          "\n"
          "nccl_symmem_calls_total{" +
          id +
          R"(,route="one_shot_push",bucket_le_bytes="16384",mode="captured"} 10)"
          "\n"
          "nccl_symmem_calls_total{" +
          id +
          R"(,route="nccl_table",bucket_le_bytes="1048576",mode="eager"} 4)"
          "\n"
          "nccl_symmem_calls_total{" +
          id +
          R"(,route="nccl_table",bucket_le_bytes="+Inf",mode="captured"} 1)"
          "\n"
          "# HELP nccl_symmem_kernel_timed_executions_total Executions of a symmetric kernel the GPU timed (one "
          "call in 64 of each kernel and size, the first always; all with SYMMEM_STATS_GPU=every), by "
          "communicator, kernel (route) and size bucket.\n"
          "# TYPE nccl_symmem_kernel_timed_executions_total counter\n"
          "nccl_symmem_kernel_timed_executions_total{" +
          id +
          R"(,route="one_shot_push",bucket_le_bytes="8"} 30)"
          "\n"
          "nccl_symmem_kernel_timed_executions_total{" +
          id +
          R"(,route="one_shot_push",bucket_le_bytes="16384"} 10)"
          "\n"
          "# HELP nccl_symmem_kernel_seconds_total GPU time of those executions: block 0, from the end of its wait "
          "for the previous kernel to its last store (%globaltimer).\n"
          "# TYPE nccl_symmem_kernel_seconds_total counter\n"
          "nccl_symmem_kernel_seconds_total{" +
          id +
          R"(,route="one_shot_push",bucket_le_bytes="8"} 0.00012)"
          "\n"
          "nccl_symmem_kernel_seconds_total{" +
          id +
          R"(,route="one_shot_push",bucket_le_bytes="16384"} 0.00012)"
          "\n"
          "# HELP nccl_symmem_kernel_max_seconds The longest of those executions.\n"
          "# TYPE nccl_symmem_kernel_max_seconds gauge\n"
          "nccl_symmem_kernel_max_seconds{" +
          id +
          R"(,route="one_shot_push",bucket_le_bytes="8"} 0.0000098)"
          "\n"
          "nccl_symmem_kernel_max_seconds{" +
          id +
          R"(,route="one_shot_push",bucket_le_bytes="16384"} 0.0000155)"
          "\n"
          "# HELP nccl_symmem_kernel_min_seconds The shortest of those executions.\n"
          "# TYPE nccl_symmem_kernel_min_seconds gauge\n"
          "nccl_symmem_kernel_min_seconds{" +
          id +
          R"(,route="one_shot_push",bucket_le_bytes="8"} 0.0000035)"
          "\n"
          "nccl_symmem_kernel_min_seconds{" +
          id +
          R"(,route="one_shot_push",bucket_le_bytes="16384"} 0.000011)"
          "\n"
          "# HELP nccl_symmem_gpu_executions_total Executions of the symmetric kernels of each algorithm the GPU "
          "counted, graph replays included, by communicator and algorithm.\n"
          "# TYPE nccl_symmem_gpu_executions_total counter\n"
          "nccl_symmem_gpu_executions_total{" +
          id +
          R"(,algorithm="one_shot"} 40)"
          "\n"
          "nccl_symmem_gpu_executions_total{" +
          id +
          R"(,algorithm="two_shot"} 0)"
          "\n"
          "# HELP nccl_symmem_untracked_communicators Communicators of the process that found every statistics "
          "slot live, so not counted here.\n"
          "# TYPE nccl_symmem_untracked_communicators gauge\n"
          R"(nccl_symmem_untracked_communicators{pid="4242",uid="1000",program="py\"th\\on\n3"} 2)"
          "\n");
}

// Sampled (SYMMEM_STATS_GPU=sampled): an algorithm's executions, counted whole, are shared among its
// kernels as their timed executions are; the times are the timed calls'.
TEST(StatsView, SampledKernelsShareTheirAlgorithmsExecutions) {
  ProcessSnapshot p = process(110 * kSecond);
  SlotSnapshot s = comm(0, 0x7f00aa00, 100 * kSecond);
  s.gpuSampling = 64;
  calls(s, Route::OneShotPush, 3, stats::kCaptured) = 2;
  calls(s, Route::OneShotPull, 14, stats::kCaptured) = 1;
  s.gpu.runs[0] = 6400;
  s.gpu.timed[0][3] = {75, 75 * 2000, 1500, 4000};
  s.gpu.timed[1][14] = {25, 25 * 8000, 7000, 9000};
  p.comms.push_back(s);
  EXPECT_EQ(stats::kindRuns(s.gpu, s.gpuSampling, 0), 4800u);
  EXPECT_EQ(stats::kindRuns(s.gpu, s.gpuSampling, 1), 1600u);
  EXPECT_EQ(stats::kindRuns(s.gpu, 1, 0), 75u) << "every execution timed: the count is the runs";
  const std::vector<std::string> rows = statsTableRows({p}, {});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0],
            "   4242   1000  python3          0x7f00aa00      1/2      one-shot push                0.2            2  "
            "8B                   0/100      480.0        2.0        4.0");
  EXPECT_EQ(rows[1],
            "   4242   1000  python3          0x7f00aa00      1/2      one-shot pull                0.1            1  "
            "16KiB                0/100      160.0        8.0        9.0");
}

TEST(StatsView, ExactSeconds) {
  EXPECT_EQ(secondsFromNs(0), "0");
  EXPECT_EQ(secondsFromNs(1), "0.000000001");
  EXPECT_EQ(secondsFromNs(1500), "0.0000015");
  EXPECT_EQ(secondsFromNs(2 * kSecond), "2");
  EXPECT_EQ(secondsFromNs(12345 * kSecond + 678901234), "12345.678901234");
}

TEST(StatsView, LabelValuesAndJsonStringsAreValidText) {
  EXPECT_EQ(prometheusLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(prometheusLabelValue("caf\xc3\xa9 \xff"), "caf\xc3\xa9 \xef\xbf\xbd");
  EXPECT_EQ(jsonString("a\"b\\c\n\t\x01\x7f"), R"("a\"b\\c\n\t\u0001\u007f")");
  EXPECT_EQ(jsonString("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(jsonString("\xc3"), R"("\ufffd")") << "a cut sequence";
  EXPECT_EQ(jsonString("\xc0\xaf"), R"("\ufffd\ufffd")") << "an overlong form";
  EXPECT_EQ(jsonString("\xed\xa0\x80"), R"("\ufffd\ufffd\ufffd")") << "a surrogate";
  EXPECT_EQ(jsonString("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\"");
}

TEST(StatsView, JsonWriterNumbersAndNesting) {
  JsonWriter j;
  j.beginObject().key("a").beginArray().value(1.5).value(2.0).value(0.1234, 3).value(-0.0001, 3);
  j.value(std::optional<double>()).value(1.0 / 0.0).endArray();
  j.key("b").beginObject().endObject().key("c").value(true).endObject();
  EXPECT_EQ(j.text(), R"({"a":[1.5,2,0.123,0,null,null],"b":{},"c":true})");
}

}  // namespace
}  // namespace symmem

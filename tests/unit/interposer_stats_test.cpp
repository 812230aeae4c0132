// SPDX-License-Identifier: Apache-2.0
// What the interposer counts (plugin/stats/call_stats.h): every all-reduce by route, reason and size
// bucket, eager or captured, on its communicator's slot of the statistics file; the summary line at
// destroy and at exit; the file as another process reads it. Stand-in NCCL and kernels, no GPU.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "core/call_stats_segment.h"
#include "tests/unit/interposer_fakes.h"
#include "tests/unit/temp_file.h"

namespace symmem {
namespace {

using stats::Route;

class InterposerStatsTest : public InterposerTest {
 protected:
  // samplePeriod: what SYMMEM_STATS_GPU asks of the kernels (0: off, 64: sampled, 1: every).
  static void count(Interposer& ip, uint32_t samplePeriod = 0) {
    auto callStats = std::make_unique<CallStats>(stats::WrittenSegment::createPrivate("test", "0"));
    callStats->setGpuSampling(samplePeriod);
    ip.enableStats(std::move(callStats));
  }
  // INFO lines said from now on.
  void keepInfo() {
    setLogSinkForTesting([this](LogLevel level, const std::string& text) {
      if (level == LogLevel::Info) infoLines.push_back(text);
    });
  }
  bool saidInfo(const std::string& part) const {
    for (const std::string& line : infoLines)
      if (line.find(part) != std::string::npos) return true;
    return false;
  }
  std::vector<std::string> infoLines;
  // The slot of `comm` in the interposer's file, and its calls of `route` in size bucket `bytes`.
  static const stats::CommSlot* slotOf(const Interposer& ip, ncclComm_t comm) {
    for (int i = 0; i < stats::kSlots; ++i) {
      const stats::CommSlot* s = ip.callStats()->segment().slot(i);
      if (s->state != stats::SlotState::Free && s->comm == reinterpret_cast<uint64_t>(comm)) return s;
    }
    return nullptr;
  }
  static uint64_t calls(const stats::CommSlot* s, Route r, uint64_t bytes, int mode) {
    return s->calls[static_cast<int>(r)][stats::sizeBucket(bytes)][mode];
  }
  static uint64_t routeTotal(const stats::CommSlot* s, Route r) {
    uint64_t n = 0;
    for (int b = 0; b < stats::kBuckets; ++b)
      n += s->calls[static_cast<int>(r)][b][0] + s->calls[static_cast<int>(r)][b][1];
    return n;
  }
  void TearDown() override {
    FakeSymmetric::capturedCalls = false;
    setLogSinkForTesting({});
  }
};

TEST_F(InterposerStatsTest, BucketsArePowersOfTwo) {
  EXPECT_EQ(stats::sizeBucket(0), 0);
  EXPECT_EQ(stats::sizeBucket(1), 0);
  EXPECT_EQ(stats::sizeBucket(2), 1);
  EXPECT_EQ(stats::sizeBucket(3), 2);
  EXPECT_EQ(stats::sizeBucket(4), 2);
  EXPECT_EQ(stats::sizeBucket(4097), 13);
  EXPECT_EQ(stats::sizeBucket(16384), 14);
  EXPECT_EQ(stats::sizeBucket(uint64_t{1} << 30), 30);
  EXPECT_EQ(stats::sizeBucket((uint64_t{1} << 30) + 1), 31);
  EXPECT_EQ(stats::sizeBucket(UINT64_MAX), 31);
  EXPECT_EQ(stats::bucketUpperBytes(14), 16384u);
  EXPECT_EQ(stats::bucketUpperBytes(31), 0u) << "the last bucket is open-ended";
}

TEST_F(InterposerStatsTest, EveryCallIsCountedByRouteReasonAndBucket) {
  Interposer ip = make(true);
  count(ip);
  ncclComm_t comm = fakeComm(0x7000, 4);
  // Before any setup: NCCL takes them (type, op, empty), on counters kept for the communicator.
  ip.allReduce(buf, buf, 4, ncclInt32, ncclSum, comm, nullptr);     // 16 B
  ip.allReduce(buf, buf, 4, ncclFloat32, ncclAvg, comm, nullptr);   // 16 B
  ip.allReduce(buf, buf, 0, ncclBfloat16, ncclSum, comm, nullptr);  // 0 B
  EXPECT_EQ(setups, 0);
  // 12.0 pcie-switch, 4 ranks: one-shot pull <= 64 KiB, two-shot staged <= 512 KiB.
  ip.allReduce(buf, buf, 8, ncclBfloat16, ncclSum, comm, nullptr);         // 16 B, sets up
  ip.allReduce(buf, buf, 8, ncclBfloat16, ncclSum, comm, nullptr);         // 16 B
  ip.allReduce(buf, buf, 64 * 1024, ncclFloat32, ncclMax, comm, nullptr);  // 256 KiB
  FakeSymmetric::capturedCalls = true;
  ip.allReduce(buf, buf, 3000, ncclFloat16, ncclSum, comm, nullptr);  // 6000 B, captured
  FakeSymmetric::capturedCalls = false;
  ip.allReduce(buf, buf, 1 << 20, ncclFloat32, ncclSum, comm, nullptr);  // 4 MiB: NCCL
  FakeSymmetric::answer = kernels::Status::Unsupported;
  ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr);  // declined by the kernels: NCCL
  FakeSymmetric::answer = kernels::Status::PeerTimeout;
  ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr);  // failed
  FakeSymmetric::answer = kernels::Status::Ok;

  const stats::CommSlot* s = slotOf(ip, comm);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->state, stats::SlotState::Live);
  EXPECT_EQ(s->nRanks, 4);
  EXPECT_EQ(s->symmetric, 1u);
  EXPECT_NE(std::strstr(s->path, "symmetric (cc 12.0"), nullptr) << s->path;
  EXPECT_EQ(calls(s, Route::NcclTypeOrOp, 16, stats::kEager), 2u) << "the counts before setup are kept";
  EXPECT_EQ(calls(s, Route::NcclTypeOrOp, 0, stats::kEager), 1u);
  EXPECT_EQ(calls(s, Route::OneShotPull, 16, stats::kEager), 2u);
  EXPECT_EQ(calls(s, Route::TwoShotStaged, 256 * 1024, stats::kEager), 1u);
  EXPECT_EQ(calls(s, Route::OneShotPull, 6000, stats::kCaptured), 1u);
  EXPECT_EQ(calls(s, Route::OneShotPull, 6000, stats::kEager), 0u);
  const Decision big = decide({Collective::AllReduce, ReduceOp::Sum, DataType::Float32, 4u << 20},
                              CommFacts{4, 1, {12, 0}, LinkClass::PcieSameSwitch, true, 1 << 20},
                              table.thresholdsFor({12, 0}, LinkClass::PcieSameSwitch, 4).entry, process.policy);
  ASSERT_FALSE(big.symmetric());
  EXPECT_EQ(calls(s, big.path == Path::NcclTuned ? Route::NcclTuned : Route::NcclTable, 4u << 20, stats::kEager), 1u);
  EXPECT_EQ(calls(s, Route::NcclKernelDeclined, 32, stats::kEager), 1u);
  EXPECT_EQ(calls(s, Route::Failed, 32, stats::kEager), 1u);
  uint64_t total = 0;
  for (int r = 0; r < stats::kRoutes; ++r) total += routeTotal(s, static_cast<Route>(r));
  EXPECT_EQ(total, 10u) << "every call once";
}

TEST_F(InterposerStatsTest, ACommunicatorOffThePathCountsItsCallsWithTheReason) {
  Interposer ip = make(false);
  count(ip);
  ncclComm_t comm = fakeComm(0x7100, 2);
  for (int i = 0; i < 3; ++i) ip.allReduce(buf, buf, 8, ncclFloat16, ncclSum, comm, nullptr);
  const stats::CommSlot* s = slotOf(ip, comm);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->symmetric, 0u);
  EXPECT_STREQ(s->path, "NCCL: no P2P");
  EXPECT_EQ(calls(s, Route::NcclPathOff, 16, stats::kEager), 3u);
}

TEST_F(InterposerStatsTest, CallsCapturedBeforeSetupAreCountedAsSuch) {
  Interposer ip = make(true, /*capturing=*/true);
  count(ip);
  ncclComm_t comm = fakeComm(0x7200, 2);
  ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr);
  const stats::CommSlot* s = slotOf(ip, comm);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(calls(s, Route::NcclBeforeSetup, 32, stats::kCaptured), 1u);
  EXPECT_EQ(s->nRanks, 2) << "what NCCL says of the communicator, before setup";
}

TEST_F(InterposerStatsTest, DestroySaysTheSummaryAndLeavesTheSlotEndedForReaders) {
  std::vector<std::string> info;
  setLogSinkForTesting([&](LogLevel level, const std::string& text) {
    if (level == LogLevel::Info) info.push_back(text);
  });
  Interposer ip = make(true);
  count(ip);
  ncclComm_t comm = fakeComm(0x7300, 4);
  for (int i = 0; i < 5; ++i) ip.allReduce(buf, buf, 8, ncclBfloat16, ncclSum, comm, nullptr);
  ip.allReduce(buf, buf, 4, ncclInt32, ncclSum, comm, nullptr);
  const stats::CommSlot* s = slotOf(ip, comm);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(ip.commDestroy(comm), ncclSuccess);
  EXPECT_EQ(s->state, stats::SlotState::Ended);
  EXPECT_NE(s->closedNs, 0u);
  bool said = false;
  for (const std::string& line : info)
    said = said ||
           (line.find("at destroy: 6 all-reduces: one-shot pull 5 (16B); NCCL (type/op) 1 (16B)") != std::string::npos);
  EXPECT_TRUE(said) << "the summary line at destroy";
  // The same address set up again is a new communicator on a fresh (or reused) slot.
  ip.allReduce(buf, buf, 8, ncclBfloat16, ncclSum, comm, nullptr);
  const stats::CommSlot* again = slotOf(ip, comm);
  ASSERT_NE(again, nullptr);
  uint64_t live = 0;
  for (int i = 0; i < stats::kSlots; ++i)
    if (ip.callStats()->segment().slot(i)->state == stats::SlotState::Live) ++live;
  EXPECT_EQ(live, 1u);
}

// The kernels' own counts (SYMMEM_STATS_GPU) reach the communicator's slot while it lives, by the
// publisher thread's copies every 0.1 s, and once more at teardown; no copy runs once teardown begins.
// (SYMMEM_STATS_GPU=sampled, the default): every execution counted, one in about 64 timed.
TEST_F(InterposerStatsTest, TheKernelsCountsReachTheSlotWhileTheCommunicatorLives) {
  keepInfo();
  Interposer ip = make(true);
  count(ip, stats::kDefaultSamplePeriod);
  ncclComm_t comm = fakeComm(0x7400, 4);
  FakeSymmetric::gpuRuns = 42;
  FakeSymmetric::gpuTimed = 1;
  ip.allReduce(buf, buf, 8, ncclBfloat16, ncclSum, comm, nullptr);
  EXPECT_EQ(FakeSymmetric::samplePeriod, 64u);
  const stats::CommSlot* s = slotOf(ip, comm);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->gpuSampling, 64u);
  const stats::KernelEntry& e =
      s->gpu.timed[stats::kernelKind(false, static_cast<int>(SymVariant::Pull))][stats::sizeBucket(16)];
  auto waitFor = [&](uint64_t runs) {
    for (int i = 0; i < 300 && __atomic_load_n(&s->gpu.runs[0], __ATOMIC_RELAXED) != runs; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return __atomic_load_n(&s->gpu.runs[0], __ATOMIC_RELAXED);
  };
  EXPECT_EQ(waitFor(42), 42u) << "the first copy within 3 s";
  FakeSymmetric::gpuTimed = 16;
  FakeSymmetric::gpuRuns = 1000;  // replays the host never saw
  EXPECT_EQ(waitFor(1000), 1000u) << "a later copy within 3 s";
  EXPECT_EQ(e.count, 16u);
  EXPECT_EQ(e.sumNs, 32000u);
  FakeSymmetric::gpuRuns = 1001;
  EXPECT_EQ(ip.commDestroy(comm), ncclSuccess);
  EXPECT_EQ(s->gpu.runs[0], 1001u) << "teardown's own copy";
  const int copies = FakeSymmetric::copies;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(FakeSymmetric::copies, copies) << "copies after the communicator was destroyed";
  EXPECT_FALSE(FakeSymmetric::copyAfterTeardown);
  EXPECT_TRUE(saidInfo("one-shot pull 1 (16B; GPU 1001 runs, 16 timed: mean 2.00 us, max 3.00 us)"))
      << "the summary line at destroy names the kernels' runs and the sampled times";
}

// With SYMMEM_STATS_GPU=every each execution is timed: the summary line says so without a count of
// the timed ones. With =off the kernels keep nothing: no publication, no GPU part in the summary.
TEST_F(InterposerStatsTest, TheSummaryLineFollowsWhatTheKernelsKeep) {
  struct Case {
    uint32_t period;
    const char* said;
  };
  for (const Case& c :
       {Case{1, "one-shot pull 1 (16B; GPU 7 runs, mean 2.00 us, max 3.00 us)"}, Case{0, "one-shot pull 1 (16B)"}}) {
    SCOPED_TRACE("sample period " + std::to_string(c.period));
    infoLines.clear();
    keepInfo();
    Interposer ip = make(true);
    count(ip, c.period);
    ncclComm_t comm = fakeComm(0x7500 + c.period, 4);
    FakeSymmetric::samplePeriod = 99;
    FakeSymmetric::gpuRuns = 7;
    FakeSymmetric::gpuTimed = 7;
    ip.allReduce(buf, buf, 8, ncclBfloat16, ncclSum, comm, nullptr);
    EXPECT_EQ(FakeSymmetric::samplePeriod, c.period == 0 ? 99u : c.period) << "what was published";
    EXPECT_EQ(slotOf(ip, comm)->gpuSampling, c.period);
    EXPECT_EQ(ip.commDestroy(comm), ncclSuccess);
    EXPECT_TRUE(saidInfo(c.said)) << "the summary line at destroy";
  }
}

TEST_F(InterposerStatsTest, AtExitEachLiveCommunicatorIsSummedUp) {
  std::vector<std::string> info;
  setLogSinkForTesting([&](LogLevel level, const std::string& text) {
    if (level == LogLevel::Info) info.push_back(text);
  });
  Interposer ip = make(true);
  count(ip);
  ip.allReduce(buf, buf, 8, ncclBfloat16, ncclSum, fakeComm(0x7400, 4), nullptr);
  ip.allReduce(buf, buf, 8, ncclInt64, ncclSum, fakeComm(0x7500, 4), nullptr);  // never set up
  ip.atExit();
  int lines = 0;
  for (const std::string& line : info) lines += line.find(" at exit: 1 all-reduce: ") != std::string::npos ? 1 : 0;
  EXPECT_EQ(lines, 2);
}

TEST_F(InterposerStatsTest, PastTheBoundCommunicatorsAreCountedForTheirSummaryOnly) {
  Interposer ip = make(true);
  count(ip);
  for (int i = 0; i < stats::kSlots + 3; ++i)
    ip.allReduce(buf, buf, 8, ncclBfloat16, ncclSum, fakeComm(0x10000 + 0x100 * i, 2), nullptr);
  EXPECT_EQ(ip.callStats()->segment().header()->untrackedComms, 3u);
  EXPECT_EQ(ip.liveCommunicators(), static_cast<size_t>(stats::kSlots + 3)) << "every call still goes its way";
  // A destroyed one frees its slot for the next.
  EXPECT_EQ(ip.commDestroy(fakeComm(0x10000, 2)), ncclSuccess);
  ip.allReduce(buf, buf, 8, ncclBfloat16, ncclSum, fakeComm(0x900000, 2), nullptr);
  EXPECT_EQ(ip.callStats()->segment().header()->untrackedComms, 3u);
  EXPECT_NE(slotOf(ip, fakeComm(0x900000, 2)), nullptr);
}

TEST_F(InterposerStatsTest, OffMeansNoCounters) {
  Interposer ip = make(true);
  ncclComm_t comm = fakeComm(0x7600, 2);
  ip.allReduce(buf, buf, 8, ncclBfloat16, ncclSum, comm, nullptr);
  EXPECT_EQ(ip.callStats(), nullptr);
  EXPECT_EQ(FakeSymmetric::calls, 1);
}

// The plugin's file as another process finds it: mode 0600, named for this user and process, the
// counts readable, removed at exit.
TEST_F(InterposerStatsTest, TheFileIsWhatAReaderSees) {
  testing::TempDir dir("symmem-stats");
  Interposer ip = make(true);
  ip.enableStats(CallStats::open(dir.path()));
  ASSERT_TRUE(ip.callStats()->segment().shared());
  const std::string path = ip.callStats()->segment().path();
  EXPECT_EQ(path, dir.path() + "/" + stats::segmentFileName(getuid(), getpid()));
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ncclComm_t comm = fakeComm(0x7700, 4);
  for (int i = 0; i < 7; ++i) ip.allReduce(buf, buf, 8, ncclBfloat16, ncclSum, comm, nullptr);
  const stats::SegmentRead read = stats::readSegment(path);
  ASSERT_EQ(read.outcome, stats::SegmentRead::Outcome::Ok) << read.error;
  EXPECT_EQ(read.snapshot.pid, getpid());
  ASSERT_EQ(read.snapshot.comms.size(), 1u);
  EXPECT_EQ(read.snapshot.comms[0].routeCalls(Route::OneShotPull), 7u);
  EXPECT_EQ(read.snapshot.comms[0].comm, 0x7700u);
  EXPECT_TRUE(stats::writerAlive(read.snapshot));
  ip.atExit();
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "removed at exit";
}

// What a forked child does at its exit (the atfork handler's detach, taken here in this process): it
// neither sums up its parent's communicators nor removes its parent's file.
TEST_F(InterposerStatsTest, AForkedChildLeavesItsParentsFileAndLinesAlone) {
  std::vector<std::string> info;
  setLogSinkForTesting([&](LogLevel level, const std::string& text) {
    if (level == LogLevel::Info) info.push_back(text);
  });
  testing::TempDir dir("symmem-stats");
  Interposer ip = make(true);
  ip.enableStats(CallStats::open(dir.path()));
  const std::string path = ip.callStats()->segment().path();
  ip.allReduce(buf, buf, 8, ncclBfloat16, ncclSum, fakeComm(0x7800, 2), nullptr);
  ip.statsAfterFork();
  ip.allReduce(buf, buf, 8, ncclBfloat16, ncclSum, fakeComm(0x7800, 2), nullptr);  // counted in its own memory
  ip.atExit();
  EXPECT_EQ(access(path.c_str(), F_OK), 0) << "the parent's file stays";
  for (const std::string& line : info) EXPECT_EQ(line.find(" at exit: "), std::string::npos) << line;
  const stats::SegmentRead read = stats::readSegment(path);
  ASSERT_EQ(read.outcome, stats::SegmentRead::Outcome::Ok) << read.error;
  ASSERT_EQ(read.snapshot.comms.size(), 1u);
  EXPECT_EQ(read.snapshot.comms[0].routeCalls(Route::OneShotPush), 1u) << "the child's call is not the parent's";
}

}  // namespace
}  // namespace symmem

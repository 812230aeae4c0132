// SPDX-License-Identifier: Apache-2.0
// The statistics file against what another user, or a full /dev/shm, can do to it
// (core/call_stats_segment.h): counts made to wrap their sums (the reader and symmem-stat stay up and
// show saturated counts), a file shrunk while it is read (no SIGBUS: the reader copies with pread),
// and a directory too full for the file (no SIGBUS in the writer: no file, counters in the process).
// Each reader runs in a forked child, so that a crash fails the test with its signal.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "core/call_stats_segment.h"
#include "core/log.h"
#include "plugin/stats/call_stats.h"
#include "tests/unit/crafted_stats_file.h"
#include "tests/unit/forked_check.h"
#include "tests/unit/temp_file.h"
#include "tests/unit/tool_run.h"
#include "tools/common/stats_gather.h"
#include "tools/common/stats_view.h"

namespace symmem::stats {
namespace {

constexpr uint64_t kMax = UINT64_MAX;
constexpr const char* kSkip = "SKIP: ";

std::string has(const std::string& text, const std::string& part, const char* what) {
  return text.find(part) != std::string::npos ? "" : std::string(what) + ": no '" + part + "' in:\n" + text + "\n";
}

// A file under this process's own name whose counts wrap every sum a reader makes: one-shot push
// calls of 2^64 - 1 eager and 2 captured (eager + captured wraps to 1), and timed executions of the
// one-shot kernels that add to 2^64 (to 0, the divisor of the route's share of the GPU's runs).
// Each entry alone passes the entry check (min, max and sum 0 go with any count).
void writeWrappingFile(const std::string& dir) {
  testing::CraftedStatsFile f(getpid(), processStartTicks(getpid()).value_or(0), "wrapping");
  CommSlot* s = f.liveSlot(0, 0xbad);
  s->calls[static_cast<int>(Route::OneShotPush)][3][kEager] = kMax;
  s->calls[static_cast<int>(Route::OneShotPush)][4][kCaptured] = 2;
  s->gpu.runs[0] = 1000;
  s->gpu.timed[static_cast<int>(Route::OneShotPush)][3] = {1, 4000, 4000, 4000};
  s->gpu.timed[static_cast<int>(Route::OneShotPull)][3] = {kMax, 0, 0, 0};
  ASSERT_TRUE(f.writeTo(dir + "/" + segmentFileName(geteuid(), getpid())));
}

TEST(StatsFileHostile, CountsThatWrapAreSaturatedNotACrash) {
  testing::TempDir dir("symmem-hostile");
  writeWrappingFile(dir.path());
  const pid_t me = getpid();
  EXPECT_EQ(testing::runForkedCheck([&]() -> std::string {
              const StatsGathered g = gatherStats({dir.path(), {me}});
              if (g.processes.size() != 1) return "not read: " + (g.notes.empty() ? "" : g.notes[0]);
              const SlotSnapshot& slot = g.processes[0].comms.at(0);
              if (slot.routeCalls(Route::OneShotPush) != kMax) return "the route's calls wrapped";
              if (slot.totalCalls() != kMax) return "the total wrapped";
              const std::vector<CommFigures> figures = commFigures(g.processes[0], nullptr);
              const RouteFigures& push = figures.at(0).routes.at(0);
              std::string wrong;
              if (push.calls != kMax || push.eager != kMax || push.captured != 2) wrong += "calls wrapped; ";
              if (push.gpuExecutions > slot.gpu.runs[0]) wrong += "more executions than the GPU ran; ";
              const std::string table = statsTable(g.processes, {});
              wrong += has(table, " 18446744073709551615  8B-16B ", "table");
              wrong += has(table, " 100/0 ", "table: 2 captured calls of 2^64 - 1 are 0 %");
              wrong += has(statsJson(g.processes, {}, g.notes), "\"calls\":18446744073709551615", "json");
              wrong += has(statsPrometheus(g.processes), "mode=\"eager\"} 18446744073709551615", "prometheus");
              return wrong;
            }),
            "");
  // The tool itself, each form: exit 0, not a signal.
  const std::string stat = std::string("'") + SYMMEM_STAT_PATH + "' --dir '" + dir.path() + "' " + std::to_string(me);
  for (const char* form : {" --once", " --json", " --prometheus"}) {
    const testing::ToolRun r = testing::runTool(stat + form);
    EXPECT_EQ(r.exitCode, 0) << form << ": " << r.out;
    EXPECT_TRUE(r.has("18446744073709551615")) << form << ": " << r.out;
  }
}

// A GPU entry no writer makes (min above max, a sum no count of executions between them gives) is
// read as empty; the slot's other counts stay.
TEST(StatsFileHostile, ImpossibleEntriesAndStatesAreNotShown) {
  testing::TempDir dir("symmem-hostile");
  testing::CraftedStatsFile f(getpid(), 0, "impossible");
  CommSlot* s = f.liveSlot(0, 0xa);
  s->calls[0][3][kEager] = 5;
  s->gpu.timed[0][3] = {2, 10, 9, 1};      // min above max
  s->gpu.timed[0][4] = {2, 1, 5, 5};       // a sum below count x min
  s->gpu.timed[0][5] = {0, 7, 0, 0};       // a sum of no execution
  s->gpu.timed[0][6] = {3, 300, 90, 110};  // possible
  f.liveSlot(1, 0xb)->state = static_cast<SlotState>(7);
  const std::string path = dir.path() + "/x.stats";
  ASSERT_TRUE(f.writeTo(path));
  const SegmentRead r = readSegment(path);
  ASSERT_EQ(r.outcome, SegmentRead::Outcome::Ok) << r.error;
  ASSERT_EQ(r.snapshot.comms.size(), 1u) << "a slot of state 7 is no writer's";
  const GpuCounts& g = r.snapshot.comms[0].gpu;
  EXPECT_EQ(g.timed[0][3].count, 0u);
  EXPECT_EQ(g.timed[0][4].count, 0u);
  EXPECT_EQ(g.timed[0][5].sumNs, 0u);
  EXPECT_EQ(g.timed[0][6].count, 3u);
  EXPECT_EQ(g.timed[0][6].sumNs, 300u);
  EXPECT_EQ(r.snapshot.comms[0].calls[0][3][kEager], 5u);

  f.header()->pid = 0;
  ASSERT_TRUE(f.writeTo(path));
  const SegmentRead noPid = readSegment(path);
  EXPECT_EQ(noPid.outcome, SegmentRead::Outcome::Refused);
  EXPECT_NE(noPid.error.find("names no process"), std::string::npos) << noPid.error;
}

// The file's owner cuts its last page off and puts it back (zeros, where the last slot's last GPU
// entries were), again and again, while a reader reads it: a reader that mapped the file would take
// a SIGBUS at its first load from that page while it is gone; one that copies with pread sees a
// short read and says the file shrank.
TEST(StatsFileHostile, AFileShrunkWhileReadIsNotAFault) {
  static_assert(sizeof(CommSlot) > kSlotBytes - 4096, "the last slot's copy reads the file's last page");
  testing::TempDir dir("symmem-hostile");
  const std::string path = dir.path() + "/shrinking.stats";
  testing::CraftedStatsFile f(getpid(), 0, "shrinking");
  for (int i = 0; i < kSlots; ++i) f.liveSlot(i, 0x100 + i)->calls[0][3][kEager] = 1;
  ASSERT_TRUE(f.writeTo(path));
  EXPECT_EQ(
      testing::runForkedCheck([&]() -> std::string {
        const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
        if (fd < 0) return "cannot open";
        std::atomic<bool> stop{false};
        std::thread owner([&] {
          const auto cut = static_cast<off_t>(kSegmentBytes - 4096);
          while (!stop.load(std::memory_order_relaxed)) {
            if (ftruncate(fd, cut) != 0 || ftruncate(fd, static_cast<off_t>(kSegmentBytes)) != 0) return;
          }
        });
        int ok = 0, other = 0;
        std::string wrong;
        const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(700);
        while (std::chrono::steady_clock::now() < end) {
          const SegmentRead r = readSegment(path);
          if (r.outcome == SegmentRead::Outcome::Ok) {
            ++ok;
            if (r.snapshot.comms.size() != kSlots) wrong = "a read found " + std::to_string(r.snapshot.comms.size());
          } else if (r.outcome == SegmentRead::Outcome::Refused || r.outcome == SegmentRead::Outcome::Unreadable) {
            ++other;
          } else {
            wrong = "outcome " + r.error;
          }
        }
        stop = true;
        owner.join();
        close(fd);
        if (ok + other < 20) wrong += "only " + std::to_string(ok + other) + " reads";
        return wrong;
      }),
      "");
}

// The number of names in `dir` other than . and ..
int entries(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (const dirent* e = readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++n;
  closedir(d);
  return n;
}

// A 16 KiB tmpfs (in a mount namespace of a forked child's own): the 1.25 MiB file cannot have its
// space. Sized sparse and mapped, its first store past the 4 pages the file system holds would be a
// SIGBUS; reserved first, it is an error: no file is kept, the counters live in the process's memory
// and its summary lines, and that is said once.
TEST(StatsFileFull, AFullDirectoryKeepsNoFileAndTheCountsGoOn) {
  testing::TempDir dir("symmem-full");
  const std::string report = testing::runForkedCheck([&]() -> std::string {
    if (unshare(CLONE_NEWNS) != 0) return std::string(kSkip) + "unshare(CLONE_NEWNS): " + std::strerror(errno);
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      return std::string(kSkip) + "mount --make-rprivate /: " + std::strerror(errno);
    if (mount("symmem-full", dir.path().c_str(), "tmpfs", 0, "size=16k,mode=0700") != 0)
      return std::string(kSkip) + "mount a 16 KiB tmpfs: " + std::strerror(errno);
    std::string wrong;
    std::vector<std::string> info;
    setLogSinkForTesting([&](LogLevel level, const std::string& text) {
      if (level == LogLevel::Info) info.push_back(text);
    });
    std::unique_ptr<CallStats> stats = CallStats::open(dir.path());
    if (stats == nullptr) return wrong + "no counters at all";
    if (stats->segment().shared()) wrong += "a shared segment on a full tmpfs; ";
    if (entries(dir.path()) != 0) wrong += "CallStats left a file; ";
    std::vector<std::unique_ptr<CommCounters>> comms;
    for (int i = 0; i < kSlots; ++i) {  // every slot written
      comms.push_back(stats->lease(reinterpret_cast<ncclComm_t>(uintptr_t{0x1000} + i)));
      comms.back()->count(Route::OneShotPush, 8, false);
    }
    comms[0]->count(Route::OneShotPush, 8, true);
    if (comms[0]->slot().calls[0][3][kEager] != 1 || comms[0]->slot().calls[0][3][kCaptured] != 1)
      wrong += "the counts were not kept; ";
    wrong += has(comms[0]->summary(), "2 all-reduces: one-shot push 2", "summary");
    setLogSinkForTesting({});
    int said = 0;
    for (const std::string& line : info) said += line.find("no live statistics for symmem-stat") != std::string::npos;
    if (said != 1) wrong += "said " + std::to_string(said) + " times that there is no file; ";
    std::string why;
    if (WrittenSegment::createShared(dir.path(), "full", "0", &why) != nullptr) return wrong + "a file made";
    wrong += has(why, "cannot reserve its 1314816 bytes: No space left on device", "why");
    if (entries(dir.path()) != 0) wrong += "a file was left; ";
    return wrong;
  });
  if (report.starts_with(kSkip)) GTEST_SKIP() << report.substr(std::strlen(kSkip));
  EXPECT_EQ(report, "");
}

}  // namespace
}  // namespace symmem::stats

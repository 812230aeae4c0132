// SPDX-License-Identifier: Apache-2.0
// The statistics file (core/call_stats_segment.h) between a writer and a reader: what is written is
// read back whole; the file is private to its user, replaced when a process of the same PID left one,
// removed by its creator, or by the next writer of its user once its process ended; a reader refuses anything that is
// not this layout without blocking on it, and never returns a slot half of one communicator and half of another while
// the writer works.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/call_stats_segment.h"
#include "core/sym_variant.h"
#include "tests/unit/call_stats_writer.h"
#include "tests/unit/forked_check.h"
#include "tests/unit/temp_file.h"

namespace symmem::stats {
namespace {

using testing::SlotIdentity;

struct StatsDir : testing::TempDir {
  StatsDir() : testing::TempDir("symmem-stats-test") {}
};

std::unique_ptr<WrittenSegment> create(const std::string& dir) {
  std::string why;
  auto s = WrittenSegment::createShared(dir, "stats-test", "9.8.7", &why);
  EXPECT_NE(s, nullptr) << why;
  return s;
}

bool exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

// A whole file of this layout's size holding `header` first.
void writeFile(const std::string& path, const Header& header, size_t bytes = kSegmentBytes) {
  std::string data(bytes, '\0');
  std::memcpy(data.data(), &header, std::min(sizeof header, bytes));
  std::ofstream(path, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
}

Header validHeader() {
  Header h{};
  initHeader(&h, getpid(), 0, "p", "v");
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  return h;
}

TEST(CallStatsSegment, WhatIsWrittenIsReadBack) {
  StatsDir dir;
  auto seg = create(dir.path());
  ASSERT_NE(seg, nullptr);
  EXPECT_EQ(seg->path(), dir.path() + "/" + segmentFileName(getuid(), getpid()));
  SlotIdentity a;
  a.rank = 1, a.nRanks = 4, a.device = 3, a.comm = 0xabc0, a.openedNs = 1000, a.path = "symmetric (cc 9.0, nvlink)";
  testing::claimSlot(seg->slot(0), a);
  testing::countCalls(seg->slot(0), Route::OneShotPush, 8, false, 5);
  testing::countCalls(seg->slot(0), Route::OneShotPush, 4096, true, 7);
  testing::countCalls(seg->slot(0), Route::NcclTable, 1 << 24, false, 2);
  testing::storeKernelEntry(&seg->slot(0)->gpu.timed[0][3], 5, 5000, 900, 1200);
  testing::storeWord(&seg->slot(0)->gpu.runs[1], 321);
  SlotIdentity b;
  b.comm = 0xdef0, b.symmetric = false, b.gpuSampling = 0, b.path = "off: a peer has no P2P";
  testing::claimSlot(seg->slot(5), b);
  testing::countCalls(seg->slot(5), Route::NcclPathOff, 100, false, 3);
  testing::endSlot(seg->slot(5), 2000);
  seg->header()->untrackedComms = 2;

  const SegmentRead r = readSegment(seg->path());
  ASSERT_EQ(r.outcome, SegmentRead::Outcome::Ok) << r.error;
  const ProcessSnapshot& p = r.snapshot;
  EXPECT_EQ(p.pid, getpid());
  EXPECT_EQ(p.uid, getuid());
  EXPECT_EQ(p.startTicks, processStartTicks(getpid()).value());
  EXPECT_EQ(p.program, "stats-test");
  EXPECT_EQ(p.pluginVersion, "9.8.7");
  EXPECT_EQ(p.untrackedComms, 2u);
  EXPECT_GT(p.takenNs, p.createdNs);
  ASSERT_EQ(p.comms.size(), 2u);
  const SlotSnapshot& s = p.comms[0];
  EXPECT_EQ(s.index, 0);
  EXPECT_EQ(s.state, SlotState::Live);
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.nRanks, 4);
  EXPECT_EQ(s.device, 3);
  EXPECT_EQ(s.comm, 0xabc0u);
  EXPECT_EQ(s.openedNs, 1000u);
  EXPECT_TRUE(s.symmetric);
  EXPECT_EQ(s.gpuSampling, 1u);
  EXPECT_EQ(s.path, "symmetric (cc 9.0, nvlink)");
  EXPECT_EQ(s.calls[0][3][kEager], 5u);
  EXPECT_EQ(s.calls[0][12][kCaptured], 7u);
  EXPECT_EQ(s.calls[static_cast<int>(Route::NcclTable)][24][kEager], 2u);
  EXPECT_EQ(s.routeCalls(Route::OneShotPush), 12u);
  EXPECT_EQ(s.totalCalls(), 14u);
  EXPECT_EQ(s.gpu.timed[0][3].count, 5u);
  EXPECT_EQ(s.gpu.timed[0][3].sumNs, 5000u);
  EXPECT_EQ(s.gpu.timed[0][3].minNs, 900u);
  EXPECT_EQ(s.gpu.timed[0][3].maxNs, 1200u);
  EXPECT_EQ(s.gpu.runs[0], 0u);
  EXPECT_EQ(s.gpu.runs[1], 321u);
  const SlotSnapshot& e = p.comms[1];
  EXPECT_EQ(e.index, 5);
  EXPECT_EQ(e.state, SlotState::Ended);
  EXPECT_EQ(e.closedNs, 2000u);
  EXPECT_FALSE(e.symmetric);
  EXPECT_EQ(e.gpuSampling, 0u);
  EXPECT_EQ(e.path, "off: a peer has no P2P");
  EXPECT_EQ(e.routeCalls(Route::NcclPathOff), 3u);
  EXPECT_TRUE(writerAlive(p));
}

TEST(CallStatsSegment, FileIsThisUsersAlone) {
  StatsDir dir;
  const mode_t old = umask(0);  // a permissive umask must not widen the file
  auto seg = create(dir.path());
  umask(old);
  ASSERT_NE(seg, nullptr);
  struct stat st {};
  ASSERT_EQ(stat(seg->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, getuid());
  EXPECT_EQ(static_cast<size_t>(st.st_size), kSegmentBytes);
}

TEST(CallStatsSegment, AFileLeftWithThisPidIsReplaced) {
  StatsDir dir;
  const std::string path = dir.path() + "/" + segmentFileName(getuid(), getpid());
  std::ofstream(path) << "left by an earlier process with this PID";
  auto seg = create(dir.path());
  ASSERT_NE(seg, nullptr);
  const SegmentRead r = readSegment(path);
  EXPECT_EQ(r.outcome, SegmentRead::Outcome::Ok) << r.error;
  EXPECT_EQ(r.snapshot.program, "stats-test");
}

TEST(CallStatsSegment, RemovedByItsCreatorOnly) {
  StatsDir dir;
  auto seg = create(dir.path());
  ASSERT_NE(seg, nullptr);
  const std::string path = seg->path();
  // A forked child's copy is its parent's file: destroying it there removes nothing.
  EXPECT_EQ(testing::runForkedCheck([&]() -> std::string {
              seg.reset();
              return exists(path) ? "" : "the child removed its parent's file";
            }),
            "");
  EXPECT_EQ(testing::runForkedCheck([&]() -> std::string {
              seg->removeFile();
              return exists(path) ? "" : "removeFile in the child removed its parent's file";
            }),
            "");
  ASSERT_TRUE(exists(path));
  seg.reset();
  EXPECT_FALSE(exists(path));

  auto kept = create(dir.path());
  ASSERT_NE(kept, nullptr);
  const std::string keptPath = kept->path();
  kept->disown();
  kept.reset();
  EXPECT_TRUE(exists(keptPath)) << "a disowned file is not removed";
}

TEST(CallStatsSegment, RefusesAForeignFile) {
  StatsDir dir;
  const std::string path = dir.path() + "/x.stats";
  Header h = validHeader();
  std::memcpy(h.magic, "NOTMINE!", 8);
  writeFile(path, h);
  const SegmentRead r = readSegment(path);
  EXPECT_EQ(r.outcome, SegmentRead::Outcome::Refused);
  EXPECT_NE(r.error.find("not an nccl-symmem statistics file"), std::string::npos) << r.error;
}

TEST(CallStatsSegment, RefusesAFutureLayout) {
  StatsDir dir;
  const std::string path = dir.path() + "/x.stats";
  Header h = validHeader();
  h.version = kLayoutVersion + 1;
  writeFile(path, h, kSegmentBytes * 2);
  const SegmentRead r = readSegment(path);
  EXPECT_EQ(r.outcome, SegmentRead::Outcome::Refused);
  EXPECT_NE(r.error.find("layout version " + std::to_string(kLayoutVersion + 1)), std::string::npos) << r.error;
}

// Version 1 had six kernel kinds (no halves), version 2 no sampling and no executions per algorithm:
// a file of either is another layout, refused by name.
TEST(CallStatsSegment, RefusesTheEarlierLayouts) {
  StatsDir dir;
  const std::string path = dir.path() + "/x.stats";
  for (const uint32_t version : {1u, 2u}) {
    Header h = validHeader();
    h.version = version;
    writeFile(path, h);
    const SegmentRead r = readSegment(path);
    EXPECT_EQ(r.outcome, SegmentRead::Outcome::Refused);
    EXPECT_NE(r.error.find("layout version " + std::to_string(version) + "; this reader knows version 3"),
              std::string::npos)
        << r.error;
  }
}

// The symmetric routes are the kernel kinds, in core/sym_variant.h's order within each algorithm: the
// interposer and the kernels index them by kernelKind(twoShot, variant).
TEST(CallStatsSegment, KernelKindsFollowTheVariants) {
  EXPECT_EQ(kKernelKinds, 2 * kNumSymVariants);
  for (int v = 0; v < kNumSymVariants; ++v) {
    const std::string variant(symVariantName(static_cast<SymVariant>(v)));
    const auto one = static_cast<Route>(kernelKind(false, v));
    const auto two = static_cast<Route>(kernelKind(true, v));
    EXPECT_TRUE(isSymmetric(one) && isSymmetric(two)) << variant;
    EXPECT_EQ(routeName(one), "one-shot " + variant);
    EXPECT_EQ(routeName(two), "two-shot " + variant);
    EXPECT_EQ(routeKey(one), "one_shot_" + variant);
    EXPECT_EQ(routeKey(two), "two_shot_" + variant);
  }
  EXPECT_EQ(static_cast<Route>(kernelKind(false, static_cast<int>(SymVariant::Halves))), Route::OneShotHalves);
  EXPECT_EQ(static_cast<Route>(kernelKind(true, static_cast<int>(SymVariant::Halves))), Route::TwoShotHalves);
  EXPECT_EQ(routeKey(Route::TwoShotHalves), "two_shot_halves");
  EXPECT_FALSE(isSymmetric(Route::NcclTuned));
  EXPECT_EQ(routeKey(Route::NcclTuned), "nccl_tuned");
}

TEST(CallStatsSegment, RefusesOtherSizes) {
  StatsDir dir;
  const std::string path = dir.path() + "/x.stats";
  uint32_t Header::*fields[] = {&Header::headerBytes, &Header::slotBytes,   &Header::slots, &Header::routes,
                                &Header::buckets,     &Header::kernelKinds, &Header::modes};
  for (uint32_t Header::*f : fields) {
    Header h = validHeader();
    h.*f += 1;
    writeFile(path, h);
    const SegmentRead r = readSegment(path);
    EXPECT_EQ(r.outcome, SegmentRead::Outcome::Refused) << r.error;
  }
  writeFile(path, validHeader(), kSegmentBytes - kSlotBytes);
  EXPECT_EQ(readSegment(path).outcome, SegmentRead::Outcome::Refused) << "a file shorter than its header says";
  writeFile(path, validHeader(), kSegmentBytes + 1);
  EXPECT_EQ(readSegment(path).outcome, SegmentRead::Outcome::Refused) << "a file longer than its header says";
  writeFile(path, validHeader());
  EXPECT_EQ(readSegment(path).outcome, SegmentRead::Outcome::Ok) << "the same file with this layout's sizes";
}

TEST(CallStatsSegment, AShortOrEmptyFile) {
  StatsDir dir;
  const std::string path = dir.path() + "/x.stats";
  std::ofstream(path) << "SYMMSTAT";
  SegmentRead r = readSegment(path);
  EXPECT_EQ(r.outcome, SegmentRead::Outcome::Refused);
  EXPECT_NE(r.error.find("too short"), std::string::npos) << r.error;
  std::ofstream(path, std::ios::trunc).flush();
  r = readSegment(path);
  EXPECT_EQ(r.outcome, SegmentRead::Outcome::Starting) << "an empty file is one being created";
  writeFile(path, Header{});
  EXPECT_EQ(readSegment(path).outcome, SegmentRead::Outcome::Starting) << "no magic yet";
  EXPECT_EQ(readSegment(dir.path() + "/none.stats").outcome, SegmentRead::Outcome::Gone);
}

// A FIFO must not block the reader (nobody writes it); a link is not followed. Each read runs in a
// child with a time limit, so that a reader that blocks fails the test instead of hanging it.
TEST(CallStatsSegment, NeitherAFifoNorALinkIsRead) {
  StatsDir dir;
  const std::string fifo = dir.path() + "/" + segmentFileName(getuid(), 1);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto seg = create(dir.path());
  ASSERT_NE(seg, nullptr);
  const std::string link = dir.path() + "/" + segmentFileName(getuid(), 2);
  ASSERT_EQ(symlink(seg->path().c_str(), link.c_str()), 0);
  for (const std::string& path : {fifo, link}) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      alarm(5);
      const SegmentRead r = readSegment(path);
      _exit(r.outcome == SegmentRead::Outcome::Unreadable ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status)) << path << ": the reader blocked (killed by its alarm)";
    EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0) << path << " was read";
  }
  const std::vector<SegmentFile> listed = listSegments(dir.path());
  ASSERT_EQ(listed.size(), 1u) << "the FIFO and the link are not listed";
  EXPECT_EQ(listed[0].path, seg->path());
  EXPECT_EQ(listed[0].name.pid, getpid());
  EXPECT_EQ(listed[0].owner, getuid());
}

TEST(CallStatsSegment, FileNames) {
  EXPECT_EQ(segmentFileName(1000, 42), "nccl-symmem-1000-42.stats");
  const auto ok = parseSegmentFileName("nccl-symmem-1000-42.stats");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->uid, 1000u);
  EXPECT_EQ(ok->pid, 42);
  const auto big = parseSegmentFileName("nccl-symmem-4294967295-2147483647.stats");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->uid, 4294967295u);
  EXPECT_EQ(big->pid, 2147483647);
  EXPECT_TRUE(parseSegmentFileName("nccl-symmem-0-1.stats"));
  EXPECT_EQ(ok->suffix, 0u);
  // A name another user took first: the same with a suffix.
  EXPECT_EQ(segmentFileName(1000, 42, 7), "nccl-symmem-1000-42.7.stats");
  const auto suffixed = parseSegmentFileName("nccl-symmem-1000-42.4294967295.stats");
  ASSERT_TRUE(suffixed);
  EXPECT_EQ(suffixed->uid, 1000u);
  EXPECT_EQ(suffixed->pid, 42);
  EXPECT_EQ(suffixed->suffix, 4294967295u);
  for (const char* bad : {"nccl-symmem-1000-0.stats",
                          "nccl-symmem-1000-2147483648.stats",
                          "nccl-symmem-4294967296-1.stats",
                          "nccl-symmem-1000.stats",
                          "nccl-symmem--42.stats",
                          "nccl-symmem-1000-.stats",
                          "nccl-symmem-1000-42.stat",
                          "nccl-symmem-1000-42.stats.tmp",
                          "nccl-symmem-1000-4-2.stats",
                          "nccl-symmem-+1-42.stats",
                          "nccl-symmem-1000--42.stats",
                          "nccl-symmem-1000-42x.stats",
                          "nccl-symmem-12345678901-1.stats",
                          "nccl-symmem-1000-042 .stats",
                          "xnccl-symmem-1000-42.stats",
                          "nccl-symmem-.stats",
                          ".stats",
                          "",
                          "nccl-symmem-1000-42..stats",
                          "nccl-symmem-1000-42.0.stats",
                          "nccl-symmem-1000-42.4294967296.stats",
                          "nccl-symmem-1000-42.1.2.stats",
                          "nccl-symmem-1000-42.x.stats",
                          "nccl-symmem-1000.1-42.stats",
                          "nccl-symmem-1000-.1.stats"}) {
    EXPECT_FALSE(parseSegmentFileName(bad)) << bad;
  }
  EXPECT_EQ(segmentDirectory(""), "/dev/shm");
  EXPECT_EQ(segmentDirectory("/run/x"), "/run/x");
}

TEST(CallStatsSegment, AnEndedWriterIsNotAlive) {
  ProcessSnapshot s;
  s.pid = getpid();
  s.startTicks = processStartTicks(getpid()).value();
  EXPECT_TRUE(writerAlive(s));
  s.startTicks += 1;  // this PID, another start: a recycled PID
  EXPECT_FALSE(writerAlive(s));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  s.pid = child;
  s.startTicks = 0;
  EXPECT_FALSE(writerAlive(s));
}

// A process killed before its exit handler leaves its file: the next writer of the same user in that
// folder removes it. A running process's file, a file whose header names a live process started at
// that time, a file of another name and the writer's own stay.
TEST(CallStatsSegment, TheNextWriterRemovesWhatEndedProcessesLeft) {
  StatsDir dir;
  const pid_t ended = fork();
  ASSERT_GE(ended, 0);
  if (ended == 0) {
    std::string why;
    auto seg = WrittenSegment::createShared(dir.path(), "ended", "1", &why);
    _exit(seg == nullptr ? 3 : 0);  // no destructor: the file stays, as after a kill
  }
  int status = 0;
  ASSERT_EQ(waitpid(ended, &status, 0), ended);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  const std::string left = dir.path() + "/" + segmentFileName(geteuid(), ended);
  const std::string leftSuffixed = dir.path() + "/" + segmentFileName(geteuid(), ended, 7);
  ASSERT_TRUE(exists(left));
  std::ofstream(leftSuffixed) << "";  // ended while creating it
  // This process's PID, but a header of another start: a recycled PID's file.
  const pid_t me = getpid();
  Header recycled = validHeader();
  recycled.startTicks = processStartTicks(me).value() + 1;
  const std::string recycledPath = dir.path() + "/" + segmentFileName(geteuid(), me, 9);
  writeFile(recycledPath, recycled);
  // A running process's file (this one's, of its start time), and a file of no statistics name.
  Header live = validHeader();
  live.startTicks = processStartTicks(me).value();
  const std::string livePath = dir.path() + "/" + segmentFileName(geteuid(), me, 11);
  writeFile(livePath, live);
  const std::string other = dir.path() + "/nccl-symmem-notes.txt";
  std::ofstream(other) << "x";

  auto seg = create(dir.path());
  ASSERT_NE(seg, nullptr);
  EXPECT_FALSE(exists(left)) << "an ended process's file";
  EXPECT_FALSE(exists(leftSuffixed)) << "a file its process ended while creating";
  EXPECT_FALSE(exists(recycledPath)) << "a recycled PID's file";
  EXPECT_TRUE(exists(livePath)) << "a running process's file";
  EXPECT_TRUE(exists(other));
  EXPECT_TRUE(exists(seg->path())) << "its own";
  EXPECT_EQ(removeEndedSegments(dir.path(), seg->path()), 0) << "nothing more to remove";
}

TEST(CallStatsSegment, TheCleanUpStopsAtItsLimit) {
  StatsDir dir;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  for (uint32_t suffix = 1; suffix <= 5; ++suffix)
    std::ofstream(dir.path() + "/" + segmentFileName(geteuid(), child, suffix)) << "";
  EXPECT_EQ(removeEndedSegments(dir.path(), "", 3), 3);
  EXPECT_EQ(removeEndedSegments(dir.path(), "", 3), 2);
  EXPECT_EQ(removeEndedSegments(dir.path(), "", 3), 0);
}

// A writer that claims slot 0 again and again for another communicator, each time with every counter
// and GPU word set to the communicator's number: a copy of the slot holding two numbers is torn.
TEST(CallStatsSegment, AReaderNeverSeesATornSlot) {
  StatsDir dir;
  auto seg = create(dir.path());
  ASSERT_NE(seg, nullptr);
  CommSlot* slot = seg->slot(0);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> claims{0};
  std::thread writer([&] {
    for (uint64_t n = 1; !stop.load(std::memory_order_relaxed); ++n) {
      SlotIdentity id;
      id.comm = n;
      id.rank = static_cast<int>(n % 1000);
      id.openedNs = n * 3;
      id.path = "comm " + std::to_string(n);
      testing::claimSlot(slot, id, n);
      claims.store(n, std::memory_order_relaxed);
      // Room for a reader between claims, also on a loaded 2-core machine: the test is about what a
      // copy holds, not about how many copies a writer without pause lets through.
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
  });
  int copies = 0, torn = 0;
  std::string firstTorn;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (std::chrono::steady_clock::now() < end) {
    const SegmentRead r = readSegment(seg->path());
    ASSERT_EQ(r.outcome, SegmentRead::Outcome::Ok) << r.error;
    if (r.snapshot.comms.empty()) continue;  // changing under every attempt: skipped, never mixed
    const SlotSnapshot& s = r.snapshot.comms[0];
    const uint64_t n = s.comm;
    bool whole = s.rank == static_cast<int>(n % 1000) && s.openedNs == n * 3 && s.path == "comm " + std::to_string(n);
    for (const auto& route : s.calls)
      for (const auto& bucket : route)
        for (uint64_t c : bucket) whole = whole && c == n;
    for (uint64_t runs : s.gpu.runs) whole = whole && runs == n;
    for (const auto& kind : s.gpu.timed)
      for (const KernelEntry& e : kind)
        whole = whole && e.count == n && e.sumNs == n * n && e.minNs == n && e.maxNs == n;
    ++copies;
    if (!whole && torn++ == 0) firstTorn = "comm " + std::to_string(n) + ", path '" + s.path + "'";
  }
  stop = true;
  writer.join();
  EXPECT_EQ(torn, 0) << "of " << copies << " copies; the first: " << firstTorn;
  EXPECT_GT(copies, 50);
  EXPECT_GT(claims.load(), 1000u) << "the writer hardly ran";
}

// A GPU entry as teardown stores it outside the slot's sequence word (storeGpuCounts: word by word,
// under the GPU counts' own sequence word), copied while it changes: every copy holds a count and the
// sum of that many executions.
TEST(CallStatsSegment, KernelEntryCopiesAreOneExecutions) {
  StatsDir dir;
  auto seg = create(dir.path());
  ASSERT_NE(seg, nullptr);
  SlotIdentity id;
  id.comm = 7;
  testing::claimSlot(seg->slot(0), id);
  GpuCounts* to = &seg->slot(0)->gpu;
  constexpr uint64_t kNs = 1000;
  std::atomic<bool> stop{false};
  std::thread gpu([&] {
    GpuCounts counts{};
    for (uint64_t n = 1; !stop.load(std::memory_order_relaxed); ++n) {
      counts.timed[1][4] = {n, n * kNs, kNs, kNs};
      counts.runs[0] = n;
      storeGpuCounts(to, counts);
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
  });
  int copies = 0, wrong = 0;
  uint64_t last = 0;
  std::string firstWrong;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (std::chrono::steady_clock::now() < end) {
    const SegmentRead r = readSegment(seg->path());
    ASSERT_EQ(r.outcome, SegmentRead::Outcome::Ok) << r.error;
    if (r.snapshot.comms.empty()) continue;  // changing under every attempt: skipped, never mixed
    const KernelEntry& c = r.snapshot.comms[0].gpu.timed[1][4];
    ++copies;
    if (c.count == 0) continue;
    const bool consistent =
        c.sumNs == c.count * kNs && c.minNs == kNs && c.maxNs == kNs && r.snapshot.comms[0].gpu.runs[0] == c.count;
    if (!consistent && wrong++ == 0)
      firstWrong = "count " + std::to_string(c.count) + " sum " + std::to_string(c.sumNs);
    last = c.count;
  }
  stop = true;
  gpu.join();
  EXPECT_EQ(wrong, 0) << "of " << copies << " copies; the first: " << firstWrong;
  EXPECT_GT(copies, 50);
  EXPECT_GT(last, 0u);
}

}  // namespace
}  // namespace symmem::stats

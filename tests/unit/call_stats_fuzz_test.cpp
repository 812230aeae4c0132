// SPDX-License-Identifier: Apache-2.0
// The statistics reader and the views over what it read (core/call_stats_segment.h,
// tools/common/stats_view.h) fed thousands of files of random and boundary-valued bytes, from a fixed
// seed (a failure names its case, and the same run repeats it): any size, headers with fields
// changed, slots in any state with counts at 0, 1, 2^32, 2^63 and 2^64 - 1. Each file is either
// refused or read into a snapshot a writer could have made, and every view of it is whole: sums
// that saturate, shares within 100 %, JSON that parses. Runs in CI under ASan and UBSan, where an
// overflow or a read out of bounds is a failure too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/call_stats_segment.h"
#include "tests/unit/crafted_stats_file.h"
#include "tests/unit/tools/stat/json_value.h"
#include "tools/common/stats_check.h"
#include "tools/common/stats_view.h"
#include "tools/stat/estimate.h"

namespace symmem::stats {
namespace {

constexpr uint64_t kSeed = 20261204;
constexpr int kCases = 2000;
constexpr int kJsonParsedEvery = 8;  // the test's JSON reader is most of a case's time

class Fuzz {
 public:
  explicit Fuzz(uint64_t seed) : rng_(seed) {}

  uint64_t below(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool chance(int percent) { return below(100) < static_cast<uint64_t>(percent); }

  // A count: mostly the values where sums and products wrap, sometimes any.
  uint64_t count() {
    static constexpr uint64_t kEdges[] = {
        0, 1, 2, 3, 0xffffffffull, 1ull << 32, 1ull << 62, 1ull << 63, UINT64_MAX - 1, UINT64_MAX};
    return chance(70) ? kEdges[below(std::size(kEdges))] : rng_();
  }

  // A file size: this layout's mostly, else one either side of each boundary a reader checks.
  size_t size() {
    static constexpr size_t kSizes[] = {0,
                                        1,
                                        8,
                                        sizeof(Header) - 1,
                                        sizeof(Header),
                                        kHeaderBytes,
                                        kHeaderBytes + kSlotBytes / 2,
                                        kSegmentBytes - kSlotBytes + 8,
                                        kSegmentBytes - 1,
                                        kSegmentBytes + 1,
                                        2 * kSegmentBytes};
    return chance(80) ? kSegmentBytes : kSizes[below(std::size(kSizes))];
  }

  // Header fields changed, or bytes of it made random.
  void header(testing::CraftedStatsFile& f) {
    Header* h = f.header();
    switch (below(8)) {
      case 0:
        h->pid = static_cast<int64_t>(count());
        break;
      case 1:
        h->startTicks = count();
        h->createdNs = count();
        break;
      case 2:
        h->untrackedComms = count();
        break;
      case 3:
        h->version = static_cast<uint32_t>(below(5));
        break;
      case 4: {  // one of the sizes
        uint32_t* sizes[] = {&h->headerBytes, &h->slotBytes,   &h->slots, &h->routes,
                             &h->buckets,     &h->kernelKinds, &h->modes};
        *sizes[below(std::size(sizes))] += static_cast<uint32_t>(below(3)) - 1;
        break;
      }
      case 5:  // names without an end
        std::memset(h->program, 'p', sizeof h->program);
        std::memset(h->pluginVersion, 0xff, sizeof h->pluginVersion);
        break;
      case 6:  // random bytes anywhere in the header
        for (int i = 0; i < 8; ++i) f.headerBytes()[below(sizeof(Header))] = static_cast<unsigned char>(rng_());
        break;
      default:
        break;  // valid
    }
  }

  // A slot of any identity and state, counts at the edges.
  void slot(testing::CraftedStatsFile& f, int i) {
    CommSlot* s = f.liveSlot(i, rng_());
    static constexpr uint32_t kStates[] = {0, 1, 2, 3, 0xffffffffu};
    s->state = static_cast<SlotState>(chance(80) ? 1 + below(2) : kStates[below(std::size(kStates))]);
    s->seq = chance(90) ? 2 * below(1000) : 2 * below(1000) + 1;  // odd: always being changed
    s->gpu.seq = chance(95) ? 0 : 1;
    s->rank = static_cast<int32_t>(rng_());
    s->nRanks = static_cast<int32_t>(rng_());
    s->device = static_cast<int32_t>(rng_());
    s->openedNs = count();
    s->closedNs = count();
    s->symmetric = static_cast<uint32_t>(below(3));
    static constexpr uint32_t kSampling[] = {0, 1, 64, 0xffffffffu};
    s->gpuSampling = kSampling[below(std::size(kSampling))];
    if (chance(20)) std::memset(s->path, 0xc3, sizeof s->path);  // no end, not UTF-8
    const int n = static_cast<int>(below(40));
    for (int k = 0; k < n; ++k) s->calls[below(kRoutes)][below(kBuckets)][below(kModes)] = count();
    if (chance(10))  // one route full at the top: every sum of it saturates
      for (auto& bucket : s->calls[below(kRoutes)])
        for (uint64_t& c : bucket) c = UINT64_MAX;
    for (uint64_t& r : s->gpu.runs) r = count();
    for (int k = static_cast<int>(below(20)); k > 0; --k) {
      KernelEntry& e = s->gpu.timed[below(kKernelKinds)][below(kBuckets)];
      e = {count(), count(), count(), count()};
      if (chance(50)) e.minNs = e.maxNs = e.sumNs = 0;  // possible with any count
    }
  }

 private:
  std::mt19937_64 rng_;
};

// What no writer makes and the reader must not return.
std::string snapshotProblems(const ProcessSnapshot& p) {
  if (p.comms.size() > static_cast<size_t>(kSlots)) return "more slots than the layout has";
  for (const SlotSnapshot& s : p.comms) {
    if (s.state != SlotState::Live && s.state != SlotState::Ended)
      return "a slot of state " + std::to_string(static_cast<uint32_t>(s.state));
    if (s.path.size() > kPathBytes) return "a path longer than its field";
    for (const auto& kind : s.gpu.timed)
      for (const KernelEntry& e : kind) {
        const unsigned __int128 n = e.count;
        if (e.count == 0 ? (e.sumNs | e.minNs | e.maxNs) != 0
                         : e.minNs > e.maxNs || n * e.minNs > e.sumNs || e.sumNs > n * e.maxNs)
          return "an impossible GPU entry";
      }
  }
  return "";
}

// Times for symmem-stat --estimate at every size a bucket is costed at, for every path, at 2 ranks.
const LatencyTable& fuzzLatencyTable() {
  static const LatencyTable table = [] {
    std::string csv = "ranks,link,cc,bytes,path,median_us,min_us,max_us,chosen\n";
    for (uint64_t bytes = 1; bytes <= (uint64_t{1} << 30); bytes *= 2)
      for (const char* path : {"nccl", "nccl-ring-ll", "oneshot-push", "oneshot-pull", "oneshot-staged",
                               "oneshot-halves", "twoshot-push", "twoshot-pull", "twoshot-staged", "twoshot-halves"})
        csv += "2,pcie-switch,12.0," + std::to_string(bytes) + "," + path +
               (std::string(path) == "nccl" ? ",10,10,10," : ",5,5,5,") +
               (std::string(path) == "oneshot-push" ? "1" : "0") + "\n";
    return parseLatencyTable(csv, "fuzz.csv", "").table;
  }();
  return table;
}

// The views' arithmetic: every figure whole (calls = eager + captured, saturated, so the captured
// share is within 100 %), every form complete.
std::string viewProblems(const ProcessSnapshot& now, const ProcessSnapshot& before, bool parseJson) {
  for (const CommFigures& c : commFigures(now, &before)) {
    if (!std::isfinite(c.rateSeconds) || c.rateSeconds < 0)
      return "a rate over " + std::to_string(c.rateSeconds) + " s";
    for (const RouteFigures& r : c.routes) {
      uint64_t eager = 0, captured = 0;  // the slot's, summed as they are by hand
      for (const auto& bucket : c.slot->calls[static_cast<int>(r.route)]) {
        eager = addCounts(eager, bucket[kEager]);
        captured = addCounts(captured, bucket[kCaptured]);
      }
      if (r.eager != eager || r.captured != captured) return "eager or captured calls that wrapped";
      if (r.calls != addCounts(r.eager, r.captured)) return "calls are not eager + captured";
      if (r.perSecond && (!std::isfinite(*r.perSecond) || *r.perSecond < 0))
        return "a call rate of " + std::to_string(*r.perSecond);
      if (r.gpuPerSecond && (!std::isfinite(*r.gpuPerSecond) || *r.gpuPerSecond < 0)) return "a GPU rate";
      const uint64_t runs = c.slot->gpu.runs[algorithmOf(static_cast<int>(r.route) % kKernelKinds)];
      if (isSymmetric(r.route) && c.slot->gpuSampling > 1 && r.gpuExecutions > runs) return "more executions than ran";
      if (r.smallest > r.largest || r.largest >= kBuckets) return "sizes out of order";
    }
  }
  const std::vector<ProcessSnapshot> nows = {now}, befores = {before};
  if (statsTable(nows, befores).empty()) return "no table";
  const std::string json = statsJson(nows, befores, {"a note"});
  try {
    if (parseJson) testing::JsonReader::parse(json);
  } catch (const std::exception& e) {
    return std::string("JSON that does not parse: ") + e.what();
  }
  const std::string prometheus = statsPrometheus(nows);
  if (prometheus.empty() || prometheus.back() != '\n') return "an exposition cut short";
  if (checkCapturedPaths(nows).lines.empty()) return "a check without a verdict";
  const StatsEstimate estimate = estimateSavings(nows, befores, fuzzLatencyTable());
  if (!std::isfinite(estimate.savedUsPerSecond)) return "an estimate of " + std::to_string(estimate.savedUsPerSecond);
  if (estimate.lines.size() < 2) return "an estimate without its lines";
  return "";
}

// A file's name for the length of a test, in /dev/shm where the files are (a memory file system:
// on a disk's, each hole the reader reads costs a page), else /tmp.
class ScratchPath {
 public:
  ScratchPath() {
    for (const char* dir : {"/dev/shm", "/tmp"}) {
      std::string pattern = std::string(dir) + "/symmem-fuzz-XXXXXX";
      const int fd = mkstemp(pattern.data());
      if (fd < 0) continue;
      close(fd);
      path_ = pattern;
      return;
    }
  }
  ~ScratchPath() {
    if (!path_.empty()) unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(StatsFileFuzz, RandomAndBoundaryFilesAreReadWholeOrRefused) {
  const ScratchPath scratch;
  ASSERT_FALSE(scratch.path().empty());
  const std::string& path = scratch.path();
  const uint64_t ticks = processStartTicks(getpid()).value_or(0);
  Fuzz fuzz(kSeed);
  testing::CraftedStatsFile f(getpid(), ticks, "fuzz");
  ProcessSnapshot before;  // the last snapshot read: the rates are over the time between
  int read = 0, refused = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < kCases; ++c) {
    f.clear(getpid(), ticks, "fuzz");
    if (fuzz.chance(30)) fuzz.header(f);
    for (int n = static_cast<int>(fuzz.below(5)); n > 0; --n) fuzz.slot(f, static_cast<int>(fuzz.below(kSlots)));
    ASSERT_TRUE(f.writeTo(path, fuzz.size())) << "case " << c;
    const SegmentRead r = readSegment(path);
    if (r.outcome != SegmentRead::Outcome::Ok) {
      ++refused;
      EXPECT_FALSE(r.error.empty()) << "case " << c << ": refused without a reason";
      continue;
    }
    ++read;
    const std::string wrongRead = snapshotProblems(r.snapshot);
    ASSERT_EQ(wrongRead, "") << "case " << c;
    const std::string wrongView = viewProblems(r.snapshot, before, c % kJsonParsedEvery == 0);
    ASSERT_EQ(wrongView, "") << "case " << c;
    before = r.snapshot;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(read, kCases / 2) << "the cases hardly reach the slots";
  EXPECT_GT(refused, kCases / 10) << "the cases hardly reach the checks";
  RecordProperty("seconds", std::to_string(seconds));
}

// Names of any digits and dots: a name the parser takes names the file it was made for.
TEST(StatsFileFuzz, FileNamesParseToWhatTheyName) {
  Fuzz fuzz(kSeed);
  static constexpr char kAlphabet[] = "0123456789-.x";
  for (int c = 0; c < 20000; ++c) {
    std::string middle;
    for (int n = static_cast<int>(fuzz.below(24)); n > 0; --n) middle += kAlphabet[fuzz.below(sizeof kAlphabet - 1)];
    const std::optional<SegmentName> name = parseSegmentFileName("nccl-symmem-" + middle + ".stats");
    if (!name) continue;
    EXPECT_GT(name->pid, 0) << middle;
    const std::optional<SegmentName> again = parseSegmentFileName(segmentFileName(name->uid, name->pid, name->suffix));
    ASSERT_TRUE(again) << middle;
    EXPECT_EQ(again->uid, name->uid) << middle;
    EXPECT_EQ(again->pid, name->pid) << middle;
    EXPECT_EQ(again->suffix, name->suffix) << middle;
  }
}

}  // namespace
}  // namespace symmem::stats

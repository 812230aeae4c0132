// SPDX-License-Identifier: Apache-2.0
#include "tools/stat/estimate.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <optional>

#include "core/decision.h"
#include "core/sym_variant.h"
#include "tools/common/stats_view.h"

namespace symmem {

namespace {

using stats::Route;

std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), fmt, args...);
  return buf;
}

// The size a bucket's calls are costed at: its upper bound (1 B for bucket 0); none for the open-ended
// last bucket.
std::optional<uint64_t> bucketBytes(int b) {
  if (b == 0) return 1;
  const uint64_t upper = stats::bucketUpperBytes(b);
  if (upper == 0) return std::nullopt;
  return upper;
}

// symmem-tune's name of a kernel kind's path: "oneshot-push" ... "twoshot-halves".
std::string kindPath(int kind) {
  return std::string(symAlgoName(stats::algorithmOf(kind) == 0 ? SymAlgo::OneShot : SymAlgo::TwoShot)) + "-" +
         std::string(symVariantName(static_cast<SymVariant>(kind % kNumSymVariants)));
}

bool isKernelPath(const std::string& path) { return path.rfind("oneshot-", 0) == 0 || path.rfind("twoshot-", 0) == 0; }

// The path the table chose at `bytes`: at that size, else at the nearest size below, else the first.
std::string chosenAt(const LatencyWorld& w, uint64_t bytes) {
  if (w.chosen.empty()) return {};
  auto it = w.chosen.upper_bound(bytes);
  if (it != w.chosen.begin()) --it;
  return it->second;
}

struct Delta {
  uint64_t now = 0, before = 0;
  double perSecond(double seconds) const {
    return now > before && seconds > 0 ? static_cast<double>(now - before) / seconds : 0.0;
  }
};

// What a counter grew by (0 for one that shrank: the counts are a file's, any values).
uint64_t grown(uint64_t now, uint64_t before) { return now > before ? now - before : 0; }

uint64_t hostCalls(const stats::SlotSnapshot* s, Route r, int b, bool captured) {
  if (s == nullptr) return 0;
  return s->calls[static_cast<int>(r)][b][captured ? stats::kCaptured : stats::kEager];
}

// One communicator's estimate.
class CommEstimate {
 public:
  CommEstimate(const stats::SlotSnapshot& s, const stats::SlotSnapshot* earlier, double seconds,
               const LatencyWorld& world, const LatencyTable& table)
      : s_(s), earlier_(earlier), seconds_(seconds), world_(world), table_(table) {}

  void run() {
    for (int k = 0; k < stats::kKernelKinds; ++k) kernelKind(k);
    ncclTuned();
    missed();
  }

  double symmetricPerSecond = 0, stockUs = 0, symmetricUs = 0;  // per second
  double tunedPerSecond = 0, tunedSavedUs = 0;
  double missedPerSecond = 0, missedSavedUs = 0;
  uint64_t capturedOnNccl = 0;
  double uncostedPerSecond = 0;
  std::string uncostedExample;
  std::vector<std::string> detail;

 private:
  std::string mine(const std::string& kernel) const {
    return table_.source == LatencyTable::Source::NcclTestsCsv ? std::string("plugin") : kernel;
  }

  void uncosted(double perSecond, int b, const std::string& path) {
    uncostedPerSecond += perSecond;
    if (uncostedExample.empty()) uncostedExample = bucketLabel(b) + (path.empty() ? std::string() : " " + path);
  }

  // Executions of kind k by bucket, per second.
  void kernelKind(int k) {
    const Route route = static_cast<Route>(k);
    double weights[stats::kBuckets] = {};
    double weightSum = 0;
    double runsPerSecond = 0;
    if (s_.gpuSampling > 0) {
      Delta runs{stats::kindRuns(s_.gpu, s_.gpuSampling, k),
                 earlier_ ? stats::kindRuns(earlier_->gpu, earlier_->gpuSampling, k) : 0};
      runsPerSecond = runs.perSecond(seconds_);
      for (int b = 0; b < stats::kBuckets; ++b) {
        weights[b] = Delta{s_.gpu.timed[k][b].count, earlier_ ? earlier_->gpu.timed[k][b].count : 0}.perSecond(1);
        weightSum += weights[b];
      }
    }
    if (weightSum == 0) {  // no GPU counts: the host's calls, captured ones counted once each
      runsPerSecond = 0;
      for (int b = 0; b < stats::kBuckets; ++b) {
        weights[b] = Delta{hostCalls(&s_, route, b, false) + hostCalls(&s_, route, b, true),
                           hostCalls(earlier_, route, b, false) + hostCalls(earlier_, route, b, true)}
                         .perSecond(seconds_);
        runsPerSecond += weights[b];
      }
      weightSum = runsPerSecond;
    }
    if (runsPerSecond <= 0 || weightSum <= 0) return;
    const std::string path = kindPath(k);
    for (int b = 0; b < stats::kBuckets; ++b) {
      const double perSecond = runsPerSecond * weights[b] / weightSum;
      if (perSecond <= 0) continue;
      const std::optional<uint64_t> bytes = bucketBytes(b);
      const std::optional<double> stock = bytes ? latencyAt(world_, "nccl", *bytes) : std::nullopt;
      const std::optional<double> own = bytes ? latencyAt(world_, mine(path), *bytes) : std::nullopt;
      if (!stock || !own) {
        uncosted(perSecond, b, routeName(route).data());
        continue;
      }
      symmetricPerSecond += perSecond;
      stockUs += perSecond * *stock;
      symmetricUs += perSecond * *own;
      detail.push_back(format("     %-7s %9.1f/s  %-15s %8.2f -> %.2f us a call", bucketLabel(b).c_str(), perSecond,
                              routeName(route).data(), *stock, *own));
    }
  }

  // One bucket of a route's eager calls on NCCL, per second, with stock NCCL's time and the time of
  // the path the table chose at that size (the plugin's, with an nccl-tests file). Captured calls are
  // only counted: replays of a graph's NCCL kernels are seen by no counter.
  struct EagerOnNccl {
    double perSecond = 0;
    std::string path;
    std::optional<double> stock, chosen;
  };
  EagerOnNccl eagerOnNccl(Route r, int b) {
    EagerOnNccl e;
    e.perSecond = Delta{hostCalls(&s_, r, b, false), hostCalls(earlier_, r, b, false)}.perSecond(seconds_);
    capturedOnNccl += grown(hostCalls(&s_, r, b, true), hostCalls(earlier_, r, b, true));
    const std::optional<uint64_t> bytes = bucketBytes(b);
    if (e.perSecond <= 0 || !bytes) return e;
    e.path = table_.source == LatencyTable::Source::NcclTestsCsv ? "plugin" : chosenAt(world_, *bytes);
    e.stock = latencyAt(world_, "nccl", *bytes);
    if (!e.path.empty()) e.chosen = latencyAt(world_, e.path, *bytes);
    return e;
  }

  // NCCL with the table's configuration, against stock.
  void ncclTuned() {
    for (int b = 0; b < stats::kBuckets; ++b) {
      const EagerOnNccl e = eagerOnNccl(Route::NcclTuned, b);
      if (e.perSecond <= 0) continue;
      if (!e.stock || !e.chosen || isKernelPath(e.path)) {
        uncosted(e.perSecond, b, "NCCL (table band)");
        continue;
      }
      tunedPerSecond += e.perSecond;
      tunedSavedUs += e.perSecond * (*e.stock - *e.chosen);
    }
  }

  // On NCCL although the table gives the size to a kernel: the communicator was not set up yet, or its
  // symmetric path is off.
  void missed() {
    for (const Route r : {Route::NcclBeforeSetup, Route::NcclPathOff}) {
      for (int b = 0; b < stats::kBuckets; ++b) {
        const EagerOnNccl e = eagerOnNccl(r, b);
        if (e.perSecond <= 0 || !e.stock || !e.chosen) continue;
        missedPerSecond += e.perSecond;
        missedSavedUs += e.perSecond * (*e.stock - *e.chosen);
      }
    }
  }

  const stats::SlotSnapshot& s_;
  const stats::SlotSnapshot* earlier_;
  double seconds_;
  const LatencyWorld& world_;
  const LatencyTable& table_;
};

std::string msPerSecond(double us) { return format("%.3f ms", us / 1000.0); }

}  // namespace

int estimateExitCode(const StatsEstimate& e) { return e.communicators > 0 ? 0 : 4; }

StatsEstimate estimateSavings(const std::vector<stats::ProcessSnapshot>& now,
                              const std::vector<stats::ProcessSnapshot>& before, const LatencyTable& table) {
  StatsEstimate out;
  {
    std::string from = "times from " + table.describe();
    const LatencyWorld& w0 = table.worlds.front();
    if (table.source == LatencyTable::Source::TuneCsv)
      from += format(" (%s, cc %s; worlds of %s ranks)", w0.link.c_str(), w0.cc.c_str(), table.rankList().c_str());
    else
      from += " (its world size is not recorded: it is applied to every communicator)";
    out.lines.push_back(from + "; they hold here as far as this machine is the one measured");
  }
  for (const stats::ProcessSnapshot& p : now) {
    const stats::ProcessSnapshot* pb = earlierProcess(p, before);
    for (const CommFigures& f : commFigures(p, pb)) {
      const stats::SlotSnapshot& s = *f.slot;
      if (s.state != stats::SlotState::Live || s.nRanks < 2) continue;
      const std::string who = format("pid %d (%s) comm 0x%" PRIx64 " rank %d/%d", static_cast<int>(p.pid),
                                     p.program.c_str(), s.comm, s.rank, s.nRanks);
      const LatencyWorld* world = table.world(s.nRanks);
      if (world == nullptr) {
        out.lines.push_back(who + format(": not estimated: %s has no world of %d ranks (it has %s)", table.file.c_str(),
                                         s.nRanks, table.rankList().c_str()));
        continue;
      }
      if (f.rateSeconds <= 0) continue;
      CommEstimate e(s, f.overInterval ? earlierComm(s, pb) : nullptr, f.rateSeconds, *world, table);
      e.run();
      const double saved = e.stockUs - e.symmetricUs + e.tunedSavedUs;
      if (e.symmetricPerSecond <= 0 && e.tunedPerSecond <= 0 && e.missedPerSecond <= 0 && e.uncostedPerSecond <= 0)
        continue;
      ++out.communicators;
      out.savedUsPerSecond += saved;
      const std::string over = f.overInterval ? format("over %.1f s", f.rateSeconds)
                                              : format("since it was opened %.1f s ago", f.rateSeconds);
      std::string line = who + ", " + over + (saved >= 0 ? ": saves " : ": costs ") + msPerSecond(std::abs(saved)) +
                         " of all-reduce time a second";
      if (e.symmetricPerSecond > 0)
        line += format(" (%.0f symmetric all-reduces a second: stock NCCL %s, the kernels %s", e.symmetricPerSecond,
                       msPerSecond(e.stockUs).c_str(), msPerSecond(e.symmetricUs).c_str()) +
                (e.symmetricUs > 0 ? format(", %.2fx)", e.stockUs / e.symmetricUs) : std::string(")"));
      out.lines.push_back(line);
      for (const std::string& d : e.detail) out.lines.push_back(d);
      if (e.tunedPerSecond > 0)
        out.lines.push_back(format("     %.1f/s on NCCL with the table's configuration: ", e.tunedPerSecond) +
                            msPerSecond(e.tunedSavedUs) + " of that");
      if (e.missedPerSecond > 0)
        out.lines.push_back(format("     %.1f/s on NCCL that the kernels could take would save ", e.missedPerSecond) +
                            msPerSecond(e.missedSavedUs) +
                            " more a second (the communicator not set up, or its path off: symmem-stat --check)");
      if (e.capturedOnNccl > 0)
        out.lines.push_back(format("     %" PRIu64
                                   " all-reduces captured on NCCL: their graphs' replays are counted nowhere, so "
                                   "not here",
                                   e.capturedOnNccl));
      if (e.uncostedPerSecond > 0)
        out.lines.push_back(format("     %.1f/s at sizes or on paths %s has no time for (%s): not estimated",
                                   e.uncostedPerSecond, table.file.c_str(), e.uncostedExample.c_str()));
      if (s.gpuSampling == 0 && e.symmetricPerSecond > 0)
        out.lines.push_back(
            "     the GPU does not count here (SYMMEM_STATS_GPU=0): graph replays of the kernels are not counted, "
            "so this is a floor");
    }
  }
  if (out.communicators == 0) {
    out.lines.push_back(
        "nothing to estimate yet: no communicator of two or more ranks ran an all-reduce in the time measured (is the "
        "server up and serving?)");
  } else {
    out.lines.push_back(
        format("estimate: %s of all-reduce time saved a second, summed over the %d communicator "
               "rank(s) shown; the ranks of one communicator save it side by side, so one rank's "
               "figure is the job's, where its all-reduces are on the critical path",
               msPerSecond(out.savedUsPerSecond).c_str(), out.communicators));
  }
  return out;
}

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
// The fixed cost of one small symmetric all-reduce beside its floor, on one GPU: N ranks as threads of
// one process sharing the GPU (peers on the same device use each other's buffers directly), every
// variant and algorithm, 8 B - 64 KiB, back-to-back calls captured in a CUDA graph and launched eagerly,
// with the call order on and off. In the same run, the floors: an empty kernel in the same graph shape
// (N streams, one node per call), one flag round trip between two co-resident blocks, and NCCL at one
// rank. A benchmark, not a test: it reports medians with their spread and writes CSV
// (tools/bench/plot_floor.py draws it; docs/kernels.md, "Fixed cost").
//
//   symmem_floor_bench [--ranks 2,4,8] [--calls 64] [--replays 50] [--repeats 7] [--no-programmatic] [--csv FILE]
//                      [--paths one-shot-push,...,nccl-1rank] [--sizes 8,64,...] [--graph-only] [--timeout-ms MS]
//                      [--switches trigger-before-wait,record-every-call,seq-cst-announce,generic-one-block,
//                                 small-push-any-ranks] [--trace FILE]
//                      [--eager-unbounded] [--stats]
//
// --stats runs every ordered symmetric row again with the live statistics on: "+stats-sampled" as the
// plugin runs by default (SYMMEM_STATS_GPU=sampled: the host counts each call, the kernels time one
// execution in about 64), "+stats-every" as with SYMMEM_STATS_GPU=every (the kernels count and time
// every execution), "+stats-sampled-copied" with a thread copying the kernels' counts off the device
// every millisecond meanwhile (kernels/kernel_clock.cuh, plugin/stats/stats_publisher.h), and last
// "+no-stats-again": without statistics on communicators of their own, the spread between two sets of
// communicators that the rows above carry too, so that one run measures them.
// --switches runs the earlier forms of the per-call path (SymmetricConfig::costSwitches), so that one
// binary measures before and after. --trace FILE takes the one-shot push graph rows apart with the
// kernel's own timestamps (cost_trace.cuh) and writes the means per rank and size to FILE.
//
// Ranks sharing one GPU spin in kernels that wait for each other, so each rank's stream needs its own
// hardware queue: the bench asks for 32 (CUDA_DEVICE_MAX_CONNECTIONS, unless set), as the GPU tests
// do. With the default 8, two ranks' streams can share a queue, one rank's next kernel then blocks
// the other rank's current one behind it, and the waits end in a timeout (docs/kernels.md).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/device_view.h"
#include "kernels/programmatic_launch.h"
#include "kernels/symmetric_comm.h"
#include "plugin/stats/call_stats.h"
#include "plugin/stats/stats_publisher.h"
#include "tests/bench/bench_cuda_check.h"
#include "tests/gpu/rank_harness.h"

namespace {

using symmem::DataType;
using symmem::ReduceOp;
using symmem::SymVariant;
using symmem::kernels::Algorithm;
using symmem::kernels::KernelChoice;
using symmem::kernels::SymmetricComm;
using symmem::kernels::SymmetricConfig;
using symmem::testing::ShmAllGather;

struct Options {
  std::vector<int> ranks = {2, 4, 8};
  int calls = 64, replays = 50, repeats = 7;
  std::string csv = "floor.csv";
  bool programmatic = true;  // --no-programmatic: launch without programmatic stream serialization
  std::string paths;         // --paths one-shot-push,two-shot-pull,...: only those (default: all)
  std::vector<int> sizes = {8, 64, 512, 4096, 16384, 65536};
  bool eager = true;            // --graph-only: no eager runs
  bool eagerUnbounded = false;  // --eager-unbounded: no bound on the eager calls in flight (timeCalls)
  int64_t timeoutMs = 20000;
  uint32_t switches = 0;  // --switches: CostSwitch bits
  std::string switchNames = "none";
  std::string trace;   // --trace FILE: per-mark means of the one-shot push graph rows
  bool stats = false;  // --stats: the ordered symmetric rows again with the live statistics on
};

struct Stat {
  double median = 0, min = 0, max = 0;
};

Stat statOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

double usSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

__global__ void emptyKernel() {}

// The same, launched with programmatic stream serialization and making the kernels' handshake: the
// launch floor of a kernel that overlaps its launch with the previous one.
__global__ void emptyProgrammaticKernel() {
  symmem::kernels::device::waitForPreviousKernel();
  symmem::kernels::device::allowNextLaunch();
}

void launchEmptyProgrammatic(cudaStream_t s) {
  symmem::kernels::launchKernel(reinterpret_cast<const void*>(emptyProgrammaticKernel), 1, 32, true, s, nullptr);
}

// Two co-resident blocks pass a flag back and forth `trips` times through global memory.
__global__ void flagRoundTrips(volatile unsigned* flags, int trips) {
  if (threadIdx.x != 0) return;
  for (int i = 1; i <= trips; ++i) {
    if (blockIdx.x == 0) {
      flags[0] = i;
      while (flags[1] != static_cast<unsigned>(i)) {
      }
    } else {
      while (flags[0] != static_cast<unsigned>(i)) {
      }
      flags[1] = i;
    }
  }
}

// Per-call microseconds of `calls` back-to-back launches made by launch(stream) on each of n threads
// at once, captured once per thread and replayed (graph) or issued directly (eager); the slowest rank.
// Eager calls: each rank keeps at most two replays (2 x calls) in flight, waiting for the one before
// the last before it issues the next. Unbounded (--eager-unbounded), N threads issuing thousands of
// calls into one context at once ended, now and then, in peer timeouts at 2, 4 and 8 ranks sharing
// one H200, in eager rows only, with 8 hardware queues and with 32, before and after the kernel
// fixes. Suspected, not established: a rank far ahead holds a launch resource the context shares
// while its kernels wait for peers whose launches are behind (docs/kernels.md, "Timeouts found by
// this benchmark").
// Eager only: hostUs, if given, receives per repeat the slowest rank's host time per call of the first
// `calls` launches (the queue is empty then: what the host path itself costs).
template <typename Launch>
std::vector<double> timeCalls(int n, const Options& o, bool graph, ShmAllGather& shm, Launch&& launch,
                              std::vector<double>* hostUs = nullptr) {
  std::vector<double> perRepeat(o.repeats, 0.0);
  std::vector<std::thread> threads;
  std::vector<std::vector<double>> mine(n, std::vector<double>(o.repeats, 0.0));
  std::vector<std::vector<double>> host(n, std::vector<double>(o.repeats, 0.0));
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      BENCH_CHECK_CUDA(cudaSetDevice(0));
      cudaStream_t s;
      BENCH_CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      cudaEvent_t done[2];
      for (cudaEvent_t& e : done) BENCH_CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      cudaGraphExec_t exec = nullptr;
      if (graph) {
        cudaGraph_t g;
        BENCH_CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < o.calls; ++i) launch(r, s);
        BENCH_CHECK_CUDA(cudaStreamEndCapture(s, &g));
        BENCH_CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
        BENCH_CHECK_CUDA(cudaGraphDestroy(g));
        BENCH_CHECK_CUDA(cudaGraphLaunch(exec, s));  // warm-up
      } else {
        for (int i = 0; i < o.calls; ++i) launch(r, s);
      }
      BENCH_CHECK_CUDA(cudaStreamSynchronize(s));
      for (int k = 0; k < o.repeats; ++k) {
        shm.barrier(r);
        const auto t0 = std::chrono::steady_clock::now();
        for (int rep = 0; rep < o.replays; ++rep) {
          if (graph) {
            BENCH_CHECK_CUDA(cudaGraphLaunch(exec, s));
          } else {
            // Eager: at most two replays' calls in flight per rank (the comment above timeCalls).
            if (!o.eagerUnbounded && rep >= 2) BENCH_CHECK_CUDA(cudaEventSynchronize(done[rep % 2]));
            for (int i = 0; i < o.calls; ++i) launch(r, s);
            BENCH_CHECK_CUDA(cudaEventRecord(done[rep % 2], s));
          }
          if (rep == 0) host[r][k] = usSince(t0) / o.calls;
        }
        BENCH_CHECK_CUDA(cudaStreamSynchronize(s));
        mine[r][k] = usSince(t0) / (static_cast<double>(o.calls) * o.replays);
      }
      shm.barrier(r);
      if (exec) BENCH_CHECK_CUDA(cudaGraphExecDestroy(exec));
      for (cudaEvent_t& e : done) BENCH_CHECK_CUDA(cudaEventDestroy(e));
      BENCH_CHECK_CUDA(cudaStreamDestroy(s));
    });
  }
  for (std::thread& t : threads) t.join();
  if (hostUs) hostUs->assign(o.repeats, 0.0);
  for (int k = 0; k < o.repeats; ++k)
    for (int r = 0; r < n; ++r) {
      perRepeat[k] = std::max(perRepeat[k], mine[r][k]);
      if (hostUs) (*hostUs)[k] = std::max((*hostUs)[k], host[r][k]);
    }
  return perRepeat;
}

// Host time per call of `calls` launches on each of n streams, all made by one thread (rank after
// rank, call after call): the host path without N threads contending for one context.
template <typename Launch>
std::vector<double> oneThreadHostUs(int n, const Options& o, Launch&& launch) {
  BENCH_CHECK_CUDA(cudaSetDevice(0));
  std::vector<cudaStream_t> streams(n);
  for (auto& s : streams) BENCH_CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<double> us;
  for (int k = 0; k < o.repeats; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.calls; ++i)
      for (int r = 0; r < n; ++r) launch(r, streams[r]);
    us.push_back(usSince(t0) / (static_cast<double>(o.calls) * n));
    for (auto& s : streams) BENCH_CHECK_CUDA(cudaStreamSynchronize(s));
  }
  for (auto& s : streams) BENCH_CHECK_CUDA(cudaStreamDestroy(s));
  return us;
}

struct Row {
  int ranks;
  std::string path, mode;
  bool ordered;
  size_t bytes;
  Stat us;
};

FILE* gCsv = nullptr;
FILE* gTrace = nullptr;
double gCyclesPerNs = 0;  // SM clock, for the clock64 marks

// The marks of the last replay of a one-shot push graph (kTraceCalls calls, round % kTraceCalls each),
// taken apart per rank: means over the calls that follow another call of the same replay. Call c of
// every rank is the same round, so the ranks' globaltimer marks compare directly: how far behind the
// last peer's stores were issued (skew) and how long after them this rank saw the data (visibility).
void writeTrace(int n, size_t bytes, const std::vector<uint64_t*>& traces, int calls) {
  using symmem::kernels::kTraceCalls;
  using symmem::kernels::kTraceMarks;
  using symmem::kernels::kTraceWords;
  if (calls != kTraceCalls) {
    std::printf("  (trace needs --calls %d)\n", kTraceCalls);
    return;
  }
  enum { kEntry, kPrevDone, kRound, kSent, kArrived, kEnd };
  std::vector<std::vector<uint64_t>> all(n, std::vector<uint64_t>(static_cast<size_t>(kTraceCalls) * kTraceWords));
  for (int r = 0; r < n; ++r)
    BENCH_CHECK_CUDA(cudaMemcpy(all[r].data(), traces[r], all[r].size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  auto nsOf = [&](int r, int c, int m) {
    return static_cast<double>(all[r][static_cast<size_t>(c) * kTraceWords + m]);
  };
  for (int r = 0; r < n; ++r) {
    const std::vector<uint64_t>& t = all[r];
    auto ns = [&](int c, int m) { return nsOf(r, c, m); };
    auto cyc = [&](int c, int m) {
      return static_cast<double>(t[static_cast<size_t>(c) * kTraceWords + kTraceMarks + m]);
    };
    // The replay's first call: the earliest entry. Calls then follow round by round.
    int first = 0;
    for (int c = 1; c < kTraceCalls; ++c)
      if (ns(c, kEntry) < ns(first, kEntry)) first = c;
    // The SM clock as this rank's calls saw it: each call's cycles against its own globaltimer span
    // (clock64 counts per multiprocessor, so only within one call; the attribute's clock is the
    // highest the GPU may run at, not the one it ran at).
    double cycles = 0, spanNs = 0;
    for (int c = 0; c < kTraceCalls; ++c) {
      cycles += cyc(c, kEnd) - cyc(c, kPrevDone);
      spanNs += ns(c, kEnd) - ns(c, kPrevDone);
    }
    const double perNs = spanNs > 0 && cycles > 0 ? cycles / spanNs : gCyclesPerNs;
    constexpr int kSums = 11;
    double sum[kSums] = {};
    int pairs = 0;
    for (int j = 0; j + 1 < kTraceCalls; ++j) {
      const int c = (first + j) % kTraceCalls, d = (first + j + 1) % kTraceCalls;
      double lastPeerSent = 0;
      for (int q = 0; q < n; ++q)
        if (q != r) lastPeerSent = std::max(lastPeerSent, nsOf(q, d, kSent));
      sum[0] += ns(d, kPrevDone) - ns(c, kPrevDone);  // period
      sum[1] += ns(d, kPrevDone) - ns(d, kEntry);     // parked in the handshake (launch overlap)
      sum[2] += ns(d, kPrevDone) - ns(c, kEnd);       // end of one call to the next one's start
      sum[3] += (cyc(d, kRound) - cyc(d, kPrevDone)) / perNs;
      sum[4] += (cyc(d, kSent) - cyc(d, kRound)) / perNs;
      sum[5] += (cyc(d, kArrived) - cyc(d, kSent)) / perNs;
      sum[6] += (cyc(d, kEnd) - cyc(d, kArrived)) / perNs;
      sum[7] += ns(d, kEnd) - ns(d, kPrevDone);  // the kernel's own part, globaltimer
      sum[8] += static_cast<double>(t[static_cast<size_t>(d) * kTraceWords + 2 * kTraceMarks]);  // a count
      sum[9] += lastPeerSent - ns(d, kSent);      // > 0: the last peer issued its stores after mine
      sum[10] += ns(d, kArrived) - lastPeerSent;  // the last peer's stores issued -> seen here
      ++pairs;
    }
    double m[kSums];
    for (int k = 0; k < kSums; ++k) m[k] = sum[k] / pairs / (k == 8 ? 1.0 : 1000.0);  // ns to us; the count as it is
    std::printf(
        "  trace rank %d: period %.3f us = start-to-end %.3f (round record %.3f, send %.3f, wait for peers %.3f "
        "[last peer's stores %.3f later than mine, seen %.3f after them], reduce+records %.3f) + end-to-next-start "
        "%.3f; parked in handshake %.3f; poll rounds that missed %.2f; SM clock %.0f MHz\n",
        r, m[0], m[7], m[3], m[4], m[5], m[9], m[10], m[6], m[2], m[1], m[8], perNs * 1000);
    if (gTrace)
      std::fprintf(gTrace, "%d,%zu,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.3f,%.0f,%.4f,%.4f\n", n, bytes, r, m[0],
                   m[7], m[3], m[4], m[5], m[6], m[2], m[1], m[8], perNs * 1000, m[9], m[10]);
  }
}
void emit(const Row& row, double emptyUs) {
  std::printf("%2d ranks  %-22s %-5s order %-3s %6zu B  %7.3f us  (min %.3f, max %.3f)  %5.2fx empty\n", row.ranks,
              row.path.c_str(), row.mode.c_str(), row.ordered ? "on" : "off", row.bytes, row.us.median, row.us.min,
              row.us.max, emptyUs > 0 ? row.us.median / emptyUs : 0.0);
  std::fflush(stdout);
  if (gCsv)
    std::fprintf(gCsv, "%d,%s,%s,%d,%zu,%.4f,%.4f,%.4f,%.4f\n", row.ranks, row.path.c_str(), row.mode.c_str(),
                 row.ordered ? 1 : 0, row.bytes, row.us.median, row.us.min, row.us.max,
                 emptyUs > 0 ? row.us.median / emptyUs : 0.0);
}

// NCCL at one rank (a communicator of one: its all-reduce is a local copy), graph and eager.
void ncclOneRank(const Options& o) {
  ncclComm_t comm;
  int dev = 0;
  if (ncclCommInitAll(&comm, 1, &dev) != ncclSuccess) {
    std::printf("NCCL at one rank: ncclCommInitAll failed\n");
    return;
  }
  float *buf = nullptr, *dst = nullptr;  // out of place: in place at one rank NCCL does nothing at all
  BENCH_CHECK_CUDA(cudaMalloc(&buf, 64 << 10));
  BENCH_CHECK_CUDA(cudaMalloc(&dst, 64 << 10));
  ShmAllGather shm(1, 64);
  for (const bool graph : {true, false}) {
    for (size_t bytes : {size_t{8}, size_t{4096}, size_t{65536}}) {
      const auto us = timeCalls(1, o, graph, shm, [&](int, cudaStream_t s) {
        ncclAllReduce(buf, dst, bytes / 4, ncclFloat32, ncclSum, comm, s);
      });
      emit({1, "nccl-1rank", graph ? "graph" : "eager", false, bytes, statOf(us)}, 0);
      // NCCL's enqueue as one thread sees it, beside the symmetric path's host-1-thread rows.
      if (!graph)
        emit({1, "nccl-1rank", "host-1-thread", false, bytes,
              statOf(oneThreadHostUs(
                  1, o,
                  [&](int, cudaStream_t s) { ncclAllReduce(buf, dst, bytes / 4, ncclFloat32, ncclSum, comm, s); }))},
             0);
    }
  }
  BENCH_CHECK_CUDA(cudaFree(buf));
  BENCH_CHECK_CUDA(cudaFree(dst));
  ncclCommDestroy(comm);
}

// samplePeriod: 0, no statistics; else the live statistics on (the host's counts, the kernels' own,
// one execution in about samplePeriod timed). copying: a thread copies every rank's GPU counts off the
// device every millisecond meanwhile, 100 times as often as the plugin's publisher
// (plugin/stats/stats_publisher.h). again: rows of a second set of communicators without statistics.
void symmetric(int n, const Options& o, bool ordered, double emptyGraphUs, double emptyEagerUs,
               uint32_t samplePeriod = 0, bool copying = false, bool again = false) {
  const bool withStats = samplePeriod != 0;
  ShmAllGather shm(n, 4096, 60000);
  std::vector<std::unique_ptr<SymmetricComm>> comms(n);
  // With statistics: the plugin's own counters, one lease per rank, as the interposer holds them.
  std::unique_ptr<symmem::CallStats> callStats;
  std::vector<std::unique_ptr<symmem::CommCounters>> counters(n);
  if (withStats) {
    callStats = std::make_unique<symmem::CallStats>(symmem::stats::WrittenSegment::createPrivate("bench", "0"));
    for (int r = 0; r < n; ++r) counters[r] = callStats->lease(nullptr);
  }
  std::vector<float*> in(n), out(n);
  std::vector<uint64_t*> traces(n, nullptr);
  std::vector<std::thread> setup;
  std::atomic<int> failed{0};
  for (int r = 0; r < n; ++r) {
    setup.emplace_back([&, r] {
      BENCH_CHECK_CUDA(cudaSetDevice(0));
      SymmetricConfig c;
      c.rank = r;
      c.nRanks = n;
      c.device = 0;
      c.oneShotMaxBytes = 64 << 10;
      c.twoShotMaxBytes = 64 << 10;
      c.timeoutMs = o.timeoutMs;
      c.maxBlocks = 4;
      c.orderStreams = ordered;
      c.programmaticLaunch = o.programmatic;
      c.costSwitches = o.switches;
      // Halves (the first and second half of the ranks) where the halves variant runs: 4, 6, 8 ranks.
      c.halves = n >= 4 && n % 2 == 0;
      for (int q = 0; q < n; ++q) c.halfOf[q] = static_cast<uint8_t>(q >= n / 2 ? 1 : 0);
      if (!o.trace.empty()) {
        BENCH_CHECK_CUDA(cudaMalloc(&traces[r], symmem::kernels::kTraceCalls * symmem::kernels::kTraceWords * 8));
        c.costTrace = traces[r];
      }
      std::string why;
      comms[r] = SymmetricComm::create(
          c, [&shm, r](const void* a, void* b, size_t bytes) { return shm.allGather(r, a, b, bytes); }, &why);
      if (!comms[r]) {
        std::fprintf(stderr, "rank %d: %s\n", r, why.c_str());
        failed += 1;
      } else if (withStats && !comms[r]->publishKernelStats(counters[r]->gpuMirror(), samplePeriod)) {
        std::fprintf(stderr, "rank %d: the kernels' statistics could not be kept\n", r);
        failed += 1;
      }
      BENCH_CHECK_CUDA(cudaMalloc(&in[r], 64 << 10));
      BENCH_CHECK_CUDA(cudaMalloc(&out[r], 64 << 10));
      BENCH_CHECK_CUDA(cudaMemset(in[r], 0, 64 << 10));
    });
  }
  for (std::thread& t : setup) t.join();
  if (failed) return;
  symmem::StatsPublisher publisher(std::chrono::milliseconds(1));
  std::vector<std::unique_ptr<symmem::StatsPublisher::Registration>> copies;
  if (copying)
    for (int r = 0; r < n; ++r)
      copies.push_back(publisher.add([&comms, r] {
        symmem::stats::GpuCounts to;
        return comms[r]->copyKernelStats(&to, 500);
      }));
  struct Path {
    const char* name;
    KernelChoice kernel;
  };
  const Path paths[] = {{"one-shot push", {Algorithm::OneShot, SymVariant::Push}},
                        {"one-shot pull", {Algorithm::OneShot, SymVariant::Pull}},
                        {"one-shot staged", {Algorithm::OneShot, SymVariant::Staged}},
                        {"two-shot push", {Algorithm::TwoShot, SymVariant::Push}},
                        {"two-shot pull", {Algorithm::TwoShot, SymVariant::Pull}},
                        {"two-shot staged", {Algorithm::TwoShot, SymVariant::Staged}},
                        {"one-shot halves", {Algorithm::OneShot, SymVariant::Halves}},
                        {"two-shot halves", {Algorithm::TwoShot, SymVariant::Halves}}};
  // One call as the interposer makes it: the launch, then (with statistics) the host's count.
  auto call = [&](int r, cudaStream_t s, const KernelChoice& kernel, size_t bytes) {
    bool captured = false;
    comms[r]->allReduce(in[r], out[r], bytes / 4, DataType::Float32, ReduceOp::Sum, kernel, s, &captured);
    if (withStats)
      counters[r]->count(static_cast<symmem::stats::Route>(symmem::stats::kernelKind(
                             kernel.algorithm == Algorithm::TwoShot, static_cast<int>(kernel.variant))),
                         bytes, captured);
  };
  for (const Path& p : paths) {
    std::string key = p.name;
    const char* suffix = again               ? "+no-stats-again"
                         : !withStats        ? ""
                         : copying           ? "+stats-sampled-copied"
                         : samplePeriod == 1 ? "+stats-every"
                                             : "+stats-sampled";
    const std::string name = std::string(p.name) + suffix;
    std::replace(key.begin(), key.end(), ' ', '-');
    if (!o.paths.empty() && ("," + o.paths + ",").find("," + key + ",") == std::string::npos) continue;
    if (p.kernel.variant == SymVariant::Halves && !(n >= 4 && n % 2 == 0)) continue;  // no halves at this size
    for (const bool graph : {true, false}) {
      if (!graph && (!ordered || !o.eager)) continue;  // eager calls on one stream per rank are in order anyway
      for (const int size : o.sizes) {
        const auto bytes = static_cast<size_t>(size);
        std::vector<double> hostUs;
        const auto us = timeCalls(
            n, o, graph, shm, [&](int r, cudaStream_t s) { call(r, s, p.kernel, bytes); }, &hostUs);
        emit({n, name, graph ? "graph" : "eager", ordered, bytes, statOf(us)}, graph ? emptyGraphUs : emptyEagerUs);
        if (!graph) {
          emit({n, name, "host", ordered, bytes, statOf(hostUs)}, 0);
          emit({n, name, "host-1-thread", ordered, bytes,
                statOf(oneThreadHostUs(n, o, [&](int r, cudaStream_t s) { call(r, s, p.kernel, bytes); }))},
               0);
        }
        if (graph && !o.trace.empty() && key == "one-shot-push" && !withStats) writeTrace(n, bytes, traces, o.calls);
      }
    }
  }
  copies.clear();  // no copy once teardown begins
  std::vector<std::thread> teardown;
  for (int r = 0; r < n; ++r)
    teardown.emplace_back([&, r] {
      BENCH_CHECK_CUDA(cudaSetDevice(0));
      if (comms[r]->deviceStatus() != symmem::kernels::Status::Ok)
        std::fprintf(stderr, "rank %d: %s (waited for rank %d)\n", r,
                     symmem::kernels::statusName(comms[r]->deviceStatus()), comms[r]->waitedRank());
      comms[r].reset();
      cudaFree(in[r]);
      cudaFree(out[r]);
      if (traces[r]) cudaFree(traces[r]);
    });
  for (std::thread& t : teardown) t.join();
}

// The CUDA calls an eager all-reduce makes on the host (symmetric_order.cpp: capture query, the call
// order's wait and record, the launch with programmatic serialization), each timed alone on one thread
// and one stream: what the host path of one rank per GPU costs, which the eager rows of ranks sharing
// one GPU (N threads launching into one context at once) cannot show.
void hostPath(const Options& o) {
  BENCH_CHECK_CUDA(cudaSetDevice(0));
  cudaStream_t s;
  BENCH_CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e;
  BENCH_CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  BENCH_CHECK_CUDA(cudaEventRecord(e, s));
  constexpr int kCalls = 256;
  auto time = [&](const char* name, auto&& call) {
    std::vector<double> us;
    for (int k = 0; k < o.repeats; ++k) {
      BENCH_CHECK_CUDA(cudaStreamSynchronize(s));
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kCalls; ++i) call();
      us.push_back(usSince(t0) / kCalls);
    }
    BENCH_CHECK_CUDA(cudaStreamSynchronize(s));
    emit({1, name, "host", false, 0, statOf(us)}, 0);
  };
  time("host:cudaStreamGetCaptureInfo", [&] {
    cudaStreamCaptureStatus st;
    unsigned long long id;
    cudaStreamGetCaptureInfo(s, &st, &id, nullptr);
  });
  time("host:cudaGetDevice", [&] {
    int d;
    cudaGetDevice(&d);
  });
  time("host:cudaStreamWaitEvent", [&] { cudaStreamWaitEvent(s, e, 0); });
  time("host:cudaEventRecord", [&] { cudaEventRecord(e, s); });
  time("host:launch-programmatic", [&] { launchEmptyProgrammatic(s); });
  time("host:launch-plain", [&] { emptyKernel<<<1, 32, 0, s>>>(); });
  time("host:wait+launch+record", [&] {
    cudaStreamWaitEvent(s, e, 0);
    launchEmptyProgrammatic(s);
    cudaEventRecord(e, s);
  });
  BENCH_CHECK_CUDA(cudaEventDestroy(e));
  BENCH_CHECK_CUDA(cudaStreamDestroy(s));
}

std::vector<int> parseList(const char* text) {
  std::vector<int> v;
  for (const char* p = text; *p;) {
    char* end = nullptr;
    const long x = std::strtol(p, &end, 10);
    if (end == p || x < 1 || x > 8) {
      std::fprintf(stderr, "--ranks takes numbers 1-8 separated by commas\n");
      std::exit(2);
    }
    v.push_back(static_cast<int>(x));
    p = *end == ',' ? end + 1 : end;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--ranks" && next) {
      o.ranks = parseList(next);
      ++i;
    } else if (a == "--calls" && next) {
      o.calls = std::max(1, std::atoi(next));
      ++i;
    } else if (a == "--replays" && next) {
      o.replays = std::max(1, std::atoi(next));
      ++i;
    } else if (a == "--repeats" && next) {
      o.repeats = std::max(1, std::atoi(next));
      ++i;
    } else if (a == "--paths" && next) {
      o.paths = next;
      ++i;
    } else if (a == "--sizes" && next) {
      o.sizes.clear();
      for (const char* q = next; *q;) {
        char* end = nullptr;
        const long x = std::strtol(q, &end, 10);
        if (end == q || x < 4 || x > 65536) return 2;
        o.sizes.push_back(static_cast<int>(x));
        q = *end == ',' ? end + 1 : end;
      }
      ++i;
    } else if (a == "--eager-unbounded") {
      o.eagerUnbounded = true;
    } else if (a == "--graph-only") {
      o.eager = false;
    } else if (a == "--timeout-ms" && next) {
      o.timeoutMs = std::max(100, std::atoi(next));
      ++i;
    } else if (a == "--switches" && next) {
      o.switchNames = next;
      const std::pair<const char*, uint32_t> known[] = {{"trigger-before-wait", symmem::kernels::kTriggerBeforeWait},
                                                        {"record-every-call", symmem::kernels::kRecordEveryCall},
                                                        {"seq-cst-announce", symmem::kernels::kSeqCstAnnounce},
                                                        {"generic-one-block", symmem::kernels::kGenericOneBlock},
                                                        {"small-push-any-ranks", symmem::kernels::kSmallPushAnyRanks}};
      for (const auto& [name, bit] : known)
        if (("," + o.switchNames + ",").find("," + std::string(name) + ",") != std::string::npos) o.switches |= bit;
      ++i;
    } else if (a == "--trace" && next) {
      o.trace = next;
      ++i;
    } else if (a == "--stats") {
      o.stats = true;
    } else if (a == "--no-programmatic") {
      o.programmatic = false;
    } else if (a == "--csv" && next) {
      o.csv = next;
      ++i;
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--ranks 2,4,8] [--calls 64] [--replays 50] [--repeats 7] [--no-programmatic] [--csv FILE] "
          "[--paths LIST] [--sizes LIST] [--graph-only] [--timeout-ms MS] [--switches LIST] [--trace FILE] "
          "[--eager-unbounded] [--stats]\n",
          argv[0]);
      return 2;
    }
  }
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);  // before the first CUDA call (see the header)
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) {
    std::printf("no GPU: nothing to measure\n");
    return 0;
  }
  gCsv = std::fopen(o.csv.c_str(), "w");
  if (!gCsv) {
    std::fprintf(stderr, "cannot write %s\n", o.csv.c_str());
    return 1;
  }
  std::fprintf(gCsv, "ranks,path,mode,ordered,bytes,us_median,us_min,us_max,ratio_to_empty\n");
  cudaDeviceProp prop{};
  BENCH_CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  int clockKhz = 0;
  BENCH_CHECK_CUDA(cudaDeviceGetAttribute(&clockKhz, cudaDevAttrClockRate, 0));
  gCyclesPerNs = clockKhz > 0 ? clockKhz / 1e6 : 1.0;
  const char* connections = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  std::printf(
      "%s, capability %d.%d; %d calls per graph, %d replays, %d repeats (median, min, max); programmatic "
      "launch %s; switches %s; CUDA_DEVICE_MAX_CONNECTIONS=%s; SM clock %d MHz\n",
      prop.name, prop.major, prop.minor, o.calls, o.replays, o.repeats, o.programmatic ? "on" : "off",
      o.switchNames.c_str(), connections ? connections : "(unset)", clockKhz / 1000);
  if (!o.trace.empty()) {
    gTrace = std::fopen(o.trace.c_str(), "w");
    if (!gTrace) {
      std::fprintf(stderr, "cannot write %s\n", o.trace.c_str());
      return 1;
    }
    std::fprintf(gTrace,
                 "ranks,bytes,rank,period_us,start_to_end_us,round_record_us,send_us,wait_peers_us,reduce_records_us,"
                 "end_to_next_start_us,parked_in_handshake_us,missed_poll_rounds,sm_clock_mhz,peer_send_skew_us,"
                 "peer_visibility_us\n");
  }

  // Floors.
  unsigned* flags = nullptr;
  BENCH_CHECK_CUDA(cudaMalloc(&flags, 2 * sizeof(unsigned)));
  std::vector<double> trips;
  for (int k = 0; k < o.repeats; ++k) {
    BENCH_CHECK_CUDA(cudaMemset(flags, 0, 2 * sizeof(unsigned)));
    cudaEvent_t a, b;
    BENCH_CHECK_CUDA(cudaEventCreate(&a));
    BENCH_CHECK_CUDA(cudaEventCreate(&b));
    BENCH_CHECK_CUDA(cudaEventRecord(a));
    flagRoundTrips<<<2, 32>>>(flags, 10000);
    BENCH_CHECK_CUDA(cudaEventRecord(b));
    BENCH_CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    BENCH_CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    trips.push_back(ms * 1000.0 / 10000);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  BENCH_CHECK_CUDA(cudaFree(flags));
  emit({1, "flag-round-trip", "kernel", false, 4, statOf(trips)}, 0);
  if (o.paths.empty() || ("," + o.paths + ",").find(",nccl-1rank,") != std::string::npos) ncclOneRank(o);
  if (o.eager) hostPath(o);
  for (int n : o.ranks) {
    ShmAllGather shm(n, 64);
    const Stat emptyGraph =
        statOf(timeCalls(n, o, true, shm, [](int, cudaStream_t s) { emptyKernel<<<1, 32, 0, s>>>(); }));
    const Stat emptyEager =
        statOf(timeCalls(n, o, false, shm, [](int, cudaStream_t s) { emptyKernel<<<1, 32, 0, s>>>(); }));
    const Stat emptyProgrammatic =
        statOf(timeCalls(n, o, true, shm, [](int, cudaStream_t s) { launchEmptyProgrammatic(s); }));
    emit({n, "empty-kernel", "graph", false, 0, emptyGraph}, emptyGraph.median);
    emit({n, "empty-kernel-programmatic", "graph", false, 0, emptyProgrammatic}, emptyGraph.median);
    emit({n, "empty-kernel", "eager", false, 0, emptyEager}, emptyEager.median);
    for (const bool ordered : {true, false}) {
      symmetric(n, o, ordered, emptyGraph.median, emptyEager.median);
      if (ordered && o.stats) {
        const uint32_t sampled = symmem::stats::kDefaultSamplePeriod;
        symmetric(n, o, ordered, emptyGraph.median, emptyEager.median, sampled);
        symmetric(n, o, ordered, emptyGraph.median, emptyEager.median, 1);
        symmetric(n, o, ordered, emptyGraph.median, emptyEager.median, sampled, true);
        symmetric(n, o, ordered, emptyGraph.median, emptyEager.median, 0, false, true);
      }
    }
  }
  std::fclose(gCsv);
  if (gTrace) std::fclose(gTrace);
  std::printf("wrote %s\n", o.csv.c_str());
  return 0;
}

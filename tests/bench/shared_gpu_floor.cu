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
#include <vector>

#include "kernels/symmetric_comm.h"
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
  bool eager = true;  // --graph-only: no eager runs
  int64_t timeoutMs = 20000;
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

#define CHECK_CUDA(x)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

__global__ void emptyKernel() {}

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
template <typename Launch>
std::vector<double> timeCalls(int n, const Options& o, bool graph, ShmAllGather& shm, Launch&& launch) {
  std::vector<double> perRepeat(o.repeats, 0.0);
  std::vector<std::thread> threads;
  std::vector<std::vector<double>> mine(n, std::vector<double>(o.repeats, 0.0));
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      CHECK_CUDA(cudaSetDevice(0));
      cudaStream_t s;
      CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      cudaGraphExec_t exec = nullptr;
      if (graph) {
        cudaGraph_t g;
        CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < o.calls; ++i) launch(r, s);
        CHECK_CUDA(cudaStreamEndCapture(s, &g));
        CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
        CHECK_CUDA(cudaGraphDestroy(g));
        CHECK_CUDA(cudaGraphLaunch(exec, s));  // warm-up
      } else {
        for (int i = 0; i < o.calls; ++i) launch(r, s);
      }
      CHECK_CUDA(cudaStreamSynchronize(s));
      for (int k = 0; k < o.repeats; ++k) {
        shm.barrier(r);
        const auto t0 = std::chrono::steady_clock::now();
        for (int rep = 0; rep < o.replays; ++rep) {
          if (graph)
            CHECK_CUDA(cudaGraphLaunch(exec, s));
          else
            for (int i = 0; i < o.calls; ++i) launch(r, s);
        }
        CHECK_CUDA(cudaStreamSynchronize(s));
        mine[r][k] = usSince(t0) / (static_cast<double>(o.calls) * o.replays);
      }
      shm.barrier(r);
      if (exec) CHECK_CUDA(cudaGraphExecDestroy(exec));
      CHECK_CUDA(cudaStreamDestroy(s));
    });
  }
  for (std::thread& t : threads) t.join();
  for (int k = 0; k < o.repeats; ++k)
    for (int r = 0; r < n; ++r) perRepeat[k] = std::max(perRepeat[k], mine[r][k]);
  return perRepeat;
}

struct Row {
  int ranks;
  std::string path, mode;
  bool ordered;
  size_t bytes;
  Stat us;
};

FILE* gCsv = nullptr;
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
  CHECK_CUDA(cudaMalloc(&buf, 64 << 10));
  CHECK_CUDA(cudaMalloc(&dst, 64 << 10));
  ShmAllGather shm(1, 64);
  for (const bool graph : {true, false}) {
    for (size_t bytes : {size_t{8}, size_t{4096}, size_t{65536}}) {
      const auto us = timeCalls(1, o, graph, shm, [&](int, cudaStream_t s) {
        ncclAllReduce(buf, dst, bytes / 4, ncclFloat32, ncclSum, comm, s);
      });
      emit({1, "nccl-1rank", graph ? "graph" : "eager", false, bytes, statOf(us)}, 0);
    }
  }
  CHECK_CUDA(cudaFree(buf));
  CHECK_CUDA(cudaFree(dst));
  ncclCommDestroy(comm);
}

void symmetric(int n, const Options& o, bool ordered, double emptyGraphUs, double emptyEagerUs) {
  ShmAllGather shm(n, 4096, 60000);
  std::vector<std::unique_ptr<SymmetricComm>> comms(n);
  std::vector<float*> in(n), out(n);
  std::vector<std::thread> setup;
  std::atomic<int> failed{0};
  for (int r = 0; r < n; ++r) {
    setup.emplace_back([&, r] {
      CHECK_CUDA(cudaSetDevice(0));
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
      std::string why;
      comms[r] = SymmetricComm::create(
          c, [&shm, r](const void* a, void* b, size_t bytes) { return shm.allGather(r, a, b, bytes); }, &why);
      if (!comms[r]) {
        std::fprintf(stderr, "rank %d: %s\n", r, why.c_str());
        failed += 1;
      }
      CHECK_CUDA(cudaMalloc(&in[r], 64 << 10));
      CHECK_CUDA(cudaMalloc(&out[r], 64 << 10));
      CHECK_CUDA(cudaMemset(in[r], 0, 64 << 10));
    });
  }
  for (std::thread& t : setup) t.join();
  if (failed) return;
  struct Path {
    const char* name;
    KernelChoice kernel;
  };
  const Path paths[] = {{"one-shot push", {Algorithm::OneShot, SymVariant::Push}},
                        {"one-shot pull", {Algorithm::OneShot, SymVariant::Pull}},
                        {"one-shot staged", {Algorithm::OneShot, SymVariant::Staged}},
                        {"two-shot push", {Algorithm::TwoShot, SymVariant::Push}},
                        {"two-shot pull", {Algorithm::TwoShot, SymVariant::Pull}},
                        {"two-shot staged", {Algorithm::TwoShot, SymVariant::Staged}}};
  for (const Path& p : paths) {
    std::string key = p.name;
    std::replace(key.begin(), key.end(), ' ', '-');
    if (!o.paths.empty() && ("," + o.paths + ",").find("," + key + ",") == std::string::npos) continue;
    for (const bool graph : {true, false}) {
      if (!graph && (!ordered || !o.eager)) continue;  // eager calls on one stream per rank are in order anyway
      for (const int size : o.sizes) {
        const auto bytes = static_cast<size_t>(size);
        const auto us = timeCalls(n, o, graph, shm, [&](int r, cudaStream_t s) {
          comms[r]->allReduce(in[r], out[r], bytes / 4, DataType::Float32, ReduceOp::Sum, p.kernel, s);
        });
        emit({n, p.name, graph ? "graph" : "eager", ordered, bytes, statOf(us)}, graph ? emptyGraphUs : emptyEagerUs);
      }
    }
  }
  std::vector<std::thread> teardown;
  for (int r = 0; r < n; ++r)
    teardown.emplace_back([&, r] {
      CHECK_CUDA(cudaSetDevice(0));
      if (comms[r]->deviceStatus() != symmem::kernels::Status::Ok)
        std::fprintf(stderr, "rank %d: %s (waited for rank %d)\n", r,
                     symmem::kernels::statusName(comms[r]->deviceStatus()), comms[r]->waitedRank());
      comms[r].reset();
      cudaFree(in[r]);
      cudaFree(out[r]);
    });
  for (std::thread& t : teardown) t.join();
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
    } else if (a == "--graph-only") {
      o.eager = false;
    } else if (a == "--timeout-ms" && next) {
      o.timeoutMs = std::max(100, std::atoi(next));
      ++i;
    } else if (a == "--no-programmatic") {
      o.programmatic = false;
    } else if (a == "--csv" && next) {
      o.csv = next;
      ++i;
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--ranks 2,4,8] [--calls 64] [--replays 50] [--repeats 7] [--no-programmatic] [--csv FILE]\n",
          argv[0]);
      return 2;
    }
  }
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
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf(
      "%s, capability %d.%d; %d calls per graph, %d replays, %d repeats (median, min, max); programmatic "
      "launch %s\n",
      prop.name, prop.major, prop.minor, o.calls, o.replays, o.repeats, o.programmatic ? "on" : "off");

  // Floors.
  unsigned* flags = nullptr;
  CHECK_CUDA(cudaMalloc(&flags, 2 * sizeof(unsigned)));
  std::vector<double> trips;
  for (int k = 0; k < o.repeats; ++k) {
    CHECK_CUDA(cudaMemset(flags, 0, 2 * sizeof(unsigned)));
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    CHECK_CUDA(cudaEventRecord(a));
    flagRoundTrips<<<2, 32>>>(flags, 10000);
    CHECK_CUDA(cudaEventRecord(b));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    trips.push_back(ms * 1000.0 / 10000);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  CHECK_CUDA(cudaFree(flags));
  emit({1, "flag-round-trip", "kernel", false, 4, statOf(trips)}, 0);
  if (o.paths.empty()) ncclOneRank(o);
  for (int n : o.ranks) {
    ShmAllGather shm(n, 64);
    const Stat emptyGraph =
        statOf(timeCalls(n, o, true, shm, [](int, cudaStream_t s) { emptyKernel<<<1, 32, 0, s>>>(); }));
    const Stat emptyEager =
        statOf(timeCalls(n, o, false, shm, [](int, cudaStream_t s) { emptyKernel<<<1, 32, 0, s>>>(); }));
    emit({n, "empty-kernel", "graph", false, 0, emptyGraph}, emptyGraph.median);
    emit({n, "empty-kernel", "eager", false, 0, emptyEager}, emptyEager.median);
    for (const bool ordered : {true, false}) symmetric(n, o, ordered, emptyGraph.median, emptyEager.median);
  }
  std::fclose(gCsv);
  std::printf("wrote %s\n", o.csv.c_str());
  return 0;
}

// symmem-bench: side-by-side all-reduce latency of stock NCCL (plain buffers), NCCL's symmetric
// windows, and this project's one-shot and two-shot kernels, eager and under CUDA graphs.
//
// One process per GPU, forked before any CUDA or NCCL call (the parent makes none); rank 0 gets the
// ncclUniqueId and hands it to the others through an anonymous shared mapping created before fork.
// Each size: every path's result is verified once (integer-valued data, exact), then timed: eager
// (`iters` calls back to back between CUDA events) and graph (`iters` calls captured in one graph,
// one replay between events), `reps` repetitions each, median per-call time. In place, like NCCL's
// own symmetric-kernel numbers. Rank 0 prints the table and writes the CSV.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/latency_probe.h"
#include "kernels/symmetric_comm.h"
#include "tools/bench_data.h"
#include "tools/bench_ranks.h"
#include "tools/bench_timing.h"

namespace {

using symmem::DataType;
using symmem::ReduceOp;
using symmem::kernels::Algorithm;
using symmem::kernels::SymmetricComm;
using symmem::kernels::SymmetricConfig;
namespace bench = symmem::bench;

struct Options {
  size_t minBytes = 8;
  size_t maxBytes = 64u << 20;
  int factor = 2;
  std::string dtype = "bf16";
  std::string csv;
  int iters = 200;
  int reps = 7;
  int nGpus = 0;
  size_t oneShotMax = 1u << 20;
  size_t twoShotMax = 64u << 20;
  int maxBlocks = 0;
  int64_t timeoutMs = 10000;
  int timeoutSec = 540;
  bool eager = true;
  bool pdl = true;
  bool streamOrder = true;
};

void usage() {
  std::fprintf(stderr,
               "usage: symmem-bench [-b MIN] [-e MAX] [-f FACTOR] [--dtype bf16|fp16|fp32] [--csv PATH]\n"
               "                    [--iters N] [--reps N] [--ngpus N] [--one-shot-max BYTES] [--two-shot-max BYTES]\n"
               "                    [--max-blocks N] [--no-pdl] [--no-stream-order] [--no-eager]\n"
               "                    [--timeout-s S]\n"
               "sizes accept K/M/G suffixes; defaults: -b 8 -e 64M -f 2, bf16 sum, 200 iters, 7 reps\n");
}

size_t parseSize(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end != nullptr) {
    if (*end == 'K' || *end == 'k') v *= 1024;
    else if (*end == 'M' || *end == 'm') v *= 1024.0 * 1024;
    else if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  }
  return static_cast<size_t>(v);
}

bool parseArgs(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "-h" || a == "--help") return false;
    if (a == "--no-eager") { o.eager = false; continue; }
    if (a == "--no-pdl") { o.pdl = false; continue; }
    if (a == "--no-stream-order") { o.streamOrder = false; continue; }
    if ((v = next()) == nullptr) return false;
    if (a == "-b") o.minBytes = parseSize(v);
    else if (a == "-e") o.maxBytes = parseSize(v);
    else if (a == "-f") o.factor = std::atoi(v);
    else if (a == "--dtype") o.dtype = v;
    else if (a == "--csv") o.csv = v;
    else if (a == "--iters") o.iters = std::atoi(v);
    else if (a == "--reps") o.reps = std::atoi(v);
    else if (a == "--ngpus") o.nGpus = std::atoi(v);
    else if (a == "--one-shot-max") o.oneShotMax = parseSize(v);
    else if (a == "--two-shot-max") o.twoShotMax = parseSize(v);
    else if (a == "--max-blocks") o.maxBlocks = std::atoi(v);
    else if (a == "--timeout-s") o.timeoutSec = std::atoi(v);
    else return false;
  }
  return o.factor >= 2 && o.iters > 0 && o.reps > 0 && o.minBytes > 0 && o.maxBytes >= o.minBytes &&
         (o.dtype == "bf16" || o.dtype == "fp16" || o.dtype == "fp32");
}

#define NCCL_CHECK(call)                                                                          \
  do {                                                                                            \
    const ncclResult_t r_ = (call);                                                               \
    if (r_ != ncclSuccess) {                                                                      \
      std::fprintf(stderr, "[rank %d] %s:%d %s: %s\n", rank, __FILE__, __LINE__, #call, ncclGetErrorString(r_)); \
      std::exit(3);                                                                               \
    }                                                                                             \
  } while (0)

struct Path {
  const char* name;
  int kind;  // 0 NCCL plain, 1 NCCL window, 2 one-shot, 3 two-shot
};
const Path kPaths[] = {{"nccl", 0}, {"nccl-win", 1}, {"one-shot", 2}, {"two-shot", 3}};

struct Result {
  double eagerUs = NAN, graphUs = NAN;
  long long wrong = -1;
};

int runRank(int rank, int n, const Options& o, bench::RankRendezvous* shared) {
  CUDA_CHECK(cudaSetDevice(rank));
  ncclUniqueId id;
  if (!bench::exchangeUniqueId(*shared, rank, [&](ncclUniqueId* made) { NCCL_CHECK(ncclGetUniqueId(made)); }, &id))
    return 4;
  ncclComm_t comm;
  NCCL_CHECK(ncclCommInitRank(&comm, n, id, rank));
  bench::RankBarrier barrier(shared, rank, n);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  const bool bf16 = o.dtype == "bf16";
  const size_t elem = o.dtype == "fp32" ? 4 : 2;
  const bench::ElementFormat format{elem, bf16};
  const ncclDataType_t ncclType = o.dtype == "fp32" ? ncclFloat32 : bf16 ? ncclBfloat16 : ncclFloat16;
  const DataType ourType = o.dtype == "fp32" ? DataType::Float32 : bf16 ? DataType::Bfloat16 : DataType::Float16;
  const size_t bufBytes = std::max<size_t>(o.maxBytes, 4096);
  void* plain = nullptr;
  CUDA_CHECK(cudaMalloc(&plain, bufBytes));
  void* windowBuf = nullptr;
  ncclWindow_t window = nullptr;
  const size_t winBytes = (bufBytes + 4095) / 4096 * 4096;
  NCCL_CHECK(ncclMemAlloc(&windowBuf, winBytes));
  NCCL_CHECK(ncclCommWindowRegister(comm, windowBuf, winBytes, &window, NCCL_WIN_COLL_SYMMETRIC));

  SymmetricConfig cfg;
  cfg.rank = rank;
  cfg.nRanks = n;
  cfg.device = rank;
  cfg.oneShotMaxBytes = std::min(o.oneShotMax, o.maxBytes);
  cfg.twoShotMaxBytes = std::min(o.twoShotMax, o.maxBytes);
  cfg.timeoutMs = o.timeoutMs;
  cfg.maxBlocks = o.maxBlocks;
  cfg.programmaticLaunch = o.pdl;
  cfg.orderStreams = o.streamOrder;
  std::string why;
  auto allGather = [&](const void* send, void* recv, size_t bytes) {
    void *dSend = nullptr, *dRecv = nullptr;
    bool ok = cudaMalloc(&dSend, bytes) == cudaSuccess && cudaMalloc(&dRecv, bytes * n) == cudaSuccess &&
              cudaMemcpy(dSend, send, bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
              ncclAllGather(dSend, dRecv, bytes, ncclChar, comm, stream) == ncclSuccess &&
              cudaStreamSynchronize(stream) == cudaSuccess &&
              cudaMemcpy(recv, dRecv, bytes * n, cudaMemcpyDeviceToHost) == cudaSuccess;
    cudaFree(dSend);
    cudaFree(dRecv);
    return ok;
  };
  auto ours = SymmetricComm::create(cfg, allGather, &why);
  if (!ours && rank == 0) std::fprintf(stderr, "symmetric path unavailable: %s\n", why.c_str());

  FILE* csv = nullptr;
  if (rank == 0 && !o.csv.empty()) {
    csv = std::fopen(o.csv.c_str(), "w");
    if (csv == nullptr) std::fprintf(stderr, "cannot write %s\n", o.csv.c_str());
    else std::fprintf(csv, "bytes,dtype,ranks,path,mode,median_us,min_us,max_us,wrong\n");
  }
  int ncclVersion = 0;
  ncclGetVersion(&ncclVersion);
  if (rank == 0) {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    std::printf("# symmem-bench: %d x %s, NCCL %d, CUDA runtime %d, driver %d, %s sum, in place, %d calls x %d reps, "
                "max blocks %d, programmatic launch %s, cross-stream order %s\n",
                n, prop.name, ncclVersion, rt, drv, o.dtype.c_str(), o.iters, o.reps, o.maxBlocks, o.pdl ? "on" : "off",
                o.streamOrder ? "on" : "off");
  }

  // ---- floor: launch cost of an empty kernel in a graph, one-way peer store latency ----------------
  {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    double emptyUs[2] = {0, 0};
    for (int programmatic = 0; programmatic < 2; ++programmatic) {
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < o.iters; ++i) CUDA_CHECK(symmem::kernels::launchEmptyKernel(programmatic != 0, stream));
      CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
      CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      CUDA_CHECK(cudaGraphLaunch(exec, stream));
      std::vector<double> us;
      for (int rep = 0; rep < o.reps; ++rep) {
        CUDA_CHECK(cudaEventRecord(start, stream));
        CUDA_CHECK(cudaGraphLaunch(exec, stream));
        CUDA_CHECK(cudaEventRecord(stop, stream));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        us.push_back(ms * 1000.0 / o.iters);
      }
      std::sort(us.begin(), us.end());
      emptyUs[programmatic] = us[us.size() / 2];
      CUDA_CHECK(cudaGraphExecDestroy(exec));
      CUDA_CHECK(cudaGraphDestroy(graph));
    }
    // Ping-pong between ranks 0 and 1 through CUDA IPC mappings.
    uint32_t* flag = nullptr;
    CUDA_CHECK(cudaMalloc(&flag, 4096));
    CUDA_CHECK(cudaMemset(flag, 0, 4096));
    cudaIpcMemHandle_t handle;
    CUDA_CHECK(cudaIpcGetMemHandle(&handle, flag));
    std::vector<cudaIpcMemHandle_t> handles(n);
    double oneWayUs = NAN;
    if (allGather(&handle, handles.data(), sizeof(handle)) && rank < 2) {
      void* peer = nullptr;
      CUDA_CHECK(cudaIpcOpenMemHandle(&peer, handles[1 - rank], cudaIpcMemLazyEnablePeerAccess));
      const int iterations = 20000;
      barrier.wait();
      CUDA_CHECK(cudaEventRecord(start, stream));
      CUDA_CHECK(symmem::kernels::launchPingPong(flag, static_cast<uint32_t*>(peer), iterations, rank == 0, stream));
      CUDA_CHECK(cudaEventRecord(stop, stream));
      CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      oneWayUs = ms * 1000.0 / (2.0 * iterations);
      barrier.wait();
      CUDA_CHECK(cudaIpcCloseMemHandle(peer));
    } else {
      barrier.wait();
      barrier.wait();
    }
    cudaFree(flag);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    if (rank == 0) {
      std::printf("# floor: empty kernel in a graph %.2f us (programmatic launch) / %.2f us (plain); one-way 16-byte "
                  "peer store latency %.2f us\n",
                  emptyUs[1], emptyUs[0], oneWayUs);
      if (csv != nullptr) {
        std::fprintf(csv, "0,%s,%d,empty-kernel,graph,%.3f,,,0\n", o.dtype.c_str(), n, emptyUs[0]);
        std::fprintf(csv, "0,%s,%d,empty-kernel-programmatic,graph,%.3f,,,0\n", o.dtype.c_str(), n, emptyUs[1]);
        std::fprintf(csv, "16,%s,%d,peer-store-one-way,kernel,%.3f,,,0\n", o.dtype.c_str(), n, oneWayUs);
      }
    }
  }

  std::map<size_t, std::map<int, Result>> results;
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= o.factor) {
    const size_t count = bytes / elem;
    if (count == 0) continue;
    for (const Path& p : kPaths) {
      if ((p.kind == 2 || p.kind == 3) && !ours) continue;
      if (p.kind == 2 && bytes > cfg.oneShotMaxBytes) continue;
      if (p.kind == 3 && bytes > cfg.twoShotMaxBytes) continue;
      void* buf = p.kind == 1 ? windowBuf : plain;
      auto call = [&]() -> bool {
        if (p.kind <= 1) return ncclAllReduce(buf, buf, count, ncclType, ncclSum, comm, stream) == ncclSuccess;
        return ours->allReduce(buf, buf, count, ourType, ReduceOp::Sum,
                               p.kind == 2 ? Algorithm::OneShot : Algorithm::TwoShot, stream) ==
               symmem::kernels::Status::Ok;
      };
      if (rank == 0) std::fprintf(stderr, "\r[symmem-bench] %10zu B %-9s", bytes, p.name);
      Result r;
      // Verify once: integer inputs, exact sums.
      std::vector<char> raw = bench::makeInput(rank, count, format);
      CUDA_CHECK(cudaMemcpy(buf, raw.data(), count * elem, cudaMemcpyHostToDevice));
      barrier.wait();
      if (!call()) {
        std::fprintf(stderr, "[rank %d] %s failed at %zu bytes\n", rank, p.name, bytes);
        return 5;
      }
      CUDA_CHECK(cudaStreamSynchronize(stream));
      CUDA_CHECK(cudaMemcpy(raw.data(), buf, count * elem, cudaMemcpyDeviceToHost));
      r.wrong = bench::countWrongSum(raw, count, n, format);

      bench::BatchTimer timer(rank, barrier, stream);
      auto timeReps = [&](const std::function<void()>& body) { return timer.time(o.reps, o.iters, body); };
      auto record = [&](const char* mode, const std::vector<double>& us) {
        if (csv != nullptr)
          std::fprintf(csv, "%zu,%s,%d,%s,%s,%.3f,%.3f,%.3f,%lld\n", bytes, o.dtype.c_str(), n, p.name, mode,
                       us[us.size() / 2], us.front(), us.back(), r.wrong);
      };
      if (o.eager) {
        for (int i = 0; i < 20; ++i) call();
        const auto us = timeReps([&] {
          for (int i = 0; i < o.iters; ++i) call();
        });
        r.eagerUs = bench::medianOfSorted(us);
        record("eager", us);
      }
      {
        bench::CapturedBatch batch(rank, stream, o.iters, call);
        barrier.wait();
        batch.replay();  // warm-up replay
        CUDA_CHECK(cudaStreamSynchronize(stream));
        const auto us = timeReps([&] { batch.replay(); });
        r.graphUs = bench::medianOfSorted(us);
        record("graph", us);
      }  // the graph goes here, before any ncclCommDestroy (it can hang otherwise)
      results[bytes][p.kind] = r;
      if (ours && ours->deviceStatus() != symmem::kernels::Status::Ok) {
        std::fprintf(stderr, "[rank %d] symmetric path reports %s\n", rank,
                     symmem::kernels::statusName(ours->deviceStatus()));
        return 6;
      }
    }
  }
  if (rank == 0) {
    std::fprintf(stderr, "\n");
    auto cell = [](double v) {
      char b[32];
      if (std::isnan(v)) std::snprintf(b, sizeof b, "%9s", "-");
      else std::snprintf(b, sizeof b, "%9.2f", v);
      return std::string(b);
    };
    std::printf("\n%-10s | %s graph (us) %28s | best ours vs | %s eager (us) %28s | wrong\n", "bytes", "", "", "", "");
    std::printf("%-10s |%9s %9s %9s %9s | %6s %6s |%9s %9s %9s %9s |\n", "", "nccl", "nccl-win", "one-shot",
                "two-shot", "nccl", "win", "nccl", "nccl-win", "one-shot", "two-shot");
    for (auto& [bytes, row] : results) {
      auto get = [&](int k, bool graph) {
        auto it = row.find(k);
        return it == row.end() ? NAN : (graph ? it->second.graphUs : it->second.eagerUs);
      };
      double best = NAN;
      for (int k : {2, 3})
        if (!std::isnan(get(k, true)) && (std::isnan(best) || get(k, true) < best)) best = get(k, true);
      long long wrong = 0;
      for (auto& [k, r] : row) wrong += r.wrong;
      std::printf("%-10zu |%s%s%s%s | %6.2f %6.2f |%s%s%s%s | %lld\n", bytes, cell(get(0, true)).c_str(),
                  cell(get(1, true)).c_str(), cell(get(2, true)).c_str(), cell(get(3, true)).c_str(),
                  best / get(0, true), best / get(1, true), cell(get(0, false)).c_str(), cell(get(1, false)).c_str(),
                  cell(get(2, false)).c_str(), cell(get(3, false)).c_str(), wrong);
    }
    std::fflush(stdout);
  }
  if (csv != nullptr) std::fclose(csv);
  long long totalWrong = 0;
  for (auto& [bytes, row] : results)
    for (auto& [k, r] : row) totalWrong += r.wrong;
  barrier.wait();
  ours.reset();
  ncclCommWindowDeregister(comm, window);
  ncclMemFree(windowBuf);
  cudaFree(plain);
  ncclCommDestroy(comm);
  return totalWrong == 0 ? 0 : 7;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parseArgs(argc, argv, o)) {
    usage();
    return 1;
  }
  // NVLink SHARP / multicast stays off (it needs cuMulticastCreate, which this tool never uses).
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  const int n = o.nGpus > 0 ? o.nGpus : bench::countGpuDeviceNodes();
  if (n < 2) {
    std::fprintf(stderr, "symmem-bench: needs at least 2 GPUs (found %d; pass --ngpus)\n", n);
    return 1;
  }
  bench::RankRendezvous* shared = bench::mapRendezvous();
  if (shared == nullptr) return 1;
  return bench::runForkedRanks(n, "symmem-bench", o.timeoutSec, [&](int r) { return runRank(r, n, o, shared); });
}

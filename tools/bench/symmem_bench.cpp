// SPDX-License-Identifier: Apache-2.0
// symmem-bench: side-by-side all-reduce latency of stock NCCL (plain buffers), NCCL's symmetric
// windows, and this project's one-shot and two-shot kernels in each variant asked (push, pull, staged,
// halves: core/sym_variant.h), eager and under CUDA graphs. The paths and the table: tools/bench/paths.h.
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
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/latency_probe.h"
#include "kernels/symmetric_comm.h"
#include "plugin/nccl/record_gather.h"
#include "plugin/process/process.h"
#include "tools/bench/options.h"
#include "tools/bench/paths.h"
#include "tools/common/checked_data.h"
#include "tools/common/graph_timing.h"
#include "tools/common/rank_halves.h"
#include "tools/common/rank_rendezvous.h"

namespace {

using symmem::ReduceOp;
using symmem::kernels::Algorithm;
using symmem::kernels::KernelChoice;
using symmem::kernels::SymmetricComm;
using symmem::kernels::SymmetricConfig;
namespace bench = symmem::bench;
namespace harness = symmem::harness;

using bench::BenchPath;
using bench::PathKind;
using bench::PathResult;
using bench::Results;
using Options = symmem::BenchOptions;

// An NCCL failure ends the rank with exit code 3 (a CUDA failure: 2, tools/common/graph_timing.h). Expects
// `rank` in scope.
#define NCCL_CHECK(call)                                                                                             \
  do {                                                                                                               \
    const ncclResult_t r_ = (call);                                                                                  \
    if (r_ != ncclSuccess) harness::endRankAfterFailure(rank, __FILE__, __LINE__, #call, ncclGetErrorString(r_), 3); \
  } while (0)

// ---- What is measured --------------------------------------------------------------------------

// What bounds any all-reduce kernel on this machine (kernels/latency_probe.h).
struct Floor {
  double emptyKernelUs = 0;              // in a graph, plain launch
  double emptyKernelProgrammaticUs = 0;  // in a graph, programmatic launch
  double peerStoreOneWayUs = NAN;        // ranks 0 and 1; NaN when the handle exchange failed
};

// One rank's side of the run: its communicator and stream, the two buffers, our kernels.
struct RankRun {
  RankRun(int rank, int nRanks, const Options& options, const symmem::RankHalves& halves,
          harness::RankRendezvous* shared)
      : rank(rank),
        nRanks(nRanks),
        o(options),
        halves(halves),
        type(harness::elementTypeOf(options.dtype)),
        barrier(shared, rank, nRanks),
        paths(bench::benchPaths(options.variants)) {}

  int rank;
  int nRanks;
  const Options& o;
  const symmem::RankHalves& halves;  // the halves variant's (the parent's, the same on every rank)
  harness::ElementType type;
  harness::RankBarrier barrier;
  std::vector<BenchPath> paths;  // the table's columns, in order (tools/bench/paths.h)
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  std::unique_ptr<symmem::NcclRecordGather> gather;  // the setup exchanges, over `comm`
  void* plain = nullptr;                             // cudaMalloc: stock NCCL and our kernels
  void* windowBuf = nullptr;                         // ncclMemAlloc, registered as `window`
  ncclWindow_t window = nullptr;
  SymmetricConfig cfg;
  std::unique_ptr<SymmetricComm> ours;  // null when the symmetric path could not be set up
  FILE* csv = nullptr;                  // rank 0, with --csv
};

// ---- Setup ----------------------------------------------------------------------------------

// The rank's GPU, the communicator (rank 0 makes the id), the stream. False when no id came.
bool joinCommunicator(RankRun& r, harness::RankRendezvous& shared) {
  const int rank = r.rank;
  CUDA_CHECK(cudaSetDevice(rank));
  ncclUniqueId id;
  if (!harness::exchangeUniqueId(
          shared, rank, [&](ncclUniqueId* made) { NCCL_CHECK(ncclGetUniqueId(made)); }, &id))
    return false;
  NCCL_CHECK(ncclCommInitRank(&r.comm, r.nRanks, id, rank));
  CUDA_CHECK(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
  r.gather = std::make_unique<symmem::NcclRecordGather>(&ncclAllGather, r.comm, r.nRanks);
  return true;
}

// A plain buffer and an NCCL symmetric window, each large enough for the largest size.
void allocateBuffers(RankRun& r) {
  const int rank = r.rank;
  const size_t bufBytes = std::max<size_t>(r.o.maxBytes, 4096);
  CUDA_CHECK(cudaMalloc(&r.plain, bufBytes));
  const size_t winBytes = (bufBytes + 4095) / 4096 * 4096;
  NCCL_CHECK(ncclMemAlloc(&r.windowBuf, winBytes));
  NCCL_CHECK(ncclCommWindowRegister(r.comm, r.windowBuf, winBytes, &r.window, NCCL_WIN_COLL_SYMMETRIC));
}

// Our kernels, sized for the sizes they are measured at (collective; rank 0 says why when they
// cannot be set up, and the run goes on without them).
void setUpOurKernels(RankRun& r) {
  SymmetricConfig& cfg = r.cfg;
  cfg.rank = r.rank;
  cfg.nRanks = r.nRanks;
  cfg.device = r.rank;
  cfg.oneShotMaxBytes = std::min(r.o.oneShotMax, r.o.maxBytes);
  cfg.twoShotMaxBytes = std::min(r.o.twoShotMax, r.o.maxBytes);
  cfg.timeoutMs = r.o.timeoutMs;
  cfg.maxBlocks = r.o.maxBlocks;
  cfg.programmaticLaunch = r.o.pdl;
  cfg.orderStreams = r.o.streamOrder;
  r.halves.fill(cfg.halves, cfg.halfOf);
  std::string why;
  r.ours = SymmetricComm::create(cfg, std::ref(*r.gather), &why);
  if (!r.ours && r.rank == 0) std::fprintf(stderr, "symmetric path unavailable: %s\n", why.c_str());
}

// The CSV with its header line, or null (no --csv, or the file cannot be written: said on stderr).
FILE* openCsv(const Options& o) {
  if (o.csv.empty()) return nullptr;
  FILE* csv = std::fopen(o.csv.c_str(), "w");
  if (csv == nullptr)
    std::fprintf(stderr, "cannot write %s\n", o.csv.c_str());
  else
    std::fprintf(csv, "bytes,dtype,ranks,path,mode,median_us,min_us,max_us,wrong\n");
  return csv;
}

// The first line of the output: machine, versions, method.
void printRunHeader(const RankRun& r) {
  int ncclVersion = 0;
  ncclGetVersion(&ncclVersion);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  const Options& o = r.o;
  std::string variants;
  for (symmem::SymVariant v : o.variants) variants.append(variants.empty() ? "" : ",").append(symVariantName(v));
  std::printf(
      "# symmem-bench: %d x %s, NCCL %d, CUDA runtime %d, driver %d, %s sum, in place, %d calls x %d reps, "
      "max blocks %d, programmatic launch %s, cross-stream order %s, variants %s\n",
      r.nRanks, prop.name, ncclVersion, rt, drv, std::string(dataTypeName(o.dtype)).c_str(), o.iters, o.reps,
      o.maxBlocks, o.pdl ? "on" : "off", o.streamOrder ? "on" : "off", variants.c_str());
}

// ---- The floor ------------------------------------------------------------------------------

// Launch cost of one empty kernel: `iters` of them captured in one graph, one warm-up replay, then
// the median of `reps` timed replays. On this rank alone.
double emptyKernelGraphUs(const RankRun& r, bool programmatic) {
  const int rank = r.rank;
  harness::CapturedBatch batch(rank, r.stream, r.o.iters, [&] {
    CUDA_CHECK(symmem::kernels::launchEmptyKernel(programmatic, r.stream));
    return true;
  });
  batch.replay();
  harness::BatchTimer timer(rank, r.stream);
  return harness::medianOfSorted(timer.time(r.o.reps, r.o.iters, [&] { batch.replay(); }));
}

// One-way latency of a 16-byte store until the peer sees it: ranks 0 and 1 ping-pong through CUDA
// IPC mappings of each other's flag word. Every rank takes part in the handle exchange and in the
// two barriers around the ping-pong.
double peerStoreOneWayUs(RankRun& r) {
  constexpr int kRoundTrips = 20000;
  const int rank = r.rank;
  uint32_t* flag = nullptr;
  CUDA_CHECK(cudaMalloc(&flag, 4096));
  CUDA_CHECK(cudaMemset(flag, 0, 4096));
  cudaIpcMemHandle_t handle;
  CUDA_CHECK(cudaIpcGetMemHandle(&handle, flag));
  std::vector<cudaIpcMemHandle_t> handles(r.nRanks);
  double oneWayUs = NAN;
  if ((*r.gather)(&handle, handles.data(), sizeof(handle)) && rank < 2) {
    void* peer = nullptr;
    CUDA_CHECK(cudaIpcOpenMemHandle(&peer, handles[1 - rank], cudaIpcMemLazyEnablePeerAccess));
    harness::BatchTimer timer(rank, r.barrier, r.stream);  // its barrier is the first of the two
    // One timed batch; each round trip is two one-way stores.
    oneWayUs = timer.time(1, 2 * kRoundTrips, [&] {
      CUDA_CHECK(symmem::kernels::launchPingPong(flag, static_cast<uint32_t*>(peer), kRoundTrips, rank == 0, r.stream));
    })[0];
    r.barrier.wait();
    CUDA_CHECK(cudaIpcCloseMemHandle(peer));
  } else {
    r.barrier.wait();
    r.barrier.wait();
  }
  cudaFree(flag);
  return oneWayUs;
}

Floor measureFloor(RankRun& r) {
  Floor floor;
  floor.emptyKernelUs = emptyKernelGraphUs(r, false);
  floor.emptyKernelProgrammaticUs = emptyKernelGraphUs(r, true);
  floor.peerStoreOneWayUs = peerStoreOneWayUs(r);
  return floor;
}

void reportFloor(const RankRun& r, const Floor& f) {
  std::printf(
      "# floor: empty kernel in a graph %.2f us (programmatic launch) / %.2f us (plain); one-way 16-byte "
      "peer store latency %.2f us\n",
      f.emptyKernelProgrammaticUs, f.emptyKernelUs, f.peerStoreOneWayUs);
  if (r.csv == nullptr) return;
  const std::string dtypeName(dataTypeName(r.o.dtype));
  const char* dtype = dtypeName.c_str();
  std::fprintf(r.csv, "0,%s,%d,empty-kernel,graph,%.3f,,,0\n", dtype, r.nRanks, f.emptyKernelUs);
  std::fprintf(r.csv, "0,%s,%d,empty-kernel-programmatic,graph,%.3f,,,0\n", dtype, r.nRanks,
               f.emptyKernelProgrammaticUs);
  std::fprintf(r.csv, "16,%s,%d,peer-store-one-way,kernel,%.3f,,,0\n", dtype, r.nRanks, f.peerStoreOneWayUs);
}

// ---- One path at one size -------------------------------------------------------------------

// Our kernels run up to the sizes they were set up for, and only where they could be set up.
// Every variant of one algorithm has the same limit (the symmetric buffer's slots are shared).
bool pathRunsAt(const RankRun& r, const BenchPath& p, size_t bytes) {
  if (p.ours() && !r.ours) return false;
  if (p.kind == PathKind::OneShot && bytes > r.cfg.oneShotMaxBytes) return false;
  if (p.kind == PathKind::TwoShot && bytes > r.cfg.twoShotMaxBytes) return false;
  return true;
}

void* bufferFor(const RankRun& r, const BenchPath& p) { return p.kind == PathKind::NcclWindow ? r.windowBuf : r.plain; }

KernelChoice kernelFor(const BenchPath& p) {
  return {p.kind == PathKind::OneShot ? Algorithm::OneShot : Algorithm::TwoShot, p.variant};
}

// Enqueues one in-place all-reduce (sum) of `count` elements on the path; false when it was refused.
bool enqueueAllReduce(const RankRun& r, const BenchPath& p, size_t count) {
  void* buf = bufferFor(r, p);
  if (!p.ours()) return ncclAllReduce(buf, buf, count, r.type.nccl, ncclSum, r.comm, r.stream) == ncclSuccess;
  return r.ours->allReduce(buf, buf, count, r.type.ours, ReduceOp::Sum, kernelFor(p), r.stream) ==
         symmem::kernels::Status::Ok;
}

// Eager: 20 warm-up calls, then `reps` batches of `iters` calls back to back.
std::vector<double> timeEager(const RankRun& r, harness::BatchTimer& timer, const std::function<bool()>& call) {
  for (int i = 0; i < 20; ++i) call();
  return timer.time(r.o.reps, r.o.iters, [&] {
    for (int i = 0; i < r.o.iters; ++i) call();
  });
}

// Graph: `iters` calls captured in one graph, a warm-up replay, then `reps` timed replays. The graph
// is gone on return, before any ncclCommDestroy (which can hang otherwise).
std::vector<double> timeGraph(RankRun& r, harness::BatchTimer& timer, const std::function<bool()>& call) {
  const int rank = r.rank;
  harness::CapturedBatch batch(rank, r.stream, r.o.iters, call);
  r.barrier.wait();
  batch.replay();
  CUDA_CHECK(cudaStreamSynchronize(r.stream));
  return timer.time(r.o.reps, r.o.iters, [&] { batch.replay(); });
}

void writeCsvRow(const RankRun& r, size_t bytes, const BenchPath& p, const char* mode, const std::vector<double>& us,
                 long long wrong) {
  if (r.csv == nullptr) return;
  std::fprintf(r.csv, "%zu,%s,%d,%s,%s,%.3f,%.3f,%.3f,%lld\n", bytes, std::string(dataTypeName(r.o.dtype)).c_str(),
               r.nRanks, p.name().c_str(), mode, harness::medianOfSorted(us), us.front(), us.back(), wrong);
}

// Checks the path once (integer inputs, exact sums), then times it eager (unless --no-eager) and
// under a graph. Returns the rank's exit code: 0, 5 (the path refused the call) or 6 (our kernels
// report a device error).
int measurePath(RankRun& r, harness::BatchTimer& timer, const BenchPath& p, size_t bytes, PathResult* result) {
  const int rank = r.rank;
  const size_t count = bytes / r.type.format.bytes;
  const std::string name = p.name();
  auto call = [&]() -> bool { return enqueueAllReduce(r, p, count); };
  if (rank == 0) std::fprintf(stderr, "\r[symmem-bench] %10zu B %-15s", bytes, name.c_str());
  result->wrong =
      harness::countWrongAfterOneCall(rank, r.nRanks, r.barrier, r.stream, bufferFor(r, p), count, r.type.format, call);
  if (result->wrong < 0) {
    std::fprintf(stderr, "[rank %d] %s failed at %zu bytes\n", rank, name.c_str(), bytes);
    return 5;
  }
  if (r.o.eager) {
    const std::vector<double> us = timeEager(r, timer, call);
    result->eagerUs = harness::medianOfSorted(us);
    writeCsvRow(r, bytes, p, "eager", us, result->wrong);
  }
  const std::vector<double> us = timeGraph(r, timer, call);
  result->graphUs = harness::medianOfSorted(us);
  writeCsvRow(r, bytes, p, "graph", us, result->wrong);
  if (r.ours && r.ours->deviceStatus() != symmem::kernels::Status::Ok) {
    std::fprintf(stderr, "[rank %d] symmetric path reports %s\n", rank,
                 symmem::kernels::statusName(r.ours->deviceStatus()));
    return 6;
  }
  return 0;
}

// Every size from -b to -e (x -f), every path that runs there. Returns the rank's exit code.
int measureSizes(RankRun& r, Results* results) {
  harness::BatchTimer timer(r.rank, r.barrier, r.stream);
  for (size_t bytes = r.o.minBytes; bytes <= r.o.maxBytes; bytes *= r.o.factor) {
    if (bytes / r.type.format.bytes == 0) continue;
    bench::SizeResults& row = (*results)[bytes];
    row.resize(r.paths.size());
    for (size_t i = 0; i < r.paths.size(); ++i) {
      if (!pathRunsAt(r, r.paths[i], bytes)) continue;
      PathResult result;
      if (const int code = measurePath(r, timer, r.paths[i], bytes, &result); code != 0) return code;
      row[i] = result;
    }
  }
  return 0;
}

// Collective: every rank arrives before anything is freed.
void tearDown(RankRun& r) {
  r.barrier.wait();
  r.ours.reset();
  ncclCommWindowDeregister(r.comm, r.window);
  ncclMemFree(r.windowBuf);
  cudaFree(r.plain);
  ncclCommDestroy(r.comm);
}

// One forked rank; returns its exit code (7: a path gave wrong results).
int runRank(int rank, int n, const Options& o, const symmem::RankHalves& halves, harness::RankRendezvous* shared) {
  RankRun r(rank, n, o, halves, shared);
  if (!joinCommunicator(r, *shared)) return 4;
  allocateBuffers(r);
  setUpOurKernels(r);
  if (rank == 0) {
    r.csv = openCsv(o);
    printRunHeader(r);
  }
  const Floor floor = measureFloor(r);
  if (rank == 0) reportFloor(r, floor);
  Results results;
  if (const int code = measureSizes(r, &results); code != 0) return code;
  if (rank == 0) {
    std::fprintf(stderr, "\n");  // ends the progress line
    std::printf("%s", bench::summaryTable(r.paths, results, o.eager).c_str());
    std::fflush(stdout);
  }
  if (r.csv != nullptr) std::fclose(r.csv);
  const long long wrong = bench::totalWrong(results);
  tearDown(r);
  return wrong == 0 ? 0 : 7;
}

// The halves of ranks 0..n-1, rank r on CUDA device r: --halves, else the node's topology, read in the
// parent before any CUDA call. CUDA numbers the devices in PCI bus order here, as the topology does, unless
// CUDA_VISIBLE_DEVICES or another CUDA_DEVICE_ORDER renumbers them: then only --halves gives halves.
symmem::RankHalves ranksHalves(const Options& o, int n) {
  if (!o.halves.empty()) {
    symmem::RankHalves declared;
    declared.ok = declared.declared = true;
    declared.halfOf = o.halves;
    return declared;
  }
  setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const char* order = std::getenv("CUDA_DEVICE_ORDER");
  const symmem::Topology& topology = symmem::Process::get().topology();
  std::vector<int> gpus(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) gpus[static_cast<size_t>(r)] = r;
  if (visible != nullptr || std::string(order) != "PCI_BUS_ID" || n > topology.gpuCount()) {
    symmem::RankHalves none;
    none.why = "no halves on these GPUs (" +
               std::string(visible != nullptr ? "CUDA_VISIBLE_DEVICES is set" : "CUDA_DEVICE_ORDER is not PCI_BUS_ID") +
               ": which GPU each rank runs on is not known)";
    if (n > topology.gpuCount())
      none.why = "no halves on these GPUs (the topology knows " + std::to_string(topology.gpuCount()) + " of " +
                 std::to_string(n) + ")";
    return none;
  }
  return symmem::rankHalves(topology, gpus, {});
}

}  // namespace

int main(int argc, char** argv) {
  const symmem::BenchArgsResult parsed = symmem::parseBenchArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (parsed.options.help) {
    std::printf("%s", symmem::benchUsage().c_str());
    return 0;
  }
  if (!parsed.ok()) {
    std::fprintf(stderr, "symmem-bench: %s\n", parsed.error.c_str());
    if (parsed.error.find("--help") == std::string::npos)
      std::fprintf(stderr, "symmem-bench --help lists the options\n");
    return 2;
  }
  Options o = parsed.options;
  // NVLink SHARP / multicast stays off (it needs cuMulticastCreate, which this tool never uses).
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  const int n = o.nGpus > 0 ? o.nGpus : harness::countGpuDeviceNodes();
  if (n < 2) {
    std::fprintf(stderr, "%s\n", symmem::tooFewGpusText(n).c_str());
    return 1;
  }
  if (!o.halves.empty() && static_cast<int>(o.halves.size()) != n) {
    std::fprintf(stderr, "symmem-bench: --halves names %zu ranks; this run has %d (one per GPU)\n", o.halves.size(), n);
    return 2;
  }
  const symmem::RankHalves halves = ranksHalves(o, n);
  std::string skipped;
  o.variants = bench::measuredVariants(o.variants, n, halves, &skipped);
  if (!skipped.empty()) std::fprintf(stderr, "symmem-bench: %s\n", skipped.c_str());
  harness::RankRendezvous* shared = harness::mapRendezvous();
  if (shared == nullptr) return 1;
  return harness::runForkedRanks(n, "symmem-bench", o.timeoutSec,
                                 [&](int r) { return runRank(r, n, o, halves, shared); });
}

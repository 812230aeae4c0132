// SPDX-License-Identifier: Apache-2.0
// GPU tests of the symmetric all-reduce (kernels/). Every test forks its ranks (or one process that
// drives several GPUs from threads) before any CUDA call; the parent stays CUDA-free and kills any
// child that outlives its bound. Inputs are integer-valued so every reduction is exact; results are
// compared bit for bit with a CPU reference computed in rank order, which also makes them identical
// across ranks (checked explicitly with a hash exchange too).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kernels/symmetric_comm.h"
#include "kernels/symmetric_layout.h"
#include "tests/gpu/gpu_test_macros.h"
#include "tests/gpu/rank_harness.h"

namespace symmem::kernels {
namespace {

using testing::RankFailures;
using testing::ShmAllGather;

// The built-in table's largest limits (NVLink, 2 ranks): one-shot to 1 MiB, two-shot to 8 MiB.
constexpr size_t kOneShotMax = 1 << 20;
constexpr size_t kTwoShotMax = 8 << 20;
constexpr int kGraphReplays = 10000;
// Where both ranks share one GPU (a one-GPU machine imitating two), each replay waits for the other
// process's kernels on the same device: 2.25 ms a replay on 1x H200, so 10,000 per case would take
// minutes. The shared form replays enough to cover the round rotation many times over.
constexpr int kSharedGpuGraphReplays = 300;

// Graph replays per case for two ranks on `gpus` GPUs.
int graphReplaysFor(int gpus) { return gpus >= 2 ? kGraphReplays : kSharedGpuGraphReplays; }

// SYMMEM_GPU_TESTS_LIGHT=1: a short run of the same code paths (sizes to 64 KiB / 256 KiB, sum and
// max, 20 graph replays), for runs under compute-sanitizer, which slows every kernel a hundredfold.
bool lightRun() {
  const char* v = std::getenv("SYMMEM_GPU_TESTS_LIGHT");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

// SYMMEM_GPU_TESTS_COST_SWITCHES=N: every communicator of these tests runs with CostSwitch bits N
// (device_view.h), the earlier forms of the per-call path, to watch a test go red without a fix
// (1: the next kernel admitted before the wait, which LongGraphsThenEagerCallsOnOneCommunicator
// catches at 3 or more ranks sharing one GPU), or the other kernel for the same calls (8: one-block
// pushes through the generic one-shot kernel; 16: the small-message kernel with the rank count read
// at run time on every rank count).
uint32_t costSwitchesAsked() {
  const char* v = std::getenv("SYMMEM_GPU_TESTS_COST_SWITCHES");
  return v == nullptr ? 0u : static_cast<uint32_t>(std::strtoul(v, nullptr, 0));
}

// ---- values ------------------------------------------------------------------------------------
__host__ __device__ inline uint32_t mix(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t h = a * 0x9e3779b1u ^ (b + 0x7f4a7c15u) * 0x85ebca6bu ^ c * 0xc2b2ae35u;
  h ^= h >> 15;
  h *= 0x2c1b3c6du;
  h ^= h >> 12;
  return h;
}

// An integer-valued input: exact in bf16/fp16/fp32 and so are all reductions of up to 8 of them.
// Every 11th element of every rank is -0.0 (the kernels send it as +0.0).
__host__ __device__ inline float testValue(int op, int rank, uint64_t i, uint32_t seed) {
  const uint32_t h = mix(static_cast<uint32_t>(rank), static_cast<uint32_t>(i), seed);
  if ((h >> 24) % 11 == 3) return -0.0f;
  switch (op) {
    case 0:
      return static_cast<float>(static_cast<int>(h % 17) - 8);  // sum: |total| <= 64
    case 1: {
      const int v[4] = {-2, -1, 1, 2};
      return static_cast<float>(v[h % 4]);
    }  // prod: powers of 2
    default:
      return static_cast<float>(static_cast<int>(h % 201) - 100);  // max/min
  }
}

__host__ __device__ inline float combine(int op, float a, float b) {
  switch (op) {
    case 0:
      return a + b;
    case 1:
      return a * b;
    case 2:
      return a > b ? a : b;
    default:
      return a < b ? a : b;
  }
}

__host__ __device__ inline float clearNegZero(float x) { return (x == 0.0f) ? 0.0f : x; }

// Reference: inputs with -0.0 cleared, reduced in rank order, a -0.0 result cleared: one rule for
// one-shot and two-shot (a product of -0.0 and -3.0 is +0.0 in both). All values exact, so float
// arithmetic equals the dtype's. (`twoShot` names the algorithm only in messages.)
__host__ __device__ inline float referenceValue(int op, int nRanks, uint64_t i, uint32_t seed,
                                                [[maybe_unused]] bool twoShot) {
  float acc = clearNegZero(testValue(op, 0, i, seed));
  for (int q = 1; q < nRanks; ++q) acc = combine(op, acc, clearNegZero(testValue(op, q, i, seed)));
  return clearNegZero(acc);
}

template <typename T>
__host__ __device__ inline T fromFloat(float x);
template <>
__host__ __device__ inline float fromFloat<float>(float x) {
  return x;
}
template <>
__host__ __device__ inline __half fromFloat<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__host__ __device__ inline __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

template <typename T>
uint32_t bitsOf(const T& x) {
  uint32_t b = 0;
  std::memcpy(&b, &x, sizeof(T));
  return b;
}

DataType dtypeOf(float*) { return DataType::Float32; }
DataType dtypeOf(__half*) { return DataType::Float16; }
DataType dtypeOf(__nv_bfloat16*) { return DataType::Bfloat16; }
const char* opName(int op) { return op == 0 ? "sum" : op == 1 ? "prod" : op == 2 ? "max" : "min"; }

// ---- one rank's environment ----------------------------------------------------------------------
struct RankSetup {
  int rank = 0;
  int nRanks = 2;
  int device = 0;
  size_t oneShotMax = kOneShotMax;
  size_t twoShotMax = kTwoShotMax;
  int64_t timeoutMs = 10000;
  int maxBlocks = 0;
  bool orderStreams = true;
  uint32_t costSwitches = costSwitchesAsked();
  ShmAllGather* shm = nullptr;
  bool halves = false;  // SymmetricConfig::halves / halfOf
  std::array<uint8_t, 8> halfOf{};
};

// Halves for n ranks: contiguous (the ranks of a dual-socket box, 0..n/2-1 on the first socket) or
// interleaved (a rank order that alternates sockets), so that partners are n/2 or 1 apart.
std::array<uint8_t, 8> halvesFor(int n, bool interleaved) {
  std::array<uint8_t, 8> h{};
  for (int r = 0; r < n; ++r) h[r] = static_cast<uint8_t>(interleaved ? r % 2 : (r >= n / 2 ? 1 : 0));
  return h;
}

// The GPUs there are, counted without initialising CUDA (ranks are forked first).
int gpusPresent() {
  std::string why;
  return std::max(1, testing::gpuCount(&why));
}

// Rank `rank` of two processes, on its own GPU where there are two, else sharing GPU 0 (the kernels
// do not care; peers on one device then map each other's buffers through IPC all the same).
RankSetup rankOnOwnGpu(int rank, ShmAllGather& shm) {
  RankSetup s;
  s.rank = rank;
  s.device = rank % gpusPresent();
  s.shm = &shm;
  return s;
}

std::unique_ptr<SymmetricComm> makeComm(const RankSetup& s, std::string* why) {
  SymmetricConfig c;
  c.rank = s.rank;
  c.nRanks = s.nRanks;
  c.device = s.device;
  c.oneShotMaxBytes = s.oneShotMax;
  c.twoShotMaxBytes = s.twoShotMax;
  c.timeoutMs = s.timeoutMs;
  c.maxBlocks = s.maxBlocks;
  c.orderStreams = s.orderStreams;
  c.costSwitches = s.costSwitches;
  c.halves = s.halves;
  c.halfOf = s.halfOf;
  ShmAllGather* shm = s.shm;
  const int rank = s.rank;
  return SymmetricComm::create(
      c, [shm, rank](const void* send, void* recv, size_t bytes) { return shm->allGather(rank, send, recv, bytes); },
      why);
}

// Runs body(setup, failures) for n ranks as threads of one forked process, several per GPU where there
// are fewer GPUs (peers on one device use each other's buffers directly). Small grids, so that every
// rank's blocks are resident at once. The ranks' failure count is the child's exit code.
std::string runThreadRanks(int n, int timeoutSec, const std::function<void(RankSetup&, RankFailures&)>& body) {
  return testing::runForked(1, timeoutSec, [&](int) {
    ShmAllGather shm(n, 4096);
    std::vector<int> failures(n, 0);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        RankFailures f{r};
        RankSetup s;
        s.rank = r;
        s.nRanks = n;
        s.device = r % gpusPresent();
        s.shm = &shm;
        s.maxBlocks = 4;
        body(s, f);
        failures[r] = f.count;
      });
    }
    for (auto& t : threads) t.join();
    int total = 0;
    for (int x : failures) total += x;
    return total;
  });
}

// Element counts a test covers for one algorithm: the odd ones plus every power-of-two byte size.
std::vector<size_t> countsFor(size_t elemBytes, size_t maxBytes, size_t limitBytes) {
  std::vector<size_t> counts;
  for (size_t c : {size_t{1}, size_t{3}, size_t{7}, size_t{8}, size_t{9}, size_t{1023}, size_t{4097}, size_t{65537}})
    if (c * elemBytes <= maxBytes && c * elemBytes <= limitBytes) counts.push_back(c);
  for (size_t b = 16; b <= maxBytes && b <= limitBytes; b *= 2) counts.push_back(b / elemBytes);
  return counts;
}

struct SweepOptions {
  std::vector<SymVariant> variants = {SymVariant::Push};
  std::vector<int> ops = {0, 1, 2, 3};
  size_t oneShotLimit = kOneShotMax;  // largest size tried
  size_t twoShotLimit = kTwoShotMax;
  bool allTypes = true;

  // The light run's cut of these options.
  SweepOptions lightened() const {
    if (!lightRun()) return *this;
    SweepOptions o = *this;
    o.ops = {0, 2};
    o.oneShotLimit = std::min<size_t>(oneShotLimit, 64 << 10);
    o.twoShotLimit = std::min<size_t>(twoShotLimit, 256 << 10);
    return o;
  }
};

// One case: fills this rank's input, runs the all-reduce, compares with the reference.
template <typename T>
int runCase(SymmetricComm& comm, const RankSetup& s, cudaStream_t stream, char* sendBase, char* recvBase, size_t count,
            int op, KernelChoice kernel, bool inPlace, size_t offsetElems, uint32_t seed, RankFailures& f, char* pinned,
            uint64_t* hash) {
  const Algorithm algo = kernel.algorithm;
  T* send = reinterpret_cast<T*>(sendBase) + offsetElems;
  T* recv = inPlace ? send : reinterpret_cast<T*>(recvBase) + offsetElems;
  T* host = reinterpret_cast<T*>(pinned);
  for (size_t i = 0; i < count; ++i) host[i] = fromFloat<T>(testValue(op, s.rank, i, seed));
  CUDA_OK(f, cudaMemcpyAsync(send, host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
  if (!inPlace) CUDA_OK(f, cudaMemsetAsync(recv, 0xff, count * sizeof(T), stream));
  const Status st =
      comm.allReduce(send, recv, count, dtypeOf(static_cast<T*>(nullptr)), static_cast<ReduceOp>(op), kernel, stream);
  const bool twoShot = algo == Algorithm::TwoShot;
  const std::string label =
      std::string(twoShot ? "two-shot " : "one-shot ") + std::string(symVariantName(kernel.variant));
  const char* name = label.c_str();
  if (st != Status::Ok) {
    f.fail("%s %s count=%zu: allReduce returned %s", name, opName(op), count, statusName(st));
    return f.count;
  }
  CUDA_OK(f, cudaMemcpyAsync(host, recv, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
  CUDA_OK(f, cudaStreamSynchronize(stream));
  int shown = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t want = bitsOf(fromFloat<T>(referenceValue(op, s.nRanks, i, seed, twoShot)));
    const uint32_t got = bitsOf(host[i]);
    *hash = (*hash ^ got) * 0x100000001b3ull;
    if (got != want && shown++ < 3)
      f.fail("%s %zu-byte %s count=%zu %s offset=%zu: element %zu is 0x%x, expected 0x%x", name, sizeof(T), opName(op),
             count, inPlace ? "in-place" : "out-of-place", offsetElems, i, got, want);
  }
  return f.count;
}

// The whole sweep for one rank: types x ops x sizes x in/out of place x algorithms (+ unaligned).
int correctnessSweep(const RankSetup& s, const SweepOptions& options, RankFailures& f) {
  const SweepOptions o = options.lightened();
  CUDA_OK(f, cudaSetDevice(s.device));
  // Allocate before the comm exists: with several ranks per process, nothing that may synchronise
  // the device may run once peers can be waiting for this rank.
  cudaStream_t stream;
  CUDA_OK(f, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const size_t bufBytes = std::max(s.oneShotMax, s.twoShotMax) + 64;
  char *sendBase = nullptr, *recvBase = nullptr;
  CUDA_OK(f, cudaMalloc(&sendBase, bufBytes));
  CUDA_OK(f, cudaMalloc(&recvBase, bufBytes));
  // Pinned staging: a pageable copy can block this thread on driver staging shared with other
  // threads of the process, which with several ranks per process is a deadlock until the timeout.
  char* pinned = nullptr;
  CUDA_OK(f, cudaMallocHost(&pinned, bufBytes));
  std::string why;
  auto comm = makeComm(s, &why);
  if (!comm) {
    f.fail("create failed: %s", why.c_str());
    return f.count;
  }
  uint64_t hash = 1469598103934665603ull;
  uint32_t seed = 1;
  for (int algoIndex = 0; algoIndex < 2 * static_cast<int>(o.variants.size()); ++algoIndex) {
    const KernelChoice algo(algoIndex % 2 == 0 ? Algorithm::OneShot : Algorithm::TwoShot, o.variants[algoIndex / 2]);
    const size_t maxBytes = algoIndex % 2 == 0 ? s.oneShotMax : s.twoShotMax;
    const size_t limit = algoIndex % 2 == 0 ? o.oneShotLimit : o.twoShotLimit;
    for (int t = 0; t < 3; ++t) {
      if (!o.allTypes && t == 1) continue;
      const size_t elem = t == 0 ? 4 : 2;
      for (int op : o.ops) {
        for (size_t count : countsFor(elem, maxBytes, limit)) {
          for (int inPlace = 0; inPlace < 2; ++inPlace) {
            // Unaligned pointers (one element in) for the odd sizes.
            const bool odd = (count * elem) % 16 != 0 || count == 4097;
            for (size_t offset : {size_t{0}, size_t{1}}) {
              if (offset == 1 && (!odd || (count + 1) * elem > maxBytes)) continue;
              ++seed;
              if (t == 0)
                runCase<float>(*comm, s, stream, sendBase, recvBase, count, op, algo, inPlace, offset, seed, f, pinned,
                               &hash);
              else if (t == 1)
                runCase<__half>(*comm, s, stream, sendBase, recvBase, count, op, algo, inPlace, offset, seed, f, pinned,
                                &hash);
              else
                runCase<__nv_bfloat16>(*comm, s, stream, sendBase, recvBase, count, op, algo, inPlace, offset, seed, f,
                                       pinned, &hash);
              if (f.count > 20) return f.count;
            }
          }
        }
      }
    }
  }
  // Bit-identical on every rank: compare the hashes of everything each rank received.
  std::vector<uint64_t> hashes(s.nRanks);
  RANK_CHECK(f, s.shm->allGather(s.rank, &hash, hashes.data(), sizeof(hash)), "hash exchange failed");
  for (int q = 0; q < s.nRanks; ++q)
    RANK_CHECK(f, hashes[q] == hash, "rank %d's results differ from rank %d's", q, s.rank);
  RANK_CHECK(f, comm->deviceStatus() == Status::Ok, "deviceStatus %s", statusName(comm->deviceStatus()));
  // Nobody frees or destroys (which synchronises the device) while a peer may still run.
  s.shm->barrier(s.rank);
  comm.reset();
  cudaFree(sendBase);
  cudaFree(recvBase);
  cudaFreeHost(pinned);
  cudaStreamDestroy(stream);
  return f.count;
}

// ---- graph replay ----------------------------------------------------------------------------
template <typename T>
__global__ void writeInputs(T* buf, size_t count, int rank, int op, const uint32_t* iteration) {
  const uint32_t it = *iteration;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    buf[i] = fromFloat<T>(testValue(op, rank, i, it * 2654435761u + 17u));
}

template <typename T>
__global__ void checkOutputs(const T* out, size_t count, int nRanks, int op, bool twoShot, uint32_t* iteration,
                             unsigned long long* errors) {
  const uint32_t it = *iteration;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    const T want = fromFloat<T>(referenceValue(op, nRanks, i, it * 2654435761u + 17u, twoShot));
    T got = out[i];
    bool same;
    if constexpr (sizeof(T) == 4)
      same = __float_as_uint(*reinterpret_cast<const float*>(&got)) ==
             __float_as_uint(*reinterpret_cast<const float*>(&want));
    else
      same = *reinterpret_cast<const unsigned short*>(&got) == *reinterpret_cast<const unsigned short*>(&want);
    if (!same) atomicAdd(errors, 1ull);
  }
}

__global__ void advanceIteration(uint32_t* iteration) { *iteration += 1; }

template <typename T>
int graphReplay(SymmetricComm& comm, const RankSetup& s, size_t count, int op, KernelChoice kernel, bool inPlace,
                int replays, RankFailures& f) {
  cudaStream_t stream;
  CUDA_OK(f, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  T *send = nullptr, *recv = nullptr;
  uint32_t* iteration = nullptr;
  unsigned long long* errors = nullptr;
  CUDA_OK(f, cudaMalloc(&send, count * sizeof(T)));
  CUDA_OK(f, cudaMalloc(&recv, count * sizeof(T)));
  CUDA_OK(f, cudaMalloc(&iteration, sizeof(uint32_t)));
  CUDA_OK(f, cudaMalloc(&errors, sizeof(unsigned long long)));
  CUDA_OK(f, cudaMemsetAsync(iteration, 0, sizeof(uint32_t), stream));
  CUDA_OK(f, cudaMemsetAsync(errors, 0, sizeof(unsigned long long), stream));
  CUDA_OK(f, cudaStreamSynchronize(stream));
  T* out = inPlace ? send : recv;
  const int blocks = static_cast<int>(std::min<size_t>(64, (count + 255) / 256));
  const bool twoShot = kernel.algorithm == Algorithm::TwoShot;
  const std::string label =
      std::string(twoShot ? "two-shot " : "one-shot ") + std::string(symVariantName(kernel.variant));

  cudaGraph_t graph;
  CUDA_OK(f, cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  writeInputs<T><<<blocks, 256, 0, stream>>>(send, count, s.rank, op, iteration);
  const Status st =
      comm.allReduce(send, out, count, dtypeOf(static_cast<T*>(nullptr)), static_cast<ReduceOp>(op), kernel, stream);
  checkOutputs<T><<<blocks, 256, 0, stream>>>(out, count, s.nRanks, op, twoShot, iteration, errors);
  advanceIteration<<<1, 1, 0, stream>>>(iteration);
  CUDA_OK(f, cudaStreamEndCapture(stream, &graph));
  RANK_CHECK(f, st == Status::Ok, "allReduce under capture returned %s", statusName(st));
  cudaGraphExec_t exec;
  CUDA_OK(f, cudaGraphInstantiate(&exec, graph, 0));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < replays; ++i) CUDA_OK(f, cudaGraphLaunch(exec, stream));
  CUDA_OK(f, cudaStreamSynchronize(stream));
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  unsigned long long errs = 0;
  uint32_t iters = 0;
  CUDA_OK(f, cudaMemcpy(&errs, errors, sizeof(errs), cudaMemcpyDeviceToHost));
  CUDA_OK(f, cudaMemcpy(&iters, iteration, sizeof(iters), cudaMemcpyDeviceToHost));
  RANK_CHECK(f, errs == 0, "graph %s %zu-byte %s count=%zu %s: %llu wrong elements over %d replays", label.c_str(),
             sizeof(T), opName(op), count, inPlace ? "in-place" : "out-of-place", errs, replays);
  RANK_CHECK(f, iters == static_cast<uint32_t>(replays), "graph ran %u iterations, expected %d", iters, replays);
  RANK_CHECK(f, comm.deviceStatus() == Status::Ok, "deviceStatus %s", statusName(comm.deviceStatus()));
  if (s.rank == 0)
    std::fprintf(stderr, "[rank 0] graph %s %zu-byte %s count=%zu: %d replays in %.1f ms (%.2f us each)\n",
                 label.c_str(), sizeof(T), opName(op), count, replays, us / 1000, us / replays);
  s.shm->barrier(s.rank);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(send);
  cudaFree(recv);
  cudaFree(iteration);
  cudaFree(errors);
  cudaStreamDestroy(stream);
  return f.count;
}

int graphSuite(const RankSetup& s, int replays, RankFailures& f) {
  if (lightRun()) replays = std::min(replays, 20);
  CUDA_OK(f, cudaSetDevice(s.device));
  std::string why;
  auto comm = makeComm(s, &why);
  if (!comm) {
    f.fail("create failed: %s", why.c_str());
    return f.count;
  }
  graphReplay<__nv_bfloat16>(*comm, s, 4096, 0, Algorithm::OneShot, true, replays, f);        // 8 KiB
  graphReplay<float>(*comm, s, 4097, 2, Algorithm::OneShot, false, replays, f);               // odd size, max
  graphReplay<__half>(*comm, s, 3, 3, Algorithm::OneShot, true, replays, f);                  // tail only
  graphReplay<__nv_bfloat16>(*comm, s, 512 << 10, 0, Algorithm::OneShot, false, replays, f);  // 1 MiB
  graphReplay<__half>(*comm, s, 512 << 10, 0, Algorithm::TwoShot, true, replays, f);          // 1 MiB
  graphReplay<__nv_bfloat16>(*comm, s, 65537, 1, Algorithm::TwoShot, false, replays, f);      // odd, prod
  // The other variants, one-shot and two-shot, mixed in one communicator.
  for (SymVariant variant : {SymVariant::Pull, SymVariant::Staged}) {
    graphReplay<__nv_bfloat16>(*comm, s, 4097, 0, {Algorithm::OneShot, variant}, true, replays, f);
    graphReplay<float>(*comm, s, 65537, 3, {Algorithm::TwoShot, variant}, false, replays, f);
  }
  s.shm->barrier(s.rank);
  return f.count;
}

// ---- the tests ---------------------------------------------------------------------------------
TEST(KernelsGpu, CorrectnessTwoProcesses) {
  SKIP_WITHOUT_GPUS(1);
  ShmAllGather shm(2, 4096);
  const std::string report = testing::runForked(2, 300, [&](int rank) {
    RankFailures f{rank};
    RankSetup s = rankOnOwnGpu(rank, shm);
    return correctnessSweep(s, SweepOptions{}, f);
  });
  EXPECT_EQ(report, "");
}

// Runs without a GPU: the two-process graph test's light form where both ranks share one GPU.
TEST(KernelsGpuPlan, SharedGpuReplaysFewerGraphs) {
  EXPECT_EQ(graphReplaysFor(2), kGraphReplays);
  EXPECT_EQ(graphReplaysFor(8), kGraphReplays);
  EXPECT_EQ(graphReplaysFor(1), kSharedGpuGraphReplays);
  // 10 cases of graphSuite at 2.25 ms a replay on one shared GPU: well under a minute.
  EXPECT_LT(10 * graphReplaysFor(1) * 2.25e-3, 60.0);
}

TEST(KernelsGpu, GraphReplayTwoProcesses) {
  SKIP_WITHOUT_GPUS(1);
  ShmAllGather shm(2, 4096);
  const std::string report = testing::runForked(2, 240, [&](int rank) {
    RankFailures f{rank};
    RankSetup s = rankOnOwnGpu(rank, shm);
    return graphSuite(s, graphReplaysFor(gpusPresent()), f);
  });
  EXPECT_EQ(report, "");
}

// One rank never calls allReduce: the other must see its kernel end within the timeout plus slack,
// deviceStatus() == PeerTimeout, and PeerTimeout from every later call.
TEST(KernelsGpu, TimeoutWhenAPeerNeverArrives) {
  SKIP_WITHOUT_GPUS(1);
  ShmAllGather shm(2, 4096, 120000);
  constexpr int64_t kTimeoutMs = 300;
  const std::string report = testing::runForked(2, 120, [&](int rank) {
    RankFailures f{rank};
    setenv("SYMMEM_TIMEOUT_MS", std::to_string(kTimeoutMs).c_str(), 1);
    RankSetup s = rankOnOwnGpu(rank, shm);
    s.timeoutMs = testing::timeoutSettingMs();
    RANK_CHECK(f, s.timeoutMs == kTimeoutMs, "SYMMEM_TIMEOUT_MS not read (%lld)", static_cast<long long>(s.timeoutMs));
    CUDA_OK(f, cudaSetDevice(s.device));
    std::string why;
    auto comm = makeComm(s, &why);
    if (!comm) {
      f.fail("create failed: %s", why.c_str());
      return f.count;
    }
    if (rank == 0) {
      cudaStream_t stream;
      float* buf = nullptr;
      CUDA_OK(f, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      CUDA_OK(f, cudaMalloc(&buf, 1 << 20));
      CUDA_OK(f, cudaMemsetAsync(buf, 0, 1 << 20, stream));
      CUDA_OK(f, cudaStreamSynchronize(stream));
      for (Algorithm algo : {Algorithm::OneShot}) {
        const auto t0 = std::chrono::steady_clock::now();
        const Status st = comm->allReduce(buf, buf, 1024, DataType::Float32, ReduceOp::Sum, algo, stream);
        RANK_CHECK(f, st == Status::Ok, "first call returned %s", statusName(st));
        CUDA_OK(f, cudaStreamSynchronize(stream));
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "[rank 0] kernel gave up after %.0f ms (timeout %lld ms)\n", ms,
                     static_cast<long long>(kTimeoutMs));
        RANK_CHECK(f, ms >= kTimeoutMs * 0.9 && ms < kTimeoutMs + 2000, "kernel ended after %.0f ms", ms);
      }
      RANK_CHECK(f, comm->deviceStatus() == Status::PeerTimeout, "deviceStatus %s", statusName(comm->deviceStatus()));
      for (int i = 0; i < 3; ++i) {
        const Status st = comm->allReduce(buf, buf, 1024, DataType::Float32, ReduceOp::Sum, Algorithm::TwoShot, stream);
        RANK_CHECK(f, st == Status::PeerTimeout, "call after the timeout returned %s", statusName(st));
      }
      cudaFree(buf);
      cudaStreamDestroy(stream);
    }
    shm.barrier(rank);
    comm.reset();
    return f.count;
  });
  EXPECT_EQ(report, "");
}

// Calls alternate between two streams with no synchronisation in between: NCCL runs a communicator's
// calls in the order they are made whatever their streams, and so must this path (two calls running at
// once would share round buffers). Inputs are on the device before the first call, so nothing but that
// order keeps the kernels of consecutive calls from overlapping. SYMMEM_GPU_TESTS_UNORDERED=1 turns the
// ordering off (SymmetricConfig::orderStreams), to see this test fail without it.
TEST(KernelsGpu, CallsOnTwoStreamsRunInOrder) {
  SKIP_WITHOUT_GPUS(1);
  ShmAllGather shm(2, 4096);
  const std::string report = testing::runForked(2, 120, [&](int rank) {
    RankFailures f{rank};
    RankSetup s = rankOnOwnGpu(rank, shm);
    s.timeoutMs = 5000;
    const char* unordered = std::getenv("SYMMEM_GPU_TESTS_UNORDERED");
    s.orderStreams = unordered == nullptr || std::strcmp(unordered, "1") != 0;
    CUDA_OK(f, cudaSetDevice(s.device));
    constexpr int kCalls = 96;
    constexpr size_t kCount = 4099;  // 16 KiB and a tail
    cudaStream_t streams[2];
    for (cudaStream_t& st : streams) CUDA_OK(f, cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    float* buf = nullptr;
    CUDA_OK(f, cudaMalloc(&buf, kCalls * kCount * sizeof(float)));
    std::vector<float> host(kCalls * kCount);
    auto algoOf = [](int call) { return call % 3 == 2 ? Algorithm::TwoShot : Algorithm::OneShot; };
    for (int c = 0; c < kCalls; ++c)
      for (size_t i = 0; i < kCount; ++i) host[c * kCount + i] = testValue(0, rank, i, 7000 + c);
    CUDA_OK(f, cudaMemcpy(buf, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    std::string why;
    auto comm = makeComm(s, &why);
    if (!comm) {
      f.fail("create failed: %s", why.c_str());
      return f.count;
    }
    shm.barrier(rank);
    for (int c = 0; c < kCalls; ++c) {
      const Status st = comm->allReduce(buf + c * kCount, buf + c * kCount, kCount, DataType::Float32, ReduceOp::Sum,
                                        algoOf(c), streams[c % 2]);
      RANK_CHECK(f, st == Status::Ok, "call %d returned %s", c, statusName(st));
    }
    for (cudaStream_t st : streams) CUDA_OK(f, cudaStreamSynchronize(st));
    CUDA_OK(f, cudaMemcpy(host.data(), buf, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
    RANK_CHECK(f, comm->deviceStatus() == Status::Ok, "deviceStatus %s", statusName(comm->deviceStatus()));
    int wrongCalls = 0;
    for (int c = 0; c < kCalls; ++c) {
      const bool twoShot = algoOf(c) == Algorithm::TwoShot;
      for (size_t i = 0; i < kCount; ++i) {
        const float want = referenceValue(0, s.nRanks, i, 7000 + c, twoShot);
        if (bitsOf(host[c * kCount + i]) != bitsOf(want)) {
          if (wrongCalls++ < 3)
            f.fail("call %d (stream %d) element %zu is %g, expected %g", c, c % 2, i, host[c * kCount + i], want);
          break;
        }
      }
    }
    shm.barrier(rank);
    comm.reset();
    cudaFree(buf);
    for (cudaStream_t st : streams) cudaStreamDestroy(st);
    return f.count;
  });
  EXPECT_EQ(report, "");
}

// The GPU's own counts (kernels/kernel_clock.cuh), as symmem-stat reads them (copied from the device
// while the communicator lives, copied into `mirror` at teardown): a graph of 64 calls (32 one-shot
// push of 4 KiB, 32 two-shot pull of 64 KiB) replayed 50 times is 1,600 executions of each algorithm
// per rank, every one counted by the algorithm's round; the calls timed (every one at period 1; at
// period 64 the first of each kernel and size, captured once and run on each of the 50 replays)
// counted and timed in their kind and size bucket, each of their executions. The sum of
// the timed executions' GPU times cannot exceed the replays' elapsed time (a communicator's calls never
// overlap), and each time lies between its entry's min and max. Ranks as processes sharing GPU 0
// where there is one GPU.
TEST(KernelsGpu, TheGpuCountsEveryExecutionAndTimesTheSampledOnes) {
  SKIP_WITHOUT_GPUS(1);
  ShmAllGather shm(2, 4096);
  const std::string report = testing::runForked(2, 240, [&](int rank) {
    RankFailures f{rank};
    RankSetup s = rankOnOwnGpu(rank, shm);
    CUDA_OK(f, cudaSetDevice(s.device));
    constexpr int kCalls = 64, kReplays = 50, kPerAlgorithm = kCalls / 2 * kReplays;
    constexpr size_t kSmall = 1024, kLarge = 16384;  // floats: 4 KiB and 64 KiB
    const int small = stats::kernelKind(false, 0), smallBucket = stats::sizeBucket(4096);
    const int large = stats::kernelKind(true, 1), largeBucket = stats::sizeBucket(65536);
    for (const uint32_t period : {1u, 64u}) {
      auto mirror = std::make_unique<stats::GpuCounts>();
      std::string why;
      auto comm = makeComm(s, &why);
      if (!comm) {
        f.fail("create failed: %s", why.c_str());
        return f.count;
      }
      RANK_CHECK(f, comm->publishKernelStats(mirror.get(), period), "the kernels' statistics could not be kept");
      cudaStream_t stream;
      CUDA_OK(f, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      float* buf = nullptr;
      CUDA_OK(f, cudaMalloc(&buf, kLarge * sizeof(float)));
      CUDA_OK(f, cudaMemset(buf, 0, kLarge * sizeof(float)));
      cudaGraph_t graph;
      CUDA_OK(f, cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      for (int c = 0; c < kCalls; ++c) {
        const bool isLarge = c % 2 == 1;
        bool captured = false;
        const Status st = comm->allReduce(buf, buf, isLarge ? kLarge : kSmall, DataType::Float32, ReduceOp::Sum,
                                          isLarge ? KernelChoice(Algorithm::TwoShot, SymVariant::Pull)
                                                  : KernelChoice(Algorithm::OneShot, SymVariant::Push),
                                          stream, &captured);
        RANK_CHECK(f, st == Status::Ok && captured, "call %d: %s, captured %d", c, statusName(st), captured ? 1 : 0);
      }
      CUDA_OK(f, cudaStreamEndCapture(stream, &graph));
      cudaGraphExec_t exec;
      CUDA_OK(f, cudaGraphInstantiate(&exec, graph, 0));
      cudaEvent_t begin, end;
      CUDA_OK(f, cudaEventCreate(&begin));
      CUDA_OK(f, cudaEventCreate(&end));
      shm.barrier(rank);
      CUDA_OK(f, cudaEventRecord(begin, stream));
      for (int i = 0; i < kReplays; ++i) CUDA_OK(f, cudaGraphLaunch(exec, stream));
      CUDA_OK(f, cudaEventRecord(end, stream));
      CUDA_OK(f, cudaStreamSynchronize(stream));
      float ms = 0;
      CUDA_OK(f, cudaEventElapsedTime(&ms, begin, end));
      RANK_CHECK(f, comm->deviceStatus() == Status::Ok, "deviceStatus %s", statusName(comm->deviceStatus()));
      // While it lives, a copy (what the plugin's publisher thread makes every 0.1 s) has every
      // execution that has ended; nothing reaches `mirror` before teardown.
      auto live = std::make_unique<stats::GpuCounts>();
      RANK_CHECK(f, comm->copyKernelStats(live.get(), 2000), "the live copy failed");
      RANK_CHECK(f, live->runs[0] == kPerAlgorithm && live->runs[1] == kPerAlgorithm,
                 "period %u: the live copy shows %llu one-shot and %llu two-shot executions of %d each", period,
                 static_cast<unsigned long long>(live->runs[0]), static_cast<unsigned long long>(live->runs[1]),
                 kPerAlgorithm);
      const uint64_t expected = (kCalls / 2 + period - 1) / period * kReplays;
      RANK_CHECK(f, live->timed[small][smallBucket].count == expected,
                 "period %u: the live copy shows %llu one-shot executions timed of %llu", period,
                 static_cast<unsigned long long>(live->timed[small][smallBucket].count),
                 static_cast<unsigned long long>(expected));
      RANK_CHECK(f, mirror->runs[0] == 0 && mirror->timed[small][smallBucket].count == 0,
                 "the kernels wrote host memory before teardown");
      shm.barrier(rank);
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      comm.reset();
      const stats::KernelEntry& oneShot = mirror->timed[small][smallBucket];
      const stats::KernelEntry& twoShot = mirror->timed[large][largeBucket];
      uint64_t everywhere = 0, sumNs = 0;
      for (int k = 0; k < stats::kKernelKinds; ++k)
        for (int b = 0; b < stats::kBuckets; ++b) {
          everywhere += mirror->timed[k][b].count;
          sumNs += mirror->timed[k][b].sumNs;
        }
      RANK_CHECK(f, mirror->runs[0] == kPerAlgorithm && mirror->runs[1] == kPerAlgorithm,
                 "period %u: %llu one-shot and %llu two-shot executions, expected %d each", period,
                 static_cast<unsigned long long>(mirror->runs[0]), static_cast<unsigned long long>(mirror->runs[1]),
                 kPerAlgorithm);
      RANK_CHECK(f, oneShot.count == expected && twoShot.count == expected,
                 "period %u: one-shot push 4 KiB %llu timed, two-shot pull 64 KiB %llu, expected %llu each", period,
                 static_cast<unsigned long long>(oneShot.count), static_cast<unsigned long long>(twoShot.count),
                 static_cast<unsigned long long>(expected));
      RANK_CHECK(f, everywhere == 2 * expected, "period %u: %llu timed in all, expected %llu", period,
                 static_cast<unsigned long long>(everywhere), static_cast<unsigned long long>(2 * expected));
      for (const stats::KernelEntry* e : {&oneShot, &twoShot}) {
        RANK_CHECK(f, e->minNs > 0 && e->minNs <= e->maxNs, "min %llu max %llu",
                   static_cast<unsigned long long>(e->minNs), static_cast<unsigned long long>(e->maxNs));
        RANK_CHECK(f, e->count == 0 || (e->minNs * e->count <= e->sumNs && e->sumNs <= e->maxNs * e->count),
                   "sum %llu outside count x [min, max]", static_cast<unsigned long long>(e->sumNs));
      }
      const double elapsedNs = static_cast<double>(ms) * 1e6;
      RANK_CHECK(f, static_cast<double>(sumNs) <= elapsedNs * 1.01,
                 "the kernels' GPU time (%.0f us) exceeds the replays' elapsed time (%.0f us)", sumNs / 1e3,
                 elapsedNs / 1e3);
      if (rank == 0 && oneShot.count != 0 && twoShot.count != 0)
        std::fprintf(stderr,
                     "[rank 0] period %u: %d executions, %llu timed: one-shot push 4 KiB mean %.2f us (min %.2f, "
                     "max %.2f); two-shot pull 64 KiB mean %.2f us; replays %.1f us per call elapsed\n",
                     period, kCalls * kReplays, static_cast<unsigned long long>(everywhere),
                     oneShot.sumNs / 1e3 / oneShot.count, oneShot.minNs / 1e3, oneShot.maxNs / 1e3,
                     twoShot.sumNs / 1e3 / twoShot.count, elapsedNs / 1e3 / (kCalls * kReplays));
      cudaEventDestroy(begin);
      cudaEventDestroy(end);
      cudaFree(buf);
      cudaStreamDestroy(stream);
      shm.barrier(rank);
    }
    return f.count;
  });
  EXPECT_EQ(report, "");
}

// One process drives both GPUs from two threads: peers are reached through peer access, not IPC.
TEST(KernelsGpu, OneProcessTwoGpus) {
  SKIP_WITHOUT_GPUS(2);
  const std::string report = testing::runForked(1, 240, [&](int) {
    ShmAllGather shm(2, 4096);
    int failures[2] = {0, 0};
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        RankFailures f{r};
        RankSetup s;
        s.rank = r;
        s.device = r;
        s.shm = &shm;
        SweepOptions o;
        o.ops = {0, 2};
        o.oneShotLimit = 64 << 10;
        o.twoShotLimit = 1 << 20;
        correctnessSweep(s, o, f);
        graphSuite(s, 1000, f);
        failures[r] = f.count;
      });
    }
    for (auto& t : threads) t.join();
    return failures[0] + failures[1];
  });
  EXPECT_EQ(report, "");
}

// World sizes 3..8: several ranks per GPU in one process (threads), peers on the same device use the
// buffer directly. Small grids so that every rank's blocks are resident at once.
TEST(KernelsGpu, ManyRanksOneProcess) {
  SKIP_WITHOUT_GPUS(1);
  for (int n : {3, 4, 8}) {
    const std::string report = runThreadRanks(n, 240, [&](RankSetup& s, RankFailures& f) {
      s.oneShotMax = 64 << 10;
      s.twoShotMax = 512 << 10;
      SweepOptions o;
      o.ops = {0, 1, 3};
      o.allTypes = n != 8;
      correctnessSweep(s, o, f);
    });
    EXPECT_EQ(report, "") << n << " ranks";
  }
}

// A failure on one rank makes every rank fall back with a reason, without hanging.
TEST(KernelsGpu, SetupFailureOnOneRankFailsAll) {
  SKIP_WITHOUT_GPUS(1);
  for (int variant = 0; variant < 2; ++variant) {
    ShmAllGather shm(2, 4096, 30000);
    const std::string report = testing::runForked(2, 60, [&](int rank) {
      RankFailures f{rank};
      RankSetup s = rankOnOwnGpu(rank, shm);
      if (rank == 1 && variant == 0) s.device = 99;             // no such device
      if (rank == 1 && variant == 1) s.oneShotMax = 128 << 10;  // disagrees on the layout
      std::string why;
      auto comm = makeComm(s, &why);
      RANK_CHECK(f, comm == nullptr, "variant %d: create succeeded", variant);
      RANK_CHECK(f, why.find("rank 1") != std::string::npos, "variant %d: reason does not name rank 1: '%s'", variant,
                 why.c_str());
      if (rank == 0) std::fprintf(stderr, "[rank 0] variant %d fell back: %s\n", variant, why.c_str());
      return f.count;
    });
    EXPECT_EQ(report, "") << "variant " << variant;
  }
}

// Every variant (push, pull, staged), one-shot and two-shot, at 2, 3, 4 and 8 ranks, several ranks per
// GPU where there are fewer GPUs: the correctness sweep (dtypes, ops, odd sizes, unaligned, in and out
// of place), bit-exact and identical on every rank.
TEST(KernelsGpu, EveryVariantAtTwoToEightRanks) {
  SKIP_WITHOUT_GPUS(1);
  for (int n : {2, 3, 4, 8}) {
    const std::string report = runThreadRanks(n, 300, [&](RankSetup& s, RankFailures& f) {
      s.oneShotMax = 64 << 10;
      s.twoShotMax = 256 << 10;
      SweepOptions o;
      o.variants = {SymVariant::Push, SymVariant::Pull, SymVariant::Staged};
      o.ops = n <= 4 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{0, 2};
      o.allTypes = n != 8;
      correctnessSweep(s, o, f);
    });
    EXPECT_EQ(report, "") << n << " ranks";
  }
}

// The halves variant, one-shot and two-shot, at 4, 6 and 8 ranks (contiguous and interleaved halves),
// several ranks per GPU where there are fewer GPUs: the correctness sweep (dtypes, ops, odd sizes,
// unaligned, in and out of place), exact and identical on every rank, its calls between push calls on
// the same communicator.
TEST(KernelsGpu, HalvesVariantAtFourSixEightRanks) {
  SKIP_WITHOUT_GPUS(1);
  for (const auto& [n, interleaved] :
       {std::pair{4, true}, std::pair{6, false}, std::pair{8, false}, std::pair{8, true}}) {
    const std::string report =
        runThreadRanks(n, 300, [&, n = n, interleaved = interleaved](RankSetup& s, RankFailures& f) {
          s.oneShotMax = 64 << 10;
          s.twoShotMax = 256 << 10;
          s.halves = true;
          s.halfOf = halvesFor(n, interleaved);
          SweepOptions o;
          o.variants = {SymVariant::Halves, SymVariant::Push, SymVariant::Halves};
          o.ops = n <= 4 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{0, 1, 3};
          o.allTypes = n != 8 || interleaved;
          correctnessSweep(s, o, f);
        });
    EXPECT_EQ(report, "") << n << " ranks" << (interleaved ? ", interleaved halves" : "");
  }
}

// Ranks that disagree about the halves, or halves that cannot be used, give no rank a comm, every rank
// naming the same reason; a comm without halves answers a halves call with Unsupported.
TEST(KernelsGpu, HalvesThatRanksDisagreeOnFailEveryRank) {
  SKIP_WITHOUT_GPUS(1);
  constexpr int n = 4;
  for (int how = 0; how < 2; ++how) {
    const std::string report = runThreadRanks(n, 120, [&](RankSetup& s, RankFailures& f) {
      s.oneShotMax = 64 << 10;
      s.twoShotMax = 64 << 10;
      s.halves = true;
      s.halfOf = halvesFor(n, false);
      if (how == 0 && s.rank == 3) s.halfOf = halvesFor(n, true);  // rank 3 sees other halves
      if (how == 1) s.halfOf = {0, 0, 0, 1};                       // unequal, on every rank
      std::string why;
      auto comm = makeComm(s, &why);
      RANK_CHECK(f, comm == nullptr, "case %d: create succeeded", how);
      const char* want = how == 0 ? "rank 3 disagrees with rank 0 on the halves" : "unequal halves";
      RANK_CHECK(f, why.find(want) != std::string::npos, "case %d: reason '%s' does not say '%s'", how, why.c_str(),
                 want);
    });
    EXPECT_EQ(report, "") << "case " << how;
  }
  const std::string report = runThreadRanks(n, 120, [&](RankSetup& s, RankFailures& f) {
    s.oneShotMax = 64 << 10;
    s.twoShotMax = 64 << 10;
    cudaSetDevice(s.device);
    std::string why;
    auto comm = makeComm(s, &why);
    if (!comm) {
      f.fail("create failed: %s", why.c_str());
      return;
    }
    float* buf = nullptr;
    cudaMalloc(&buf, 64);
    for (Algorithm algo : {Algorithm::OneShot, Algorithm::TwoShot}) {
      const Status st =
          comm->allReduce(buf, buf, 16, DataType::Float32, ReduceOp::Sum, {algo, SymVariant::Halves}, nullptr);
      RANK_CHECK(f, st == Status::Unsupported, "a halves call without halves returned %s", statusName(st));
    }
    s.shm->barrier(s.rank);
    comm.reset();
    cudaFree(buf);
  });
  EXPECT_EQ(report, "");
}

// One communicator per rank through long graphs and eager calls, across algorithms and variants, as
// a job that captures its steady state and runs its warm-up eagerly would: phases of 64 calls back to
// back (8 B - 4 KiB, fresh inputs per phase, every call its own buffers), each phase either captured
// in one graph and replayed three times or issued eagerly, on 3, 4 and 8 ranks sharing the GPUs
// there are. Caught: kernels that admitted their successor before waiting for their predecessor let
// a whole graph become resident at once, each grid parked in its wait, and a kernel that other ranks
// waited for did not start (peer timeouts in a graph phase at 3 and 4 ranks sharing one H200,
// SYMMEM_GPU_TESTS_COST_SWITCHES=1; docs/kernels.md).
TEST(KernelsGpu, LongGraphsThenEagerCallsOnOneCommunicator) {
  SKIP_WITHOUT_GPUS(1);
  constexpr int kCalls = 64, kReplays = 3;
  constexpr size_t kMaxElems = 1024;  // 4 KiB of fp32
  const size_t sizes[4] = {2, 16, 128, 1024};
  // Where the ranks form halves (4 and 8, interleaved at 4), the halves variant's calls mix with the
  // others' on the same round records.
  struct Phase {
    bool graph;
    int kind;  // index into kinds, or -1: call i runs kinds[i % kinds.size()]
  };
  const Phase phases[] = {{true, 0}, {false, 1}, {true, -1}, {false, -1}, {true, 2}, {false, 0}, {true, 1}, {true, 6}};
  for (int n : {3, 4, 8}) {
    std::vector<KernelChoice> kinds = {
        {Algorithm::OneShot, SymVariant::Push},   {Algorithm::TwoShot, SymVariant::Push},
        {Algorithm::OneShot, SymVariant::Pull},   {Algorithm::TwoShot, SymVariant::Pull},
        {Algorithm::OneShot, SymVariant::Staged}, {Algorithm::TwoShot, SymVariant::Staged}};
    const bool halves = n % 2 == 0;
    kinds.push_back(halves ? KernelChoice{Algorithm::OneShot, SymVariant::Halves} : kinds[0]);
    if (halves) kinds.push_back({Algorithm::TwoShot, SymVariant::Halves});
    const std::string report = runThreadRanks(n, 180, [&](RankSetup& s, RankFailures& f) {
      s.oneShotMax = 64 << 10;
      s.twoShotMax = 64 << 10;
      s.timeoutMs = 5000;
      s.halves = halves;
      s.halfOf = halvesFor(n, n == 4);
      if (cudaSetDevice(s.device) != cudaSuccess) {
        f.fail("cudaSetDevice(%d) failed", s.device);
        return;
      }
      std::string why;
      auto comm = makeComm(s, &why);
      if (!comm) {
        f.fail("create failed: %s", why.c_str());
        return;
      }
      cudaStream_t stream = nullptr;
      float* in = nullptr;
      float* out = nullptr;
      const size_t total = kCalls * kMaxElems;
      if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
          cudaMalloc(&in, total * sizeof(float)) != cudaSuccess ||
          cudaMalloc(&out, total * sizeof(float)) != cudaSuccess) {
        f.fail("allocation failed");
        return;
      }
      std::vector<float> host(total), got(total);
      int phaseIndex = 0;
      for (const Phase& ph : phases) {
        ++phaseIndex;
        // Integer values: every sum over up to 8 ranks is exact, and differs from every other phase's.
        auto value = [&](int rank, int call, size_t e) {
          return static_cast<float>((rank + 1) * 3 + static_cast<int>((call * 7 + e) % 13) + phaseIndex * 100);
        };
        for (int i = 0; i < kCalls; ++i)
          for (size_t e = 0; e < kMaxElems; ++e) host[i * kMaxElems + e] = value(s.rank, i, e);
        if (cudaMemcpy(in, host.data(), total * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) {
          f.fail("phase %d: input copy failed", phaseIndex);
          break;
        }
        auto issue = [&]() {
          for (int i = 0; i < kCalls; ++i) {
            const KernelChoice k = kinds[ph.kind >= 0 ? static_cast<size_t>(ph.kind) : i % kinds.size()];
            const Status st = comm->allReduce(in + i * kMaxElems, out + i * kMaxElems, sizes[i % 4], DataType::Float32,
                                              ReduceOp::Sum, k, stream);
            if (st != Status::Ok) return st;
          }
          return Status::Ok;
        };
        cudaGraphExec_t exec = nullptr;
        Status st = Status::Ok;
        if (ph.graph) {
          cudaGraph_t g = nullptr;
          if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
            f.fail("phase %d: capture failed", phaseIndex);
            break;
          }
          st = issue();
          if (cudaStreamEndCapture(stream, &g) != cudaSuccess || st != Status::Ok ||
              cudaGraphInstantiate(&exec, g, 0) != cudaSuccess) {
            f.fail("phase %d: capture of the calls failed (%s)", phaseIndex, statusName(st));
            if (g) cudaGraphDestroy(g);
            break;
          }
          cudaGraphDestroy(g);
        }
        for (int rep = 0; rep < (ph.graph ? kReplays : 1) && st == Status::Ok; ++rep) {
          cudaMemsetAsync(out, 0, total * sizeof(float), stream);
          if (ph.graph)
            cudaGraphLaunch(exec, stream);
          else
            st = issue();
        }
        const cudaError_t err = cudaStreamSynchronize(stream);
        if (exec) cudaGraphExecDestroy(exec);
        if (err != cudaSuccess || st != Status::Ok || comm->deviceStatus() != Status::Ok) {
          f.fail("phase %d (%s): %s, status %s, device status %s (waited for rank %d)", phaseIndex,
                 ph.graph ? "graph" : "eager", cudaGetErrorString(err), statusName(st),
                 statusName(comm->deviceStatus()), comm->waitedRank());
          break;
        }
        if (cudaMemcpy(got.data(), out, total * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) {
          f.fail("phase %d: output copy failed", phaseIndex);
          break;
        }
        int wrong = 0;
        for (int i = 0; i < kCalls; ++i)
          for (size_t e = 0; e < sizes[i % 4]; ++e) {
            float want = 0.0f;
            for (int q = 0; q < n; ++q) want += value(q, i, e);
            if (got[i * kMaxElems + e] != want && wrong++ < 3)
              f.fail("phase %d (%s) call %d element %zu: %g, expected %g", phaseIndex, ph.graph ? "graph" : "eager", i,
                     e, got[i * kMaxElems + e], want);
          }
        if (wrong > 0) break;
      }
      s.shm->barrier(s.rank);
      comm.reset();
      cudaFree(in);
      cudaFree(out);
      cudaStreamDestroy(stream);
    });
    EXPECT_EQ(report, "") << n << " ranks";
  }
}

// 16-bit sums accumulate in fp32 and round once: 256 + 1 + 1 + 1 is 260 in bf16 (per-step rounding
// gives 256), 2048 + 1 + 1 + 1 is 2052 in fp16 (per step: 2048), in every variant and algorithm, on
// every rank. The halves variant's partials cross the middle in fp32 (rounded to bf16, half 0's 257
// would be 256, and the result 258).
TEST(KernelsGpu, HalfSumsAccumulateInFp32) {
  SKIP_WITHOUT_GPUS(1);
  constexpr int n = 4;
  const std::string report = runThreadRanks(n, 120, [&](RankSetup& s, RankFailures& f) {
    const int r = s.rank;
    cudaSetDevice(s.device);
    s.oneShotMax = 64 << 10;
    s.twoShotMax = 256 << 10;
    s.halves = true;  // {0, 1} and {2, 3}: partials 257 and 2 (fp32), 259 rounded once
    s.halfOf = halvesFor(n, false);
    std::string why;
    auto comm = makeComm(s, &why);
    if (!comm) {
      f.fail("create failed: %s", why.c_str());
      return;
    }
    ShmAllGather& shm = *s.shm;
    cudaStream_t stream;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    constexpr size_t kCount = 1000;
    void* buf = nullptr;
    cudaMalloc(&buf, kCount * 2);
    std::vector<uint16_t> host(kCount);
    for (SymVariant variant : {SymVariant::Push, SymVariant::Pull, SymVariant::Staged, SymVariant::Halves}) {
      for (Algorithm algo : {Algorithm::OneShot, Algorithm::TwoShot}) {
        for (int half = 0; half < 2; ++half) {
          const float big = half ? 2048.0f : 256.0f;
          const float mine = r == 0 ? big : 1.0f;
          const auto bits =
              static_cast<uint16_t>(half ? bitsOf(__float2half_rn(mine)) : bitsOf(__float2bfloat16_rn(mine)));
          std::fill(host.begin(), host.end(), bits);
          cudaMemcpy(buf, host.data(), kCount * 2, cudaMemcpyHostToDevice);
          shm.barrier(r);
          const Status st = comm->allReduce(buf, buf, kCount, half ? DataType::Float16 : DataType::Bfloat16,
                                            ReduceOp::Sum, {algo, variant}, stream);
          RANK_CHECK(f, st == Status::Ok, "allReduce returned %s", statusName(st));
          cudaStreamSynchronize(stream);
          cudaMemcpy(host.data(), buf, kCount * 2, cudaMemcpyDeviceToHost);
          const float want = big + 4.0f;  // the fp32 sum (big + 3) rounded once, to even
          const auto wantBits =
              static_cast<uint16_t>(half ? bitsOf(__float2half_rn(want)) : bitsOf(__float2bfloat16_rn(want)));
          int wrong = 0;
          for (uint16_t b : host) wrong += b != wantBits;
          RANK_CHECK(f, wrong == 0, "%s %s %s: %d of %zu elements differ from %g (first 0x%04x, want 0x%04x)",
                     half ? "fp16" : "bf16", algo == Algorithm::OneShot ? "one-shot" : "two-shot",
                     std::string(symVariantName(variant)).c_str(), wrong, kCount, want, host[0], wantBits);
        }
      }
    }
    shm.barrier(r);
    comm.reset();
    cudaFree(buf);
    cudaStreamDestroy(stream);
  });
  EXPECT_EQ(report, "");
}

// Create and destroy repeatedly: IPC handles closed, buffers freed, nothing left behind.
TEST(KernelsGpu, CreateDestroyRepeatedly) {
  SKIP_WITHOUT_GPUS(1);
  ShmAllGather shm(2, 4096);
  const std::string report = testing::runForked(2, 120, [&](int rank) {
    RankFailures f{rank};
    CUDA_OK(f, cudaSetDevice(rank % gpusPresent()));
    size_t free0 = 0, total = 0;
    for (int i = 0; i < 20; ++i) {
      RankSetup s = rankOnOwnGpu(rank, shm);
      std::string why;
      auto comm = makeComm(s, &why);
      RANK_CHECK(f, comm != nullptr, "create %d failed: %s", i, why.c_str());
      shm.barrier(rank);
      comm.reset();
      shm.barrier(rank);
      if (i == 0) cudaMemGetInfo(&free0, &total);
    }
    size_t free1 = 0;
    cudaMemGetInfo(&free1, &total);
    RANK_CHECK(f, free1 + (64 << 20) >= free0, "device memory shrank by %zu bytes over 19 create/destroy",
               free0 - free1);
    return f.count;
  });
  EXPECT_EQ(report, "");
}

// One thread drives every rank (ncclCommInitAll, nccl-tests -g N, a held group's end): the ranks' calls
// are launched one after another from that thread, each on its rank's stream, and only then waited
// for. Every variant and algorithm, fp32 and bf16, odd sizes, in and out of place, eager and each
// rank's call captured into its own graph and replayed; exact. Setup still runs one thread per rank
// (its exchange waits for every rank, as the plugin's does after a group's end).
TEST(KernelsGpu, OneThreadDrivesEveryRank) {
  SKIP_WITHOUT_GPUS(1);
  for (int n : {2, 4}) {
    const std::string report = testing::runForked(1, 240, [&](int) {
      RankFailures f{0};
      ShmAllGather shm(n, 4096);
      constexpr size_t kMaxCount = 4097;
      struct Rank {
        std::unique_ptr<SymmetricComm> comm;
        cudaStream_t stream = nullptr;
        float* send = nullptr;
        float* recv = nullptr;
        int device = 0;
      };
      std::vector<Rank> ranks(n);
      for (int r = 0; r < n; ++r) {
        ranks[r].device = r % gpusPresent();
        CUDA_OK(f, cudaSetDevice(ranks[r].device));
        CUDA_OK(f, cudaStreamCreateWithFlags(&ranks[r].stream, cudaStreamNonBlocking));
        CUDA_OK(f, cudaMalloc(&ranks[r].send, kMaxCount * sizeof(float)));
        CUDA_OK(f, cudaMalloc(&ranks[r].recv, kMaxCount * sizeof(float)));
      }
      {
        std::vector<std::thread> setup;
        std::vector<std::string> whys(n);
        for (int r = 0; r < n; ++r)
          setup.emplace_back([&, r] {
            RankSetup s;
            s.rank = r;
            s.nRanks = n;
            s.device = ranks[r].device;
            s.shm = &shm;
            s.maxBlocks = 4;
            s.oneShotMax = 64 << 10;
            s.twoShotMax = 64 << 10;
            cudaSetDevice(s.device);
            ranks[r].comm = makeComm(s, &whys[r]);
          });
        for (auto& t : setup) t.join();
        for (int r = 0; r < n; ++r) RANK_CHECK(f, ranks[r].comm != nullptr, "rank %d: %s", r, whys[r].c_str());
        if (f.count) return f.count;
      }
      std::vector<float> host(kMaxCount), got(kMaxCount);
      for (SymVariant variant : {SymVariant::Push, SymVariant::Pull, SymVariant::Staged}) {
        for (Algorithm algorithm : {Algorithm::OneShot, Algorithm::TwoShot}) {
          for (int t = 0; t < 2; ++t) {  // fp32, bf16 (the same small integers, exact in both)
            const DataType dtype = t == 0 ? DataType::Float32 : DataType::Bfloat16;
            const size_t elem = t == 0 ? 4 : 2;
            for (size_t count : {size_t{1}, size_t{7}, size_t{1023}, size_t{4097}}) {
              for (int inPlace = 0; inPlace < 2; ++inPlace) {
                for (int graph = 0; graph < 2; ++graph) {
                  // Inputs: rank r holds (r + 1) * (i % 7 + 1); the sum is (i % 7 + 1) * n(n+1)/2.
                  for (int r = 0; r < n; ++r) {
                    std::vector<uint16_t> half(count);
                    for (size_t i = 0; i < count; ++i) {
                      host[i] = static_cast<float>((r + 1) * (i % 7 + 1));
                      const __nv_bfloat16 b = __float2bfloat16(host[i]);
                      std::memcpy(&half[i], &b, 2);
                    }
                    CUDA_OK(f, cudaSetDevice(ranks[r].device));
                    CUDA_OK(f, cudaMemcpy(ranks[r].send, t == 0 ? static_cast<void*>(host.data()) : half.data(),
                                          count * elem, cudaMemcpyHostToDevice));
                    CUDA_OK(f, cudaMemset(ranks[r].recv, 0xff, count * elem));
                  }
                  const KernelChoice kernel(algorithm, variant);
                  std::vector<cudaGraphExec_t> execs(n, nullptr);
                  for (int r = 0; r < n; ++r) {  // one thread, every rank, nothing waited for in between
                    Rank& k = ranks[r];
                    CUDA_OK(f, cudaSetDevice(k.device));
                    void* out = inPlace ? static_cast<void*>(k.send) : static_cast<void*>(k.recv);
                    if (graph) {
                      cudaGraph_t g = nullptr;
                      CUDA_OK(f, cudaStreamBeginCapture(k.stream, cudaStreamCaptureModeThreadLocal));
                      const Status st = k.comm->allReduce(k.send, out, count, dtype, ReduceOp::Sum, kernel, k.stream);
                      CUDA_OK(f, cudaStreamEndCapture(k.stream, &g));
                      RANK_CHECK(f, st == Status::Ok, "rank %d capture: %s", r, statusName(st));
                      CUDA_OK(f, cudaGraphInstantiate(&execs[r], g, 0));
                      cudaGraphDestroy(g);
                    } else {
                      const Status st = k.comm->allReduce(k.send, out, count, dtype, ReduceOp::Sum, kernel, k.stream);
                      RANK_CHECK(f, st == Status::Ok, "rank %d launch: %s", r, statusName(st));
                    }
                  }
                  if (graph)
                    for (int r = 0; r < n; ++r)
                      if (execs[r]) CUDA_OK(f, cudaGraphLaunch(execs[r], ranks[r].stream));
                  for (int r = 0; r < n; ++r) CUDA_OK(f, cudaStreamSynchronize(ranks[r].stream));
                  for (int r = 0; r < n; ++r) {
                    if (execs[r]) cudaGraphExecDestroy(execs[r]);
                    const void* out = inPlace ? static_cast<void*>(ranks[r].send) : static_cast<void*>(ranks[r].recv);
                    std::vector<uint16_t> half(count);
                    CUDA_OK(f, cudaMemcpy(t == 0 ? static_cast<void*>(got.data()) : half.data(), out, count * elem,
                                          cudaMemcpyDeviceToHost));
                    for (size_t i = 0; i < count; ++i) {
                      float v = got[i];
                      if (t == 1) {
                        __nv_bfloat16 b;
                        std::memcpy(&b, &half[i], 2);
                        v = __bfloat162float(b);
                      }
                      const float want = static_cast<float>((i % 7 + 1) * n * (n + 1) / 2);
                      if (v != want) {
                        f.fail("%d ranks, %s %s, %s, %zu elements, %s, %s: rank %d element %zu is %g, not %g", n,
                               std::string(symVariantName(variant)).c_str(),
                               algorithm == Algorithm::OneShot ? "one-shot" : "two-shot", t == 0 ? "fp32" : "bf16",
                               count, inPlace ? "in place" : "out of place", graph ? "graph" : "eager", r, i, v, want);
                        break;
                      }
                    }
                  }
                  if (f.count > 10) return f.count;
                }
              }
            }
          }
        }
      }
      for (int r = 0; r < n; ++r)
        RANK_CHECK(f, ranks[r].comm->deviceStatus() == Status::Ok, "rank %d deviceStatus %s", r,
                   statusName(ranks[r].comm->deviceStatus()));
      return f.count;
    });
    EXPECT_EQ(report, "") << n << " ranks driven by one thread";
  }
}

}  // namespace
}  // namespace symmem::kernels

int main(int argc, char** argv) {
  // No CUDA call here: the tests fork their ranks, which must happen before CUDA is initialised.
  // Several ranks on one GPU spin in kernels that wait for each other: each stream needs its own
  // hardware queue, or one rank's kernel queues behind another's (set before any CUDA context).
  if (symmem::kernels::gpusPresent() < 2) setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

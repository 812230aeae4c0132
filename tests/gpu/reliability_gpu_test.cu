// SPDX-License-Identifier: Apache-2.0
// GPU tests of what must never break around the symmetric path: abort with a kernel waiting for a
// peer that never comes, teardown while another thread captures a graph, captured and eager calls of
// one communicator in every mix NCCL allows, a timeout inside a replayed graph, and the one rule for
// the sign of zero. Ranks are forked processes (or threads of one) on the GPUs present; with one GPU
// they share it. Values are small integers, so every expected result is exact.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

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
#include "tests/gpu/gpu_test_macros.h"
#include "tests/gpu/rank_harness.h"

namespace symmem::kernels {
namespace {

using testing::RankFailures;
using testing::ShmAllGather;

int deviceFor(int rank) { return rank % std::max(1, testing::gpuCount()); }

std::unique_ptr<SymmetricComm> makeComm(int rank, int nRanks, ShmAllGather& shm, int64_t timeoutMs, std::string* why) {
  SymmetricConfig c;
  c.rank = rank;
  c.nRanks = nRanks;
  c.device = deviceFor(rank);
  c.oneShotMaxBytes = 256 << 10;
  c.twoShotMaxBytes = 1 << 20;
  c.timeoutMs = timeoutMs;
  c.maxBlocks = 8;
  // SYMMEM_GPU_TESTS_UNORDERED=1 turns the call order off, to see the mixing test fail without it.
  const char* unordered = std::getenv("SYMMEM_GPU_TESTS_UNORDERED");
  c.orderStreams = unordered == nullptr || std::strcmp(unordered, "1") != 0;
  return SymmetricComm::create(
      c, [&shm, rank](const void* s, void* r, size_t b) { return shm.allGather(rank, s, r, b); }, why);
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// ---- inputs and device-side checks -------------------------------------------------------------
// Call `tag`'s input on rank q: (q + 1) * (i % 13 + tag). The sum over n ranks is exact in fp32.
__host__ __device__ inline float inputOf(int tag, int q, size_t i) {
  return static_cast<float>((q + 1) * (static_cast<int>(i % 13) + tag));
}
__host__ __device__ inline float sumOf(int tag, int n, size_t i) {
  return static_cast<float>((static_cast<int>(i % 13) + tag) * n * (n + 1) / 2);
}

__global__ void fillInput(float* x, size_t count, int tag, int rank) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    x[i] = inputOf(tag, rank, i);
}
__global__ void poison(float* x, size_t count) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    x[i] = -12345.0f;
}
__global__ void countWrong(const float* out, size_t count, int tag, int n, unsigned long long* wrong) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    if (out[i] != sumOf(tag, n, i)) atomicAdd(wrong, 1ull);
}

// One call of the mixing tests: its own input, output and wrong-element counter on the device.
struct Call {
  int tag = 1;
  size_t count = 0;
  Algorithm algo = Algorithm::OneShot;
  float* in = nullptr;
  float* out = nullptr;
  unsigned long long* wrong = nullptr;
};

cudaError_t allocCall(Call& c, int rank, cudaStream_t s) {
  cudaError_t e = cudaMalloc(&c.in, c.count * sizeof(float));
  if (e == cudaSuccess) e = cudaMalloc(&c.out, c.count * sizeof(float));
  if (e == cudaSuccess) e = cudaMalloc(&c.wrong, sizeof(unsigned long long));
  if (e == cudaSuccess) e = cudaMemsetAsync(c.wrong, 0, sizeof(unsigned long long), s);
  if (e == cudaSuccess) fillInput<<<32, 256, 0, s>>>(c.in, c.count, c.tag, rank);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  return e;
}

// Enqueues poison -> all-reduce -> check on `s` (eager or captured).
Status enqueueChecked(SymmetricComm& comm, const Call& c, int n, cudaStream_t s) {
  poison<<<32, 256, 0, s>>>(c.out, c.count);
  const Status st = comm.allReduce(c.in, c.out, c.count, DataType::Float32, ReduceOp::Sum, c.algo, s);
  countWrong<<<32, 256, 0, s>>>(c.out, c.count, c.tag, n, c.wrong);
  return st;
}

unsigned long long wrongOf(const Call& c) {
  unsigned long long w = ~0ull;
  cudaMemcpy(&w, c.wrong, sizeof(w), cudaMemcpyDeviceToHost);
  return w;
}

void freeCall(Call& c) {
  cudaFree(c.in);
  cudaFree(c.out);
  cudaFree(c.wrong);
}

// ---- abort -------------------------------------------------------------------------------------
// Rank 0's kernel waits for rank 1, which never calls: abort() must end it within milliseconds (its
// timeout is 20 s), and 100 such create/wait/abort/destroy cycles must leave no device memory behind.
TEST(ReliabilityGpu, AbortEndsAWaitingKernelAndFreesEverything) {
  SKIP_WITHOUT_GPUS(1);
  const std::string report = testing::runForked(1, 300, [&](int) {
    RankFailures f{0};
    ShmAllGather shm(2, 4096, 30000);
    constexpr int kCycles = 100;
    size_t freeAfterFirst = 0, freeAfterLast = 0, total = 0;
    double slowestMs = 0;
    std::atomic<int> failures{0};
    for (int cycle = 0; cycle < kCycles && failures == 0; ++cycle) {
      std::vector<std::thread> ranks;
      for (int r = 0; r < 2; ++r) {
        ranks.emplace_back([&, r] {
          RankFailures rf{r};
          cudaSetDevice(deviceFor(r));
          std::string why;
          auto comm = makeComm(r, 2, shm, 20000, &why);
          if (!comm) {
            rf.fail("cycle %d: create failed: %s", cycle, why.c_str());
            failures += rf.count;
            shm.barrier(r);
            return;
          }
          if (r == 0) {
            cudaStream_t s;
            float* buf = nullptr;
            cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
            cudaMalloc(&buf, 4096 * sizeof(float));
            const Status st = comm->allReduce(buf, buf, 4096, DataType::Float32, ReduceOp::Sum, Algorithm::OneShot, s);
            RANK_CHECK(rf, st == Status::Ok, "cycle %d: allReduce returned %s", cycle, statusName(st));
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            RANK_CHECK(rf, cudaStreamQuery(s) == cudaErrorNotReady, "cycle %d: the kernel did not wait", cycle);
            const auto t0 = std::chrono::steady_clock::now();
            comm->abort();
            const cudaError_t e = cudaStreamSynchronize(s);
            const double ms = msSince(t0);
            slowestMs = std::max(slowestMs, ms);
            RANK_CHECK(rf, e == cudaSuccess, "cycle %d: %s", cycle, cudaGetErrorString(e));
            RANK_CHECK(rf, ms < 500, "cycle %d: the waiting kernel ended %.0f ms after abort", cycle, ms);
            comm.reset();  // frees: the kernel has ended
            cudaFree(buf);
            cudaStreamDestroy(s);
          }
          shm.barrier(r);  // rank 1 frees only once rank 0's kernel is gone (a free waits for the device)
          comm.reset();
          failures += rf.count;
        });
      }
      for (auto& t : ranks) t.join();
      cudaSetDevice(0);
      if (cycle == 0) cudaMemGetInfo(&freeAfterFirst, &total);
    }
    cudaMemGetInfo(&freeAfterLast, &total);
    std::fprintf(stderr, "[abort] %d cycles, slowest abort-to-end %.2f ms, device memory %zd bytes apart\n", kCycles,
                 slowestMs, static_cast<ssize_t>(freeAfterFirst) - static_cast<ssize_t>(freeAfterLast));
    RANK_CHECK(f, freeAfterLast + (4 << 20) >= freeAfterFirst, "device memory shrank by %zu bytes over %d cycles",
               freeAfterFirst - freeAfterLast, kCycles - 1);
    return f.count + failures.load();
  });
  EXPECT_EQ(report, "");
}

// ---- teardown during another thread's capture ---------------------------------------------------
// A thread captures a graph in the global capture mode (the default, which makes any unsafe call of
// another thread invalidate it) while both ranks' communicators are destroyed: the capture must end
// cleanly and its graph run.
TEST(ReliabilityGpu, TeardownKeepsAnotherThreadsCaptureValid) {
  SKIP_WITHOUT_GPUS(1);
  const std::string report = testing::runForked(1, 120, [&](int) {
    RankFailures f{0};
    ShmAllGather shm(2, 4096, 30000);
    CUDA_OK(f, cudaSetDevice(0));
    std::vector<std::unique_ptr<SymmetricComm>> comms(2);
    std::vector<std::thread> setup;
    for (int r = 0; r < 2; ++r)
      setup.emplace_back([&, r] {
        cudaSetDevice(deviceFor(r));
        std::string why;
        comms[r] = makeComm(r, 2, shm, 10000, &why);
      });
    for (auto& t : setup) t.join();
    RANK_CHECK(f, comms[0] && comms[1], "create failed");
    if (!comms[0] || !comms[1]) return f.count;
    // Some eager work first, so teardown has something of its own to wait for.
    std::vector<std::thread> work;
    for (int r = 0; r < 2; ++r)
      work.emplace_back([&, r] {
        cudaSetDevice(deviceFor(r));
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        Call c;
        c.count = 1000;
        allocCall(c, r, s);
        enqueueChecked(*comms[r], c, 2, s);
        cudaStreamSynchronize(s);
        freeCall(c);
        cudaStreamDestroy(s);
      });
    for (auto& t : work) t.join();

    std::atomic<int> phase{0};
    cudaError_t endErr = cudaSuccess, instErr = cudaSuccess, runErr = cudaSuccess;
    std::thread capturer([&] {
      cudaSetDevice(0);
      cudaStream_t s;
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      float* x = nullptr;
      cudaMalloc(&x, 1024 * sizeof(float));
      cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
      poison<<<1, 256, 0, s>>>(x, 1024);
      phase = 1;
      while (phase.load() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      poison<<<1, 256, 0, s>>>(x, 1024);
      cudaGraph_t g = nullptr;
      endErr = cudaStreamEndCapture(s, &g);
      cudaGraphExec_t exec = nullptr;
      if (endErr == cudaSuccess) instErr = cudaGraphInstantiate(&exec, g, 0);
      if (exec) {
        runErr = cudaGraphLaunch(exec, s);
        if (runErr == cudaSuccess) runErr = cudaStreamSynchronize(s);
        cudaGraphExecDestroy(exec);
      }
      if (g) cudaGraphDestroy(g);
      cudaFree(x);
      cudaStreamDestroy(s);
    });
    while (phase.load() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto t0 = std::chrono::steady_clock::now();
    comms[0].reset();
    comms[1].reset();
    const double ms = msSince(t0);
    phase = 2;
    capturer.join();
    std::fprintf(stderr, "[teardown] both communicators destroyed in %.2f ms during a capture\n", ms);
    RANK_CHECK(f, endErr == cudaSuccess, "the other thread's capture broke: %s", cudaGetErrorString(endErr));
    RANK_CHECK(f, instErr == cudaSuccess, "instantiate: %s", cudaGetErrorString(instErr));
    RANK_CHECK(f, runErr == cudaSuccess, "replay: %s", cudaGetErrorString(runErr));
    return f.count;
  });
  EXPECT_EQ(report, "");
}

// ---- captured and eager calls in every mix ------------------------------------------------------
// Two ranks in two processes. Each case is run the same way on both (as one program on every rank
// would), repeated many times without synchronising, and checked on the device after every call, for
// each algorithm (calls of different algorithms never share round records or slots).
enum class Mix { ParallelBranches, TwoGraphsAtOnce, ReplayBesideEager };

// Both calls of a case use one algorithm: calls of different algorithms use separate round records
// and slots, so only calls of the same one can collide.
int mixCase(int rank, ShmAllGather& shm, Mix mix, Algorithm algo, RankFailures& f) {
  constexpr int kRounds = 300;
  CUDA_OK(f, cudaSetDevice(deviceFor(rank)));
  cudaStream_t s0, s1;
  CUDA_OK(f, cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CUDA_OK(f, cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  Call a, b;
  a.tag = 1;
  a.count = 3001;  // 12 KiB and a tail
  a.algo = algo;
  b.tag = 5;
  b.count = 40000;  // 160 KiB
  b.algo = algo;
  CUDA_OK(f, allocCall(a, rank, s0));
  CUDA_OK(f, allocCall(b, rank, s0));
  std::string why;
  auto comm = makeComm(rank, 2, shm, 5000, &why);
  if (!comm) {
    f.fail("create failed: %s", why.c_str());
    return f.count;
  }
  cudaEvent_t forked, joined;
  CUDA_OK(f, cudaEventCreateWithFlags(&forked, cudaEventDisableTiming));
  CUDA_OK(f, cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
  cudaGraph_t g0 = nullptr, g1 = nullptr;
  Status st0 = Status::Ok, st1 = Status::Ok;
  if (mix == Mix::ParallelBranches) {
    // One graph: a on s0 and b on s1, forked from and joined back into s0.
    CUDA_OK(f, cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
    CUDA_OK(f, cudaEventRecord(forked, s0));
    CUDA_OK(f, cudaStreamWaitEvent(s1, forked, 0));
    st0 = enqueueChecked(*comm, a, 2, s0);
    st1 = enqueueChecked(*comm, b, 2, s1);
    CUDA_OK(f, cudaEventRecord(joined, s1));
    CUDA_OK(f, cudaStreamWaitEvent(s0, joined, 0));
    CUDA_OK(f, cudaStreamEndCapture(s0, &g0));
  } else {
    CUDA_OK(f, cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
    st0 = enqueueChecked(*comm, a, 2, s0);
    CUDA_OK(f, cudaStreamEndCapture(s0, &g0));
    if (mix == Mix::TwoGraphsAtOnce) {
      CUDA_OK(f, cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal));
      st1 = enqueueChecked(*comm, b, 2, s1);
      CUDA_OK(f, cudaStreamEndCapture(s1, &g1));
    }
  }
  RANK_CHECK(f, st0 == Status::Ok && st1 == Status::Ok, "captured calls returned %s / %s", statusName(st0),
             statusName(st1));
  cudaGraphExec_t e0 = nullptr, e1 = nullptr;
  CUDA_OK(f, cudaGraphInstantiate(&e0, g0, 0));
  if (g1) CUDA_OK(f, cudaGraphInstantiate(&e1, g1, 0));
  shm.barrier(rank);
  for (int i = 0; i < kRounds; ++i) {
    CUDA_OK(f, cudaGraphLaunch(e0, s0));
    if (mix == Mix::TwoGraphsAtOnce) CUDA_OK(f, cudaGraphLaunch(e1, s1));
    if (mix == Mix::ReplayBesideEager) {
      const Status st = enqueueChecked(*comm, b, 2, s1);
      if (st != Status::Ok) {
        f.fail("eager call %d returned %s", i, statusName(st));
        break;
      }
    }
  }
  CUDA_OK(f, cudaStreamSynchronize(s0));
  CUDA_OK(f, cudaStreamSynchronize(s1));
  const char* mixName = mix == Mix::ParallelBranches  ? "parallel branches of one graph"
                        : mix == Mix::TwoGraphsAtOnce ? "two graphs replayed at once"
                                                      : "a replay beside eager calls";
  const std::string label = std::string(mixName) + (algo == Algorithm::OneShot ? ", one-shot" : ", two-shot");
  const char* name = label.c_str();
  RANK_CHECK(f, wrongOf(a) == 0, "%s: call a: %llu wrong elements over %d rounds", name, wrongOf(a), kRounds);
  RANK_CHECK(f, wrongOf(b) == 0, "%s: call b: %llu wrong elements over %d rounds", name, wrongOf(b), kRounds);
  RANK_CHECK(f, comm->deviceStatus() == Status::Ok, "%s: deviceStatus %s", name, statusName(comm->deviceStatus()));
  shm.barrier(rank);
  if (e1) cudaGraphExecDestroy(e1);
  cudaGraphExecDestroy(e0);
  if (g1) cudaGraphDestroy(g1);
  cudaGraphDestroy(g0);
  comm.reset();
  freeCall(a);
  freeCall(b);
  cudaEventDestroy(forked);
  cudaEventDestroy(joined);
  cudaStreamDestroy(s0);
  cudaStreamDestroy(s1);
  return f.count;
}

TEST(ReliabilityGpu, CapturedAndEagerCallsInEveryMix) {
  SKIP_WITHOUT_GPUS(1);
  for (Algorithm algo : {Algorithm::OneShot, Algorithm::TwoShot}) {
    for (Mix mix : {Mix::ParallelBranches, Mix::TwoGraphsAtOnce, Mix::ReplayBesideEager}) {
      ShmAllGather shm(2, 4096, 60000);
      const std::string report = testing::runForked(2, 120, [&](int rank) {
        RankFailures f{rank};
        return mixCase(rank, shm, mix, algo, f);
      });
      EXPECT_EQ(report, "") << "mix " << static_cast<int>(mix)
                            << (algo == Algorithm::OneShot ? " one-shot" : " two-shot");
    }
  }
}

// What the call order costs under graphs (one event-record node per capture, after its last call): 64 one-shot
// 8-byte all-reduces back to back in one graph, two ranks as threads of one process (one context, so
// the ranks' kernels run side by side even on one GPU), with the order on and off. Prints the time per
// call; checks only the results (timings are not a pass/fail matter).
TEST(ReliabilityGpu, CallOrderCostUnderGraphs) {
  SKIP_WITHOUT_GPUS(1);
  const std::string report = testing::runForked(1, 120, [&](int) {
    int failures = 0;
    for (const bool ordered : {true, false}) {
      ShmAllGather shm(2, 4096, 30000);
      std::atomic<int> bad{0};
      double usPerCall[2] = {0, 0};
      std::vector<std::thread> ranks;
      for (int r = 0; r < 2; ++r) {
        ranks.emplace_back([&, r] {
          RankFailures f{r};
          cudaSetDevice(deviceFor(r));
          SymmetricConfig c;
          c.rank = r;
          c.nRanks = 2;
          c.device = deviceFor(r);
          c.oneShotMaxBytes = 64 << 10;
          c.twoShotMaxBytes = 0;
          c.timeoutMs = 10000;
          c.maxBlocks = 4;
          c.orderStreams = ordered;
          std::string why;
          auto comm = SymmetricComm::create(
              c, [&shm, r](const void* a, void* b, size_t n) { return shm.allGather(r, a, b, n); }, &why);
          if (!comm) {
            bad += 1;
            shm.barrier(r);
            return;
          }
          cudaStream_t s;
          cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
          float *in = nullptr, *out = nullptr;
          cudaMalloc(&in, 2 * sizeof(float));
          cudaMalloc(&out, 2 * sizeof(float));
          const float ones[2] = {1.0f, 1.0f};
          cudaMemcpy(in, ones, sizeof(ones), cudaMemcpyHostToDevice);
          constexpr int kCalls = 64, kReplays = 50;
          cudaGraph_t g = nullptr;
          cudaGraphExec_t e = nullptr;
          cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
          for (int i = 0; i < kCalls; ++i)
            comm->allReduce(in, out, 2, DataType::Float32, ReduceOp::Sum, Algorithm::OneShot, s);
          cudaStreamEndCapture(s, &g);
          cudaGraphInstantiate(&e, g, 0);
          cudaGraphLaunch(e, s);
          cudaStreamSynchronize(s);
          shm.barrier(r);
          const auto t0 = std::chrono::steady_clock::now();
          for (int i = 0; i < kReplays; ++i) cudaGraphLaunch(e, s);
          cudaStreamSynchronize(s);
          usPerCall[r] = msSince(t0) * 1000.0 / (kCalls * kReplays);
          float got[2] = {0, 0};
          cudaMemcpy(got, out, sizeof(got), cudaMemcpyDeviceToHost);
          RANK_CHECK(f, got[0] == 2.0f && got[1] == 2.0f, "order %s: result %g %g, expected 2 2",
                     ordered ? "on" : "off", got[0], got[1]);
          RANK_CHECK(f, comm->deviceStatus() == Status::Ok, "deviceStatus %s", statusName(comm->deviceStatus()));
          shm.barrier(r);
          cudaGraphExecDestroy(e);
          cudaGraphDestroy(g);
          comm.reset();
          cudaFree(in);
          cudaFree(out);
          cudaStreamDestroy(s);
          bad += f.count;
        });
      }
      for (auto& t : ranks) t.join();
      std::fprintf(stderr,
                   "[call order %s] one-shot 8 B in a graph of 64 calls: %.2f us per call (rank 0), %.2f (rank 1)\n",
                   ordered ? "on " : "off", usPerCall[0], usPerCall[1]);
      failures += bad.load();
    }
    return failures;
  });
  EXPECT_EQ(report, "");
}

// ---- a timeout inside a replayed graph ----------------------------------------------------------
// Rank 1 never replays its graph: rank 0's replays end at the timeout and the communicator reports it
// (the interposer turns that into ncclCommGetAsyncError and one WARN, tested on CPU).
TEST(ReliabilityGpu, ATimeoutInsideAReplayedGraphIsReported) {
  SKIP_WITHOUT_GPUS(1);
  ShmAllGather shm(2, 4096, 60000);
  const std::string report = testing::runForked(2, 120, [&](int rank) {
    RankFailures f{rank};
    CUDA_OK(f, cudaSetDevice(deviceFor(rank)));
    std::string why;
    auto comm = makeComm(rank, 2, shm, 300, &why);
    if (!comm) {
      f.fail("create failed: %s", why.c_str());
      return f.count;
    }
    if (rank == 0) {
      cudaStream_t s;
      CUDA_OK(f, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      Call c;
      c.count = 999;
      CUDA_OK(f, allocCall(c, rank, s));
      cudaGraph_t g;
      CUDA_OK(f, cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      enqueueChecked(*comm, c, 2, s);
      CUDA_OK(f, cudaStreamEndCapture(s, &g));
      cudaGraphExec_t e;
      CUDA_OK(f, cudaGraphInstantiate(&e, g, 0));
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 3; ++i) CUDA_OK(f, cudaGraphLaunch(e, s));
      CUDA_OK(f, cudaStreamSynchronize(s));
      const double ms = msSince(t0);
      RANK_CHECK(f, ms < 3000, "three replays took %.0f ms (timeout 300 ms, later replays exit at once)", ms);
      RANK_CHECK(f, comm->deviceStatus() == Status::PeerTimeout, "deviceStatus %s", statusName(comm->deviceStatus()));
      RANK_CHECK(f, comm->waitedRank() == 1, "waited for rank %d, expected 1", comm->waitedRank());
      RANK_CHECK(f, wrongOf(c) >= 999, "the timed-out output should be left unwritten, %llu wrong", wrongOf(c));
      cudaGraphExecDestroy(e);
      cudaGraphDestroy(g);
      freeCall(c);
      cudaStreamDestroy(s);
    }
    shm.barrier(rank);
    comm.reset();
    return f.count;
  });
  EXPECT_EQ(report, "");
}

// ---- the sign of zero ----------------------------------------------------------------------------
// prod(-0.0, -3.0) is +0.0 from one-shot and two-shot alike, bit for bit, on both ranks.
TEST(ReliabilityGpu, OneRuleForTheSignOfZero) {
  SKIP_WITHOUT_GPUS(1);
  ShmAllGather shm(2, 4096, 60000);
  const std::string report = testing::runForked(2, 60, [&](int rank) {
    RankFailures f{rank};
    CUDA_OK(f, cudaSetDevice(deviceFor(rank)));
    std::string why;
    auto comm = makeComm(rank, 2, shm, 10000, &why);
    if (!comm) {
      f.fail("create failed: %s", why.c_str());
      return f.count;
    }
    cudaStream_t s;
    CUDA_OK(f, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float* x = nullptr;
    CUDA_OK(f, cudaMalloc(&x, 4 * sizeof(float)));
    for (Algorithm algo : {Algorithm::OneShot, Algorithm::TwoShot}) {
      const float mine[4] = {rank == 0 ? -0.0f : -3.0f, rank == 0 ? -3.0f : -0.0f, -0.0f, 2.0f};
      CUDA_OK(f, cudaMemcpy(x, mine, sizeof(mine), cudaMemcpyHostToDevice));
      const Status st = comm->allReduce(x, x, 4, DataType::Float32, ReduceOp::Prod, algo, s);
      RANK_CHECK(f, st == Status::Ok, "allReduce returned %s", statusName(st));
      CUDA_OK(f, cudaStreamSynchronize(s));
      uint32_t got[4];
      CUDA_OK(f, cudaMemcpy(got, x, sizeof(got), cudaMemcpyDeviceToHost));
      const uint32_t want[4] = {0u, 0u, 0u, 0x40800000u};  // +0.0, +0.0, +0.0, 4.0
      for (int i = 0; i < 4; ++i)
        RANK_CHECK(f, got[i] == want[i], "%s element %d: 0x%08x, expected 0x%08x",
                   algo == Algorithm::OneShot ? "one-shot" : "two-shot", i, got[i], want[i]);
    }
    shm.barrier(rank);
    comm.reset();
    cudaFree(x);
    cudaStreamDestroy(s);
    return f.count;
  });
  EXPECT_EQ(report, "");
}

}  // namespace
}  // namespace symmem::kernels

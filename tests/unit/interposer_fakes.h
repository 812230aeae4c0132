// SPDX-License-Identifier: Apache-2.0
#pragma once
// A stand-in NCCL (calls counted and logged in order, communicators as fake pointers with a size) and a
// stand-in for the kernels, for the interposer's tests without GPUs.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/log.h"
#include "plugin/interpose/interposer.h"

namespace symmem {
namespace {

// A stand-in NCCL: counts calls; communicators are fake pointers with a size table.
struct FakeNccl {
  static inline int allReduces = 0, destroys = 0, groupStarts = 0, groupEnds = 0, aborts = 0, finalizes = 0;
  static inline int allReduceConfigs = 0, simulateEnds = 0;
  static inline ncclResult_t groupEndAnswer = ncclSuccess;
  // Every call in order ("start", "end", "nccl 0x5000", "sym 0x5000", "setup 0x5000", ...): the order
  // across NCCL and the symmetric kernels is what the group rules are about.
  static inline std::vector<std::string> events;
  static void note(const char* what, const void* comm = nullptr) {
    char b[64];
    std::snprintf(b, sizeof(b), comm ? "%s %p" : "%s", what, comm);
    events.push_back(b);
  }
  static inline std::map<ncclComm_t, int> sizes;
  static inline std::map<ncclComm_t, int> devices;  // unset: GPU 0
  static inline ncclResult_t asyncState = ncclSuccess;
  static inline int inProgressPolls = 0;  // answers ncclInProgress this many more times
  static inline int asyncPolls = 0;

  static RealNccl table() {
    RealNccl r;
    r.allReduce = [](const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t c, cudaStream_t) {
      ++allReduces;
      note("nccl", c);
      return ncclSuccess;
    };
    r.allReduceConfig = [](const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t c, cudaStream_t,
                           const void*) {
      ++allReduceConfigs;
      note("nccl-config", c);
      return ncclSuccess;
    };
    r.groupSimulateEnd = [](ncclSimInfo_t*) {
      ++simulateEnds;
      note("simulate");
      return ncclSuccess;
    };
    r.allGather = [](const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t) { return ncclSuccess; };
    r.commDestroy = [](ncclComm_t) {
      ++destroys;
      return ncclSuccess;
    };
    r.commFinalize = [](ncclComm_t) {
      ++finalizes;
      return ncclSuccess;
    };
    r.commAbort = [](ncclComm_t) {
      ++aborts;
      return ncclSuccess;
    };
    r.groupStart = [] {
      ++groupStarts;
      note("start");
      return ncclSuccess;
    };
    r.groupEnd = [] {
      ++groupEnds;
      note("end");
      return groupEndAnswer;
    };
    r.commCount = [](const ncclComm_t c, int* n) {
      *n = sizes[c];
      return ncclSuccess;
    };
    r.commUserRank = [](const ncclComm_t, int* rank) {
      *rank = 0;
      return ncclSuccess;
    };
    r.commCuDevice = [](const ncclComm_t c, int* dev) {
      *dev = devices.count(c) ? devices[c] : 0;
      return ncclSuccess;
    };
    r.commGetAsyncError = [](ncclComm_t, ncclResult_t* s) {
      ++asyncPolls;
      *s = inProgressPolls > 0 ? (--inProgressPolls, ncclInProgress) : asyncState;
      return ncclSuccess;
    };
    return r;
  }
  static void reset() {
    allReduces = destroys = groupStarts = groupEnds = aborts = finalizes = 0;
    allReduceConfigs = simulateEnds = 0;
    groupEndAnswer = ncclSuccess;
    events.clear();
    sizes.clear();
    devices.clear();
    asyncState = ncclSuccess;
    inProgressPolls = asyncPolls = 0;
  }
};

// A stand-in for the kernels: records what it was asked to do.
class FakeSymmetric : public kernels::SymmetricComm {
 public:
  explicit FakeSymmetric(ncclComm_t comm = nullptr) : comm_(comm) {}
  static inline int calls = 0;
  static inline kernels::Algorithm lastAlgorithm = kernels::Algorithm::OneShot;
  static inline SymVariant lastVariant = SymVariant::Push;
  static inline kernels::Status answer = kernels::Status::Ok;
  static inline int destroyed = 0;
  // The call (counted as `calls`; 0: none) that throws once it has "launched" (noted as "sym"): a
  // failure after the side effect its peers pair with.
  static inline int throwAtCall = 0;
  ~FakeSymmetric() override {
    tornDown_ = true;
    if (host_ != nullptr) fillRuns(host_);
    ++destroyed;
  }
  // Calls are "captured" while `capturedCalls` is set (the interposer counts them by mode).
  static inline bool capturedCalls = false;
  kernels::Status allReduce(const void*, void*, size_t, DataType, ReduceOp, kernels::KernelChoice k, cudaStream_t,
                            bool* captured) override {
    if (captured != nullptr) *captured = capturedCalls;
    ++calls;
    FakeNccl::note("sym", comm_);
    lastAlgorithm = k.algorithm;
    lastVariant = k.variant;
    if (calls == throwAtCall) throw std::runtime_error("launched, then failed");
    return answer;
  }
  // A call's completion event, recorded after its kernel: noted as "event <event>".
  static inline kernels::Status recordAnswer = kernels::Status::Ok;
  kernels::Status recordEvent(cudaEvent_t event, cudaStream_t) override {
    FakeNccl::note("event", event);
    return recordAnswer;
  }
  // The kernels' own counts (kernels/kernel_clock.cuh) as a device would keep them: gpuRuns one-shot
  // executions, gpuTimed of them timed as one-shot pull at 16 B (2 us each, 1-3 us), copied out on
  // request (`copies` of them) and into `host` at teardown. samplePeriod: what the last publish asked.
  static inline std::atomic<uint64_t> gpuRuns{0};
  static inline std::atomic<uint64_t> gpuTimed{0};
  static inline std::atomic<uint32_t> samplePeriod{0};
  static inline std::atomic<int> copies{0};
  static inline std::atomic<bool> copyAfterTeardown{false};
  bool publishKernelStats(stats::GpuCounts* host, uint32_t period) override {
    host_ = host;
    samplePeriod = period;
    return true;
  }
  bool copyKernelStats(stats::GpuCounts* to, int64_t) override {
    if (tornDown_) copyAfterTeardown = true;
    ++copies;
    fillRuns(to);
    return true;
  }
  void abort() override { ++aborted; }
  kernels::Status deviceStatus() const override { return device; }
  int waitedRank() const override { return 1; }
  static inline int aborted = 0;
  static inline kernels::Status device = kernels::Status::Ok;
  const kernels::SymmetricConfig& config() const override { return config_; }

 private:
  static void fillRuns(stats::GpuCounts* to) {
    *to = stats::GpuCounts{};
    to->runs[0] = gpuRuns;
    const uint64_t n = gpuTimed;
    to->timed[stats::kernelKind(false, static_cast<int>(SymVariant::Pull))][stats::sizeBucket(16)] = {n, n * 2000, 1000,
                                                                                                      3000};
  }
  ncclComm_t comm_;
  kernels::SymmetricConfig config_;
  stats::GpuCounts* host_ = nullptr;
  std::atomic<bool> tornDown_{false};
};

ncclComm_t fakeComm(uintptr_t id, int size) {
  auto c = reinterpret_cast<ncclComm_t>(id);
  FakeNccl::sizes[c] = size;
  return c;
}

class InterposerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeNccl::reset();
    FakeSymmetric::calls = 0;
    FakeSymmetric::answer = kernels::Status::Ok;
    FakeSymmetric::destroyed = 0;
    FakeSymmetric::throwAtCall = 0;
    FakeSymmetric::recordAnswer = kernels::Status::Ok;
    FakeSymmetric::aborted = 0;
    FakeSymmetric::device = kernels::Status::Ok;
    FakeSymmetric::gpuRuns = 0;
    FakeSymmetric::gpuTimed = 0;
    FakeSymmetric::samplePeriod = 0;
    FakeSymmetric::copies = 0;
    FakeSymmetric::copyAfterTeardown = false;
    nccl = FakeNccl::table();
    table = DecisionTable::builtIn();
    process.table = &table;
  }

  Interposer make(bool ready, bool capturing = false) {
    return Interposer(
        nccl, process,
        [this, ready](ncclComm_t comm, int /*rank*/, int nRanks, int /*device*/, void*) {
          ++setups;
          {
            std::lock_guard<std::mutex> lock(setupMutex);
            FakeNccl::note("setup", comm);
          }
          if (setupHook) setupHook(comm);
          auto s = std::make_unique<CommState>();
          s->facts = CommFacts{nRanks, 1, {12, 0}, LinkClass::PcieSameSwitch, true, 1 << 20};
          s->entry = table.thresholdsFor({12, 0}, LinkClass::PcieSameSwitch, nRanks).entry;
          s->ready = ready;
          s->why = ready ? "ready" : "no P2P";
          if (ready) s->symmetric = std::make_unique<FakeSymmetric>(comm);
          return s;
        },
        [capturing](cudaStream_t) { return std::optional<bool>(capturing); });
  }

  RealNccl nccl;
  DecisionTable table;
  ProcessContext process;
  std::atomic<int> setups{0};
  std::mutex setupMutex;
  // Runs inside each setup (on the thread that sets it up): lets a test make setups wait for each other.
  std::function<void(ncclComm_t)> setupHook;
  char buf[64] = {};
};

}  // namespace
}  // namespace symmem

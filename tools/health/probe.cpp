// SPDX-License-Identifier: Apache-2.0
#include "tools/health/probe.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "kernels/latency_probe.h"
#include "kernels/p2p_probe.h"
#include "tools/common/forked_ranks.h"
#include "tools/common/rank_rendezvous.h"

namespace symmem {

namespace {

using kernels::oneTarget;
using kernels::P2pTargets;

constexpr int kMaxGpus = P2pTargets::kMax + 1;  // all at once: each GPU targets every peer
constexpr size_t kDetailBytes = 320;

// How much each probe moves: enough that launch costs and clocks ramping up do not matter.
struct ProbeSizes {
  size_t bandwidthBytes;  // per pair buffer: the pattern checks cover all of it
  int bandwidthRepeats;
  size_t hostCopyBytes;
  int hostCopyRepeats;
  int chaseLoads;
  int pingPongRounds;
  size_t allRegionBytes;  // all at once: per (writer, receiver)
  int allRepeats;
};
ProbeSizes probeSizes(bool quick) {
  if (quick) return {16u << 20, 4, 16u << 20, 2, 4000, 2000, 8u << 20, 2};
  return {64u << 20, 8, 64u << 20, 8, 20000, 10000, 32u << 20, 4};
}
// The chain: 8 MiB, stride 4099 words (odd: one cycle through every word, each load 32 KiB from the
// last). The owner has just written it, so a load is the link's round trip plus the owner's L2 (which
// a kernel's peer accesses go through), not its DRAM: the latency a flag or a small message sees.
constexpr size_t kChainWords = size_t{1} << 20;
constexpr size_t kChainStride = 4099;

// The step a child is in, published before it starts so the parent can name it after a timeout.
enum Step : int {
  kStepNone = 0,
  kStepGpuInfo,
  kStepPeerAccess,
  kStepWriteCheck,
  kStepReadCheck,
  kStepPingPong,
  kStepChase,
  kStepWriteBandwidth,
  kStepReadBandwidth,
  kStepAllWrite,
  kStepAllCheck,
  kStepAllRead,
};

const char* stepName(int step) {
  switch (step) {
    case kStepGpuInfo:
      return "the GPU and host-copy probe";
    case kStepPeerAccess:
      return "enabling peer access";
    case kStepWriteCheck:
      return "the write check";
    case kStepReadCheck:
      return "the read check";
    case kStepPingPong:
      return "the write-latency ping-pong";
    case kStepChase:
      return "the read-latency chase";
    case kStepWriteBandwidth:
      return "the write-bandwidth probe";
    case kStepReadBandwidth:
      return "the read-bandwidth probe";
    case kStepAllWrite:
      return "the all-at-once writes";
    case kStepAllCheck:
      return "the all-at-once check";
    case kStepAllRead:
      return "the all-at-once reads";
    default:
      return "start-up";
  }
}

// Plain values in memory shared with the parent (zero-filled by the mapping; NaNs set before fork).
struct SlotRecord {
  int driverP2p;  // Support
  int writeCheck;
  int readCheck;  // PatternResult
  double writeLatencyUs, readLatencyUs, writeGBs, readGBs;
  char detail[kDetailBytes];
};

struct ChildRecord {
  std::atomic<int> step;
  std::atomic<int> direction;  // pair child: 0 = a->b, 1 = b->a
  std::atomic<int> done;       // 1 when the child got to its end
  SlotRecord slot[2];
  // GPU child
  char name[kMaxGpus][128];
  int ccMajor[kMaxGpus], ccMinor[kMaxGpus];
  double hostCopyGBs[kMaxGpus];
  // all-at-once child
  double allWriteGBs[kMaxGpus], allReadGBs[kMaxGpus];
  int allCheck;
  char detail[kDetailBytes];  // a problem of the child as a whole
};

void setText(char* dst, const std::string& text) { std::snprintf(dst, kDetailBytes, "%s", text.c_str()); }

ChildRecord* newRecord() {
  void* mem = harness::mapSharedBetweenRanks(sizeof(ChildRecord));
  if (mem == nullptr) return nullptr;
  auto* r = new (mem) ChildRecord();
  for (SlotRecord& s : r->slot) s.writeLatencyUs = s.readLatencyUs = s.writeGBs = s.readGBs = NAN;
  for (int g = 0; g < kMaxGpus; ++g) r->hostCopyGBs[g] = r->allWriteGBs[g] = r->allReadGBs[g] = NAN;
  return r;
}

// ---- in the child -------------------------------------------------------------------------------

// Faults the GPU tests inject into the first write check, to prove on a real GPU that each is
// reported and none takes the tool down (SYMMEM_GPU_TESTS_HEALTH_FAULT; never set by users):
// `corrupt` writes another pattern than the one checked, `hang` holds the stream in a kernel past the
// step's limit, `stall` blocks the child on the host until the parent stops it.
enum class TestFault { None, Corrupt, Hang, Stall };
TestFault testFault() {
  const char* v = std::getenv("SYMMEM_GPU_TESTS_HEALTH_FAULT");
  if (v == nullptr) return TestFault::None;
  const std::string f = v;
  return f == "corrupt" ? TestFault::Corrupt
         : f == "hang"  ? TestFault::Hang
         : f == "stall" ? TestFault::Stall
                        : TestFault::None;
}

// A kernel that waits (10 s at most) on a gate nobody opens: the stream looks hung.
cudaError_t holdStream(cudaStream_t stream) {
  uint32_t* gate = nullptr;
  const cudaError_t e = cudaHostAlloc(&gate, sizeof(uint32_t), cudaHostAllocMapped | cudaHostAllocPortable);
  if (e != cudaSuccess) return e;
  *gate = 0;
  return kernels::launchGate(gate, stream);
}

using Clock = std::chrono::steady_clock;

// Polls until the stream has finished or the step's time is up (never a blocking synchronize: a
// hung link must not hang the child before the parent's backstop).
enum class Waited { Done, Timeout, Error };
Waited waitStream(cudaStream_t stream, int timeoutSec, cudaError_t* error) {
  const auto deadline = Clock::now() + std::chrono::seconds(timeoutSec);
  while (true) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return Waited::Done;
    if (e != cudaErrorNotReady) {
      *error = e;
      return Waited::Error;
    }
    if (Clock::now() > deadline) return Waited::Timeout;
    usleep(100);
  }
}

std::string label(const HealthGpu& g) {
  return "GPU" + std::to_string(g.index) + (g.busId.empty() ? "" : " (" + g.busId + ")");
}

int cudaDeviceOf(const HealthGpu& g, std::string* why) {
  int device = g.index;
  if (!g.busId.empty() && cudaDeviceGetByPCIBusId(&device, g.busId.c_str()) != cudaSuccess) {
    *why = "CUDA does not see " + label(g) + " (is CUDA_VISIBLE_DEVICES set?)";
    return -1;
  }
  return device;
}

// One side of a pair: its GPU's buffers and stream.
struct Side {
  int device = -1;
  uint64_t* data = nullptr;
  uint64_t* chain = nullptr;
  uint32_t* flag = nullptr;  // 16 bytes: the ping-pong word
  unsigned long long* counters = nullptr;
  uint4* sink = nullptr;
  uint64_t* chaseSink = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, end = nullptr;
};

// A failed CUDA call in the child: recorded as a Fault of the running step (the parent reads it).
struct ChildFailure {
  PatternResult result;
  std::string detail;
};

class PairChild {
 public:
  PairChild(const HealthMeasurements& m, const HealthPair& pair, const HealthOptions& o, ChildRecord* record)
      : m_(m), pair_(pair), o_(o), sizes_(probeSizes(o.quick)), record_(record) {}

  int run() {
    std::string why;
    for (int s = 0; s < 2; ++s) {
      sides_[s].device = cudaDeviceOf(m_.gpus[s == 0 ? pair_.a : pair_.b], &why);
      if (sides_[s].device < 0) return failAll(PatternResult::Fault, why);
    }
    begin(kStepPeerAccess, 0);
    for (int s = 0; s < 2; ++s)
      if (!setUp(sides_[s])) return failAll(PatternResult::Fault, lastError_);
    const bool loopback = sides_[0].device == sides_[1].device;
    for (int d = 0; d < (loopback ? 1 : 2); ++d) {
      int can = 0;
      const Side& from = sides_[d];
      const Side& to = sides_[1 - d];
      if (loopback) {
        can = 1;
      } else if (cudaDeviceCanAccessPeer(&can, from.device, to.device) != cudaSuccess) {
        can = 0;
      }
      record_->slot[d].driverP2p = static_cast<int>(can ? Support::Yes : Support::No);
      if (can && !loopback) {
        cudaSetDevice(from.device);
        const cudaError_t e = cudaDeviceEnablePeerAccess(to.device, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
          return failAll(PatternResult::Fault,
                         std::string("cudaDeviceEnablePeerAccess failed: ") + cudaGetErrorString(e));
        cudaGetLastError();
      }
      if (!can) setText(record_->slot[d].detail, "no P2P: cudaDeviceCanAccessPeer says the driver does not offer it");
    }
    for (int d = 0; d < (loopback ? 1 : 2); ++d) {
      if (record_->slot[d].driverP2p != static_cast<int>(Support::Yes)) continue;
      if (!checks(d)) return 0;  // the failure is recorded; a broken link is not probed further
    }
    const bool bothWays = loopback || (record_->slot[0].driverP2p == static_cast<int>(Support::Yes) &&
                                       record_->slot[1].driverP2p == static_cast<int>(Support::Yes));
    if (bothWays && !pingPong(loopback)) return 0;
    for (int d = 0; d < (loopback ? 1 : 2); ++d) {
      if (record_->slot[d].driverP2p != static_cast<int>(Support::Yes)) continue;
      if (!speeds(d)) return 0;
    }
    record_->done.store(1);
    return 0;
  }

 private:
  void begin(int step, int direction) {
    record_->direction.store(direction);
    record_->step.store(step);
  }

  int failAll(PatternResult r, const std::string& detail) {
    for (SlotRecord& s : record_->slot) {
      s.writeCheck = static_cast<int>(r);
      s.readCheck = static_cast<int>(r);
      setText(s.detail, detail);
    }
    return 0;
  }

  bool setUp(Side& s) {
    const size_t bytes = sizes_.bandwidthBytes;
    if (!ok(cudaSetDevice(s.device)) || !ok(cudaMalloc(&s.data, bytes)) ||
        !ok(cudaMalloc(&s.chain, kChainWords * sizeof(uint64_t))) || !ok(cudaMalloc(&s.flag, 16)) ||
        !ok(cudaMalloc(&s.counters, 2 * sizeof(unsigned long long))) ||
        !ok(cudaMalloc(&s.sink, kernels::kStreamBlocks * sizeof(uint4))) || !ok(cudaMalloc(&s.chaseSink, 8)) ||
        !ok(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking)) || !ok(cudaEventCreate(&s.start)) ||
        !ok(cudaEventCreate(&s.end)))
      return false;
    return true;
  }

  bool ok(cudaError_t e) {
    if (e == cudaSuccess) return true;
    lastError_ = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    return false;
  }

  // Waits for `side`'s stream; on a problem records it on the running step of direction d.
  bool wait(const Side& side, int d, int* checkField) {
    cudaError_t error = cudaSuccess;
    const Waited w = waitStream(side.stream, o_.timeoutSec, &error);
    if (w == Waited::Done) return true;
    const PatternResult r = w == Waited::Timeout ? PatternResult::Timeout : PatternResult::Fault;
    const std::string what = std::string(stepName(record_->step.load())) + " " + direction(d);
    recordFailure(d, checkField, r,
                  w == Waited::Timeout
                      ? what + " did not finish within " + std::to_string(o_.timeoutSec) + " s"
                      : what + " failed: " + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")");
    return false;
  }

  void recordFailure(int d, int* checkField, PatternResult r, const std::string& detail) {
    SlotRecord& s = record_->slot[d];
    if (checkField != nullptr) *checkField = static_cast<int>(r);
    if (s.detail[0] == 0) setText(s.detail, detail);
  }

  std::string direction(int d) const {
    const HealthGpu& from = m_.gpus[d == 0 ? pair_.a : pair_.b];
    const HealthGpu& to = m_.gpus[d == 0 ? pair_.b : pair_.a];
    return "GPU" + std::to_string(from.index) + "->GPU" + std::to_string(to.index);
  }

  bool launched(cudaError_t e, int d, int* checkField) {
    if (e == cudaSuccess) return true;
    recordFailure(
        d, checkField, PatternResult::Fault,
        std::string(stepName(record_->step.load())) + " " + direction(d) + ": launch failed: " + cudaGetErrorName(e));
    return false;
  }

  // Reads the mismatch counters of `side` into a verdict for `field`.
  bool verdict(const Side& side, int d, int* field, uint64_t seed, const uint64_t* words, const char* what) {
    cudaSetDevice(side.device);
    // The check kernel first, under the step's limit: a copy into pageable memory would block the host
    // until the kernel ends, however long a bad link makes it.
    if (!wait(side, d, field)) return false;
    unsigned long long c[2] = {0, 0};
    if (!launched(cudaMemcpy(c, side.counters, sizeof c, cudaMemcpyDeviceToHost), d, field)) return false;
    if (c[0] == 0) {
      *field = static_cast<int>(PatternResult::Ok);
      return true;
    }
    uint64_t seen = 0;
    cudaMemcpy(&seen, words + c[1], sizeof seen, cudaMemcpyDeviceToHost);
    char text[kDetailBytes];
    std::snprintf(text, sizeof text,
                  "%s %s: %llu of %zu words differ, the first at word %llu (0x%016llx, written 0x%016llx)", what,
                  direction(d).c_str(), c[0], sizes_.bandwidthBytes / 8, c[1], static_cast<unsigned long long>(seen),
                  static_cast<unsigned long long>(kernels::p2pPatternWord(seed, c[1])));
    recordFailure(d, field, PatternResult::Mismatch, text);
    return false;
  }

  bool resetCounters(Side& side, int d, int* field) {
    cudaSetDevice(side.device);
    return launched(cudaMemsetAsync(side.counters, 0, 8, side.stream), d, field) &&
           launched(cudaMemsetAsync(side.counters + 1, 0xff, 8, side.stream), d, field);
  }

  // Direction d: `from` writes into `to`'s memory, `to` reads it back; then `to` writes its own memory
  // and `from` reads it over the link.
  bool checks(int d) {
    Side& from = sides_[d];
    Side& to = sides_[1 - d];
    SlotRecord& s = record_->slot[d];
    const size_t words = sizes_.bandwidthBytes / 8;
    const uint64_t writeSeed = 0x5eed0000ull + 16 * static_cast<uint64_t>(d);
    begin(kStepWriteCheck, d);
    cudaSetDevice(from.device);
    const TestFault fault = testFault();
    if (fault == TestFault::Stall) sleep(3600);  // as a CUDA call that never returns: the parent stops us
    if (fault == TestFault::Hang && !launched(holdStream(from.stream), d, &s.writeCheck)) return false;
    const uint64_t written = fault == TestFault::Corrupt ? writeSeed + 1 : writeSeed;
    if (!launched(kernels::launchFillPattern(oneTarget(to.data), words, written, 1, from.stream), d, &s.writeCheck) ||
        !wait(from, d, &s.writeCheck) || !resetCounters(to, d, &s.writeCheck) ||
        !launched(kernels::launchCountMismatches(to.data, words, writeSeed, to.counters, to.stream), d,
                  &s.writeCheck) ||
        !verdict(to, d, &s.writeCheck, writeSeed, to.data, "write check"))
      return false;

    const uint64_t readSeed = writeSeed + 1;
    begin(kStepReadCheck, d);
    cudaSetDevice(to.device);
    if (!launched(kernels::launchFillPattern(oneTarget(to.data), words, readSeed, 1, to.stream), d, &s.readCheck) ||
        !wait(to, d, &s.readCheck) || !resetCounters(from, d, &s.readCheck) ||
        !launched(kernels::launchCountMismatches(to.data, words, readSeed, from.counters, from.stream), d,
                  &s.readCheck) ||
        !verdict(from, d, &s.readCheck, readSeed, to.data, "read check"))
      return false;
    return true;
  }

  // Elapsed ms between the side's start and end events (recorded on its stream), after waiting.
  bool elapsedMs(Side& side, int d, float* ms) {
    if (!wait(side, d, nullptr)) return false;
    return launched(cudaEventElapsedTime(ms, side.start, side.end), d, nullptr);
  }

  // Half a round trip of flags written into the other GPU's memory: the one-way write latency, the
  // same for both directions.
  bool pingPong(bool loopback) {
    begin(kStepPingPong, 0);
    const int rounds = sizes_.pingPongRounds;
    for (Side& side : sides_) {
      cudaSetDevice(side.device);
      if (!launched(cudaMemsetAsync(side.flag, 0, 16, side.stream), 0, nullptr) || !wait(side, 0, nullptr))
        return false;
    }
    Side& a = sides_[0];
    Side& b = sides_[1];
    cudaSetDevice(a.device);
    cudaEventRecord(a.start, a.stream);
    if (!launched(kernels::launchPingPong(a.flag, b.flag, rounds, true, a.stream), 0, nullptr)) return false;
    cudaEventRecord(a.end, a.stream);
    cudaSetDevice(b.device);
    if (!launched(kernels::launchPingPong(b.flag, a.flag, rounds, false, b.stream), 0, nullptr)) return false;
    float ms = 0;
    if (!wait(b, 0, nullptr) || !elapsedMs(a, 0, &ms)) return false;
    uint32_t last = 0;
    cudaSetDevice(a.device);
    cudaMemcpy(&last, a.flag, sizeof last, cudaMemcpyDeviceToHost);
    if (last != static_cast<uint32_t>(rounds)) {
      recordFailure(0, nullptr, PatternResult::Timeout,
                    "the write-latency ping-pong stopped at round " + std::to_string(last) + " of " +
                        std::to_string(rounds) + " (a flag written to the peer was not seen within 2 s)");
      return true;  // the checks passed; only the latency is missing
    }
    const double us = 1000.0 * ms / (2.0 * rounds);
    record_->slot[0].writeLatencyUs = us;
    if (!loopback) record_->slot[1].writeLatencyUs = us;
    return true;
  }

  bool speeds(int d) {
    Side& from = sides_[d];
    Side& to = sides_[1 - d];
    SlotRecord& s = record_->slot[d];
    float ms = 0;

    begin(kStepChase, d);
    cudaSetDevice(to.device);
    if (!launched(kernels::launchBuildChain(to.chain, kChainWords, kChainStride, to.stream), d, nullptr) ||
        !wait(to, d, nullptr))
      return false;
    cudaSetDevice(from.device);
    if (!launched(kernels::launchChase(to.chain, 100, from.chaseSink, from.stream), d, nullptr)) return false;
    cudaEventRecord(from.start, from.stream);
    if (!launched(kernels::launchChase(to.chain, sizes_.chaseLoads, from.chaseSink, from.stream), d, nullptr))
      return false;
    cudaEventRecord(from.end, from.stream);
    if (!elapsedMs(from, d, &ms)) return false;
    s.readLatencyUs = 1000.0 * ms / sizes_.chaseLoads;

    const size_t words = sizes_.bandwidthBytes / 8;
    const double gb = static_cast<double>(sizes_.bandwidthBytes) * sizes_.bandwidthRepeats / 1e9;
    begin(kStepWriteBandwidth, d);
    if (!launched(kernels::launchFillPattern(oneTarget(to.data), words, 1, 1, from.stream), d, nullptr)) return false;
    cudaEventRecord(from.start, from.stream);
    if (!launched(kernels::launchFillPattern(oneTarget(to.data), words, 1, sizes_.bandwidthRepeats, from.stream), d,
                  nullptr))
      return false;
    cudaEventRecord(from.end, from.stream);
    if (!elapsedMs(from, d, &ms)) return false;
    s.writeGBs = gb / (ms / 1000.0);

    begin(kStepReadBandwidth, d);
    if (!launched(kernels::launchStreamRead(oneTarget(to.data), words, 1, from.sink, from.stream), d, nullptr))
      return false;
    cudaEventRecord(from.start, from.stream);
    if (!launched(kernels::launchStreamRead(oneTarget(to.data), words, sizes_.bandwidthRepeats, from.sink, from.stream),
                  d, nullptr))
      return false;
    cudaEventRecord(from.end, from.stream);
    if (!elapsedMs(from, d, &ms)) return false;
    s.readGBs = gb / (ms / 1000.0);
    return true;
  }

  const HealthMeasurements& m_;
  const HealthPair& pair_;
  const HealthOptions& o_;
  ProbeSizes sizes_;
  ChildRecord* record_;
  Side sides_[2];
  std::string lastError_;
};

int gpuChild(const HealthMeasurements& m, const HealthOptions& o, ChildRecord* record) {
  const ProbeSizes sizes = probeSizes(o.quick);
  for (size_t p = 0; p < m.gpus.size(); ++p) {
    record->step.store(kStepGpuInfo);
    record->direction.store(static_cast<int>(p));
    std::string why;
    const int device = cudaDeviceOf(m.gpus[p], &why);
    if (device < 0) {
      setText(record->detail, why);
      return 0;
    }
    cudaDeviceProp prop{};
    if (cudaSetDevice(device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
      setText(record->detail, "cannot open " + label(m.gpus[p]) + ": " + cudaGetErrorString(cudaGetLastError()));
      return 0;
    }
    // The driver's name field is 256 bytes; the record keeps the first 127 (no GPU name is longer).
    std::snprintf(record->name[p], sizeof record->name[p], "%.*s", static_cast<int>(sizeof record->name[p] - 1),
                  prop.name);
    record->ccMajor[p] = prop.major;
    record->ccMinor[p] = prop.minor;
    void* host = nullptr;
    void* dev = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr, end = nullptr;
    if (cudaMallocHost(&host, sizes.hostCopyBytes) == cudaSuccess &&
        cudaMalloc(&dev, sizes.hostCopyBytes) == cudaSuccess &&
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
        cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&end) == cudaSuccess) {
      cudaMemcpyAsync(dev, host, sizes.hostCopyBytes, cudaMemcpyHostToDevice, stream);  // warm-up
      cudaEventRecord(start, stream);
      for (int r = 0; r < sizes.hostCopyRepeats; ++r)
        cudaMemcpyAsync(dev, host, sizes.hostCopyBytes, cudaMemcpyHostToDevice, stream);
      cudaEventRecord(end, stream);
      cudaError_t error = cudaSuccess;
      float ms = 0;
      if (waitStream(stream, o.timeoutSec, &error) == Waited::Done &&
          cudaEventElapsedTime(&ms, start, end) == cudaSuccess && ms > 0)
        record->hostCopyGBs[p] = static_cast<double>(sizes.hostCopyBytes) * sizes.hostCopyRepeats / 1e9 / (ms / 1000.0);
    }
    cudaFree(dev);
    cudaFreeHost(host);
    cudaDeviceReset();
  }
  record->done.store(1);
  return 0;
}

// Every GPU writes into (then reads from) every peer's memory at once, started together by a gate.
int allAtOnceChild(const HealthMeasurements& m, const HealthOptions& o, ChildRecord* record) {
  const ProbeSizes sizes = probeSizes(o.quick);
  const int n = static_cast<int>(m.gpus.size());
  const size_t regionWords = sizes.allRegionBytes / 8;
  std::vector<int> device(n);
  std::vector<uint64_t*> recv(n, nullptr);
  std::vector<uint4*> sink(n, nullptr);
  std::vector<cudaStream_t> stream(n, nullptr);
  std::vector<cudaEvent_t> start(n, nullptr), end(n, nullptr);
  std::vector<unsigned long long*> counters(n, nullptr);
  auto fail = [&](const std::string& what) {
    record->allCheck = static_cast<int>(PatternResult::Fault);
    setText(record->detail, what);
    return 0;
  };
  for (int g = 0; g < n; ++g) {
    std::string why;
    device[g] = cudaDeviceOf(m.gpus[g], &why);
    if (device[g] < 0) return fail(why);
    cudaSetDevice(device[g]);
    for (int p = 0; p < n; ++p)
      if (p != g) {
        const cudaError_t e = cudaDeviceEnablePeerAccess(device[p], 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
          return fail(std::string("cudaDeviceEnablePeerAccess: ") + cudaGetErrorString(e));
        cudaGetLastError();
      }
    if (cudaMalloc(&recv[g], sizes.allRegionBytes * (n - 1)) != cudaSuccess ||
        cudaMalloc(&sink[g], kernels::kStreamBlocks * sizeof(uint4)) != cudaSuccess ||
        cudaMalloc(&counters[g], 2 * sizeof(unsigned long long)) != cudaSuccess ||
        cudaStreamCreateWithFlags(&stream[g], cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreate(&start[g]) != cudaSuccess || cudaEventCreate(&end[g]) != cudaSuccess)
      return fail(std::string("cannot allocate on GPU") + std::to_string(m.gpus[g].index) + ": " +
                  cudaGetErrorString(cudaGetLastError()));
  }
  volatile uint32_t* gate = nullptr;
  if (cudaHostAlloc(const_cast<uint32_t**>(&gate), sizeof(uint32_t), cudaHostAllocMapped | cudaHostAllocPortable) !=
      cudaSuccess)
    return fail("cannot allocate the start gate in pinned memory");
  // Writer g's region in receiver p's buffer, and the seed of what g writes there.
  auto region = [&](int writer, int receiver) {
    const int slot = writer < receiver ? writer : writer - 1;
    return recv[receiver] + static_cast<size_t>(slot) * regionWords;
  };
  auto targetsOf = [&](int g) {
    P2pTargets t;
    for (int p = 0; p < n; ++p)
      if (p != g) t.words[t.count++] = region(g, p);
    return t;
  };
  auto seedOf = [](int writer) { return 0xa11a0000ull + 64 * static_cast<uint64_t>(writer); };
  auto waitAll = [&]() {
    for (int g = 0; g < n; ++g) {
      cudaError_t error = cudaSuccess;
      const Waited w = waitStream(stream[g], o.timeoutSec, &error);
      if (w != Waited::Done)
        return std::string(stepName(record->step.load())) + " on GPU" + std::to_string(m.gpus[g].index) +
               (w == Waited::Timeout ? " did not finish within " + std::to_string(o.timeoutSec) + " s"
                                     : std::string(" failed: ") + cudaGetErrorString(error));
    }
    return std::string();
  };
  // One timed pass: every GPU's kernel queued behind the gate, then the gate opened.
  auto pass = [&](bool write, double* gbsOut) {
    *gate = 0;
    cudaError_t launch = cudaSuccess;
    for (int g = 0; g < n && launch == cudaSuccess; ++g) {
      cudaSetDevice(device[g]);
      launch = kernels::launchGate(gate, stream[g]);
      if (launch != cudaSuccess) break;
      cudaEventRecord(start[g], stream[g]);
      const P2pTargets t = targetsOf(g);
      launch = write ? kernels::launchFillPattern(t, regionWords, seedOf(g), sizes.allRepeats, stream[g])
                     : kernels::launchStreamRead(t, regionWords, sizes.allRepeats, sink[g], stream[g]);
      cudaEventRecord(end[g], stream[g]);
    }
    *gate = 1;  // opened in any case: kernels already queued must not wait out the gate's 10 s
    if (launch != cudaSuccess) {
      waitAll();
      return std::string(stepName(record->step.load())) + ": a launch failed: " + cudaGetErrorString(launch);
    }
    const std::string problem = waitAll();
    if (!problem.empty()) return problem;
    const double gb = static_cast<double>(sizes.allRegionBytes) * (n - 1) * sizes.allRepeats / 1e9;
    for (int g = 0; g < n; ++g) {
      float ms = 0;
      if (cudaEventElapsedTime(&ms, start[g], end[g]) == cudaSuccess && ms > 0) gbsOut[g] = gb / (ms / 1000.0);
    }
    return std::string();
  };

  record->step.store(kStepAllWrite);
  if (const std::string p = pass(true, record->allWriteGBs); !p.empty()) {
    record->allCheck = static_cast<int>(PatternResult::Timeout);
    setText(record->detail, p);
    return 0;
  }
  record->step.store(kStepAllCheck);
  unsigned long long bad = 0;
  std::string where;
  for (int p = 0; p < n; ++p) {
    cudaSetDevice(device[p]);
    for (int g = 0; g < n; ++g) {
      if (g == p) continue;
      unsigned long long c[2] = {0, ~0ull};
      // Reset on the check's own stream: a pageable copy on the legacy stream is not ordered before it.
      cudaMemsetAsync(counters[p], 0, sizeof c[0], stream[p]);
      cudaMemsetAsync(counters[p] + 1, 0xff, sizeof c[1], stream[p]);
      const int k = p < g ? p : p - 1;  // p's position in g's targets
      kernels::launchCountMismatches(region(g, p), regionWords, seedOf(g) + k, counters[p], stream[p]);
      cudaError_t error = cudaSuccess;
      const Waited w = waitStream(stream[p], o.timeoutSec, &error);
      if (w != Waited::Done) {
        const std::string what = "the all-at-once check on GPU" + std::to_string(m.gpus[p].index);
        fail(w == Waited::Timeout ? what + " did not finish within " + std::to_string(o.timeoutSec) + " s"
                                  : what + " failed: " + cudaGetErrorString(error));
        if (w == Waited::Timeout) record->allCheck = static_cast<int>(PatternResult::Timeout);
        return 0;
      }
      cudaMemcpy(c, counters[p], sizeof c, cudaMemcpyDeviceToHost);
      if (c[0] != 0 && where.empty())
        where = "GPU" + std::to_string(m.gpus[g].index) + "->GPU" + std::to_string(m.gpus[p].index) + ": " +
                std::to_string(c[0]) + " words differ, the first at word " + std::to_string(c[1]);
      bad += c[0];
    }
  }
  record->allCheck = static_cast<int>(bad == 0 ? PatternResult::Ok : PatternResult::Mismatch);
  if (bad != 0) {
    setText(record->detail, "all-at-once writes: " + where);
    return 0;
  }
  record->step.store(kStepAllRead);
  if (const std::string p = pass(false, record->allReadGBs); !p.empty()) {
    setText(record->detail, p);
    return 0;
  }
  record->done.store(1);
  return 0;
}

// ---- in the parent ------------------------------------------------------------------------------

// Runs one child; after a timeout or a crash, returns what happened in words ("" when it ended).
std::string runChild(const char* what, int limitSec, const std::function<int()>& body, ChildRecord* record) {
  const int code = harness::runForkedRanks(1, "symmem-health probe", limitSec, [&](int) { return body(); });
  if (code == 0) return {};
  const std::string step = stepName(record->step.load());
  if (code == 124) return step + " did not finish within " + std::to_string(limitSec) + " s: the probe was stopped";
  if (code == harness::kRanksNotRun) return std::string("the probe for ") + what + " could not be started";
  if (code > 128)
    return step + " ended the probe with signal " + std::to_string(code - 128) + " (" + strsignal(code - 128) + ")";
  return step + " ended the probe with exit code " + std::to_string(code);
}

int childLimitSec(int steps, const HealthOptions& o) { return kHealthChildStartSec + steps * o.timeoutSec; }

}  // namespace

HealthProbeResult runHealthProbe(const HealthPlan& plan, const HealthOptions& options, const HealthProgress& progress) {
  HealthProbeResult result{plan.skeleton, {}};
  HealthMeasurements& m = result.measurements;
  const int n = static_cast<int>(m.gpus.size());
  if (n > kMaxGpus) {
    result.error =
        "symmem-health: checks at most " + std::to_string(kMaxGpus) + " GPUs at once; choose them with --gpus";
    return result;
  }
  std::vector<std::pair<int, int>> unordered;
  if (m.loopback) {
    unordered.emplace_back(0, 0);
  } else {
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b) unordered.emplace_back(a, b);
  }
  const int total = 1 + static_cast<int>(unordered.size()) + (m.loopback ? 0 : 1);
  int done = 0;
  auto line = [&](const std::string& text) {
    progress(std::string("[").append(std::to_string(++done)) + "/" + std::to_string(total) + "] " + text);
  };

  // The GPUs themselves.
  line("GPUs: name, capability, host-to-device copy bandwidth");
  if (ChildRecord* r = newRecord()) {
    const std::string problem = runChild(
        "the GPUs", childLimitSec(n, options), [&] { return gpuChild(m, options, r); }, r);
    for (int p = 0; p < n; ++p) {
      if (r->name[p][0] != 0) m.gpus[p].name = r->name[p];
      if (r->ccMajor[p] != 0) m.gpus[p].cc = ComputeCapability{r->ccMajor[p], r->ccMinor[p]};
      m.gpus[p].hostCopyGBs = r->hostCopyGBs[p];
    }
    if (!problem.empty() || r->detail[0] != 0) {
      result.error = "symmem-health: " + (problem.empty() ? std::string(r->detail) : problem);
      return result;
    }
  } else {
    result.error = "symmem-health: cannot map memory shared with the probe";
    return result;
  }

  // Every pair, each in its own child.
  bool allChecked = true;
  for (const auto& ab : unordered) {
    const int a = ab.first;
    const int b = ab.second;
    const HealthGpu& ga = m.gpus[a];
    const HealthGpu& gb = m.gpus[b];
    line(a == b ? "GPU" + std::to_string(ga.index) + " with itself (one GPU: checks the tool, not a link)"
                : "GPU" + std::to_string(ga.index) + "<->GPU" + std::to_string(gb.index) +
                      ": pattern checks, latency, bandwidth");
    auto slotOf = [&](int d) -> HealthPair* {
      for (HealthPair& p : m.pairs)
        if (p.a == (d == 0 ? a : b) && p.b == (d == 0 ? b : a)) return &p;
      return nullptr;
    };
    ChildRecord* r = newRecord();
    if (r == nullptr) {
      allChecked = false;  // unchecked pairs: all at once must not run
      break;
    }
    HealthPair* first = slotOf(0);
    const std::string problem = runChild(
        "a pair", childLimitSec(kHealthPairWaits, options), [&] { return PairChild(m, *first, options, r).run(); }, r);
    for (int d = 0; d < (a == b ? 1 : 2); ++d) {
      HealthPair* p = slotOf(d);
      if (p == nullptr) continue;
      const SlotRecord& s = r->slot[d];
      p->driverP2p = static_cast<Support>(s.driverP2p);
      p->writeCheck = static_cast<PatternResult>(s.writeCheck);
      p->readCheck = static_cast<PatternResult>(s.readCheck);
      p->detail = s.detail;
      p->writeLatencyUs = s.writeLatencyUs;
      p->readLatencyUs = s.readLatencyUs;
      p->writeGBs = s.writeGBs;
      p->readGBs = s.readGBs;
      if (!problem.empty() && r->direction.load() == d) {
        // The child was stopped or died: the step it was in is what hung or faulted.
        const bool hung = problem.find("did not finish") != std::string::npos;
        const PatternResult res = hung ? PatternResult::Timeout : PatternResult::Fault;
        const int step = r->step.load();
        if (step <= kStepWriteCheck && p->writeCheck == PatternResult::NotRun) p->writeCheck = res;
        if (step == kStepReadCheck && p->readCheck == PatternResult::NotRun) p->readCheck = res;
        if (p->detail.empty())
          p->detail = "GPU" + std::to_string(m.gpus[p->a].index) + "->GPU" + std::to_string(m.gpus[p->b].index) + ": " +
                      problem;
      }
      const bool passed =
          p->driverP2p != Support::Yes || (p->writeCheck == PatternResult::Ok && p->readCheck == PatternResult::Ok);
      allChecked = allChecked && passed && p->driverP2p == Support::Yes;
    }
  }

  // Every GPU at once, only on a node whose every pair passed.
  if (!m.loopback) {
    line("all " + std::to_string(n) + " GPUs at once: writes into every peer, then reads");
    if (!allChecked) {
      m.allAtOnce.detail = "not run: a pair above has no working P2P";
    } else if (ChildRecord* r = newRecord()) {
      const std::string problem = runChild(
          "all GPUs", childLimitSec(healthAllAtOnceWaits(n), options), [&] { return allAtOnceChild(m, options, r); },
          r);
      m.allAtOnce.check = static_cast<PatternResult>(r->allCheck);
      m.allAtOnce.detail = !problem.empty() ? problem : r->detail;
      if (!problem.empty() && m.allAtOnce.check == PatternResult::NotRun)
        m.allAtOnce.check =
            problem.find("did not finish") != std::string::npos ? PatternResult::Timeout : PatternResult::Fault;
      for (int g = 0; g < n; ++g) {
        m.allAtOnce.writeGBsPerGpu.push_back(r->allWriteGBs[g]);
        m.allAtOnce.readGBsPerGpu.push_back(r->allReadGBs[g]);
      }
    }
  }
  return result;
}

}  // namespace symmem

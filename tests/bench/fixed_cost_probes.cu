// SPDX-License-Identifier: Apache-2.0
// Where the fixed cost of a one-shot call goes, ingredient by ingredient, apart from the all-reduce
// kernels: two ranks as two streams of one thread on one GPU, each probe a kernel of one block of 32
// threads, `calls` back-to-back launches per rank captured in one CUDA graph per rank, launched with
// programmatic stream serialization and the kernels' handshake (wait, then admit). Each probe adds one
// ingredient of a one-shot call to the one before it:
//
//   empty            the handshake only (the launch floor in this shape)
//   record           + thread 0 reads the round word the previous launch wrote, and writes round + 1
//   record-barrier   + the round shared with the block through shared memory behind a block barrier
//   exchange         + one 16-byte packet to the peer's slot of round buffer round % 3, re-arm of the
//                      peer's slot of buffer (round + 2) % 3, poll of the own slot until it arrived,
//                      the output stored: a minimal one-shot push of one vector, the kernels' protocol
//   exchange-page    exchange with the control word, slots, input and output of both ranks in one
//                      allocation (one large page): what address translation adds
//   exchange-warp    exchange with all 32 threads polling their own vector (a 512-byte message)
//   exchange-barrier exchange where the 31 idle threads wait in a block barrier at the end, behind
//                      which thread 0 then advances the round (what a kernel that must not advance
//                      the round before every warp read it does)
//   exchange-converged  exchange-barrier with every thread polling thread 0's vector (the warp stays
//                      converged until the barrier; only thread 0 stores)
//
// The exchange probes note clock64 at five marks of every call (thread 0) and report the mean
// cycles of each segment and the SM clock seen.
//
// Then the same shape on memory laid out as a communicator's (one buffer per rank of the layout the
// floor bench's communicators have, a DeviceControl, the mapped error words) and the all-reduce
// kernels' own pieces, 8 bytes per call: a ladder from the probe to oneShotSmallPush, each rung
// adding one piece (cumulative), then the kernel itself:
//
//   ladder-base      exchange on the communicator's memory: round word, slots, input and output
//                    where the kernel has them, everything read from the parameters after the wait
//   ladder-plan      + the launch's plan computed and staged through shared memory before the wait
//                    (planOneShot, param_staging.cuh)
//   ladder-records   + the 32-byte round record and the abort word read together with the input
//                    (loadRound), the slots of the previous round re-armed as recorded (rearmSlots),
//                    the block's meeting and the records of the grid cap advanced (closeRound)
//   ladder-receive   + the kernels' bounded wait (receiveFromPeers with its WaitContext, bounded at 2
//                    ranks at compile time as oneShotSmallPush<.., 2> has it)
//   small-kernel     oneShotSmallPush<float, sum, 2> itself, as users run it (no trace code)
//   small-kernel-one-page  the same with both ranks' buffers, control blocks, inputs and outputs in
//                    one allocation (what address translation adds on the communicator's memory)
//   small-kernel-trace     its traced instance with the trace on (cost_trace.cuh): the kernel's own
//                    segments in this harness, beside the floor bench's
//
// A benchmark, not a test: medians of `repeats` with min and max (docs/kernels.md, "Fixed cost").
//
//   symmem_fixed_cost_probes [--calls 64] [--replays 50] [--repeats 7] [--csv FILE]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/allreduce_kernels.cuh"
#include "kernels/device_view.h"
#include "kernels/flag_protocol.cuh"
#include "kernels/programmatic_launch.h"
#include "kernels/symmetric_layout.h"
#include "tests/bench/bench_cuda_check.h"

namespace {

using symmem::kernels::kArmedWord;
namespace dev = symmem::kernels::device;

enum Probe : int {
  kEmpty,
  kRecord,
  kRecordBarrier,
  kExchange,
  kExchangePage,
  kExchangeWarp,
  kExchangeBarrier,
  kExchangeConverged,
  kProbes
};
const char* const kProbeNames[kProbes] = {"empty",         "record",        "record-barrier",   "exchange",
                                          "exchange-page", "exchange-warp", "exchange-barrier", "exchange-converged"};

constexpr int kSlotBytes = 512;  // one slot: 32 vectors
constexpr int kMarks = 5;        // after the wait, round read, packet sent, peer's packet seen, end
constexpr int kTraceCalls = 64;
constexpr uint64_t kGiveUpNs = 1000000000ull;  // a probe whose peer never comes stops after 1 s

// One rank's memory: the round word, 3 round buffers x 2 source slots, input, output, trace.
struct RankMemory {
  uint64_t* round;
  char* slots;  // [buffer][source] x kSlotBytes
  uint4* in;
  uint4* out;
  uint32_t* failed;
  long long* trace;  // kTraceCalls x (kMarks + 2): clock64 marks, then globaltimer after wait and at end
};

__device__ __forceinline__ uint64_t nowNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

template <int P>
__global__ void __launch_bounds__(32) probeKernel(RankMemory mine, RankMemory peer, int rank) {
  dev::programmaticHandshake(false);
  if constexpr (P == kEmpty) return;
  long long mark[kMarks];
  const long long t0 = clock64();
  const uint64_t ns0 = nowNs();
  mark[0] = t0;
  const int lane = threadIdx.x;
  const bool worker = P == kExchangeWarp || lane == 0;
  const uint4 x = worker ? mine.in[lane] : uint4{};
  uint64_t round = 0;
  if constexpr (P == kRecord) {
    if (lane == 0) *mine.round = *mine.round + 1;
    return;
  } else if constexpr (P == kRecordBarrier) {
    __shared__ uint64_t shared;
    if (lane == 0) shared = *mine.round;
    __syncthreads();
    round = shared;
    __syncthreads();
    if (lane == 0) *mine.round = round + 1;
    return;
  } else {
    if (worker || P == kExchangeConverged) round = *mine.round;
  }
  mark[1] = clock64();
  constexpr bool kMeetAtEnd = P == kExchangeBarrier || P == kExchangeConverged;
  if (!worker && P != kExchangeConverged) {
    if constexpr (kMeetAtEnd) __syncthreads();
    return;
  }
  // exchange-converged: every thread takes thread 0's round and vector.
  const int vec = P == kExchangeConverged ? 0 : lane;
  const int other = 1 - rank;
  const int buf = static_cast<int>(round % 3), rearm = static_cast<int>((round + 2) % 3);
  const size_t at = static_cast<size_t>(vec) * 16;
  if (worker)
    dev::packetAt(peer.slots + (buf * 2 + rank) * kSlotBytes + at)->write(dev::SentinelPacket::seal<float>(x));
  mark[2] = clock64();
  if (worker) dev::packetAt(mine.slots + (rearm * 2 + other) * kSlotBytes + at)->arm();
  const dev::SentinelPacket* slot = dev::packetAt(mine.slots + (buf * 2 + other) * kSlotBytes + at);
  uint4 got = slot->poll();
  uint32_t spins = 0;
  while (!dev::SentinelPacket::arrived<float>(got)) {
    if ((++spins & 1023u) == 0 && nowNs() - ns0 > kGiveUpNs) {
      *mine.failed = 1;
      break;
    }
    got = slot->poll();
  }
  mark[3] = clock64();
  if (worker) mine.out[lane] = make_uint4(got.x + x.x, got.y + x.y, got.z + x.z, got.w + x.w);
  if constexpr (kMeetAtEnd) __syncthreads();
  if (lane == 0) {
    *mine.round = round + 1;
    mark[4] = clock64();
    long long* t = mine.trace + (round % kTraceCalls) * (kMarks + 2);
    for (int k = 0; k < kMarks; ++k) t[k] = mark[k];
    t[kMarks] = static_cast<long long>(ns0);
    t[kMarks + 1] = static_cast<long long>(nowNs());
  }
}

__global__ void armSlots(char* slots, size_t bytes) {
  for (size_t i = threadIdx.x; i < bytes / 4; i += blockDim.x) reinterpret_cast<uint32_t*>(slots)[i] = kArmedWord;
}

using KernelFn = void (*)(RankMemory, RankMemory, int);
const KernelFn kKernels[kProbes] = {probeKernel<kEmpty>,           probeKernel<kRecord>,
                                    probeKernel<kRecordBarrier>,   probeKernel<kExchange>,
                                    probeKernel<kExchangePage>,    probeKernel<kExchangeWarp>,
                                    probeKernel<kExchangeBarrier>, probeKernel<kExchangeConverged>};

void launchProbe(int p, const RankMemory& mine, const RankMemory& peer, int rank, cudaStream_t s) {
  RankMemory m = mine, q = peer;
  void* args[] = {&m, &q, &rank};
  BENCH_CHECK_CUDA(symmem::kernels::launchKernel(reinterpret_cast<const void*>(kKernels[p]), 1, 32, true, s, args));
}

constexpr size_t kSlotsBytes = 3 * 2 * kSlotBytes;
constexpr size_t kTraceBytes = kTraceCalls * (kMarks + 2) * sizeof(long long);

// Both ranks' memory: separate allocations, or carved from one allocation.
struct Memory {
  RankMemory rank[2];
  std::vector<void*> allocations;

  explicit Memory(bool onePage) {
    char* page = nullptr;
    size_t used = 0;
    auto take = [&](size_t bytes) -> void* {
      if (onePage) {
        void* p = page + used;
        used += (bytes + 255) / 256 * 256;
        return p;
      }
      void* p = nullptr;
      BENCH_CHECK_CUDA(cudaMalloc(&p, bytes));
      allocations.push_back(p);
      return p;
    };
    if (onePage) {
      BENCH_CHECK_CUDA(cudaMalloc(&page, 1 << 20));
      allocations.push_back(page);
    }
    for (RankMemory& m : rank) {
      m.round = static_cast<uint64_t*>(take(256));
      m.slots = static_cast<char*>(take(kSlotsBytes));
      m.in = static_cast<uint4*>(take(kSlotBytes));
      m.out = static_cast<uint4*>(take(kSlotBytes));
      m.failed = static_cast<uint32_t*>(take(256));
      m.trace = static_cast<long long*>(take(kTraceBytes));
      BENCH_CHECK_CUDA(cudaMemset(m.round, 0, 256));
      BENCH_CHECK_CUDA(cudaMemset(m.failed, 0, 256));
      BENCH_CHECK_CUDA(cudaMemset(m.in, 0, kSlotBytes));
      armSlots<<<1, 256>>>(m.slots, kSlotsBytes);
    }
    BENCH_CHECK_CUDA(cudaDeviceSynchronize());
  }
  ~Memory() {
    for (void* p : allocations) cudaFree(p);
  }
};

// ---- The ladder: the probe's exchange on a communicator's memory, the kernels' pieces one by one ----

using symmem::kernels::DeviceView;

enum LadderPiece : int { kLadderPlan = 1, kLadderRecords = 2, kLadderReceive = 4 };

// Two ranks, one vector per thread of one block (8 B - 8 KiB), fp32 sum; Pieces says which of the
// kernels' own pieces replace the probe's (the rungs in the header comment).
template <int Pieces>
__global__ void __launch_bounds__(symmem::kernels::kMaxThreads)
    ladderKernel(const __grid_constant__ DeviceView v, const float* send, float* recv, size_t count) {
  constexpr bool kPlan = (Pieces & kLadderPlan) != 0;
  constexpr bool kRecords = (Pieces & kLadderRecords) != 0;
  constexpr bool kReceive = (Pieces & kLadderReceive) != 0;
  dev::OneShotPlan p{};
  if constexpr (kPlan) p = dev::planOneShot<float>(v, send, recv, count);
  dev::programmaticHandshake(false);
  if constexpr (!kPlan) p = dev::makeOneShotPlan<float>(v, send, recv, count);
  const size_t i = threadIdx.x;
  const bool mine = i < p.nVec;
  dev::RoundState st{};
  uint4 raw{};
  if constexpr (kRecords) {
    const dev::RoundRecord record = dev::loadRound(p.records, p.wait.aborted);
    raw = mine ? dev::loadVector<float>(reinterpret_cast<const float*>(p.send), i * 4, p.count, p.inAligned) : uint4{};
    st = record.state();
  } else {
    st.round = p.records[0].round;
    raw = mine ? dev::loadVector<float>(reinterpret_cast<const float*>(p.send), i * 4, p.count, p.inAligned) : uint4{};
    st.buffer = symmem::kernels::roundBuffer(st.round);
    st.rearm = symmem::kernels::rearmBuffer(st.round);
    st.rearmBytes = symmem::kernels::kVecBytes;
  }
  const uint4 x = dev::SentinelPacket::seal<float>(raw);
  const size_t bufOffset = static_cast<size_t>(st.buffer) * p.bufferBytes;
  if (mine) {
#pragma unroll
    for (int q = 0; q < 2; ++q)
      if (q != p.rank) dev::packetAt(p.peerSlot[q] + bufOffset + i * 16)->write(x);
  }
  const int other = 1 - p.rank;
  if constexpr (kRecords)
    dev::rearmSlots(p.ownSlot(st.rearm, 0), p.rank, 2, p.slotBytes, st.rearmBytes, i, p.block);
  else if (mine)
    dev::packetAt(p.ownSlot(st.rearm, other) + i * 16)->arm();
  if (mine) {
    uint4 got[symmem::kernels::kMaxRanks] = {};
    bool ok = true;
    if constexpr (kReceive) {
      dev::Deadline d;
      dev::receiveFromPeers<float, true, 2>(p.wait, p.ownSlot(st.buffer, 0) + i * 16, p.slotBytes,
                                            dev::peerMask(p.rank, 2), got, d);
      ok = !d.failed;
    } else {
      const dev::SentinelPacket* slot = dev::packetAt(p.ownSlot(st.buffer, other) + i * 16);
      const uint64_t start = nowNs();
      uint32_t spins = 0;
      got[other] = slot->poll();
      while (!dev::SentinelPacket::arrived<float>(got[other])) {
        if ((++spins & 1023u) == 0 && nowNs() - start > kGiveUpNs) {
          *p.wait.aborted = 1;
          ok = false;
          break;
        }
        got[other] = slot->poll();
      }
    }
    if (ok)
      dev::storeVector<float>(
          reinterpret_cast<float*>(p.recv), i * 4, p.count,
          dev::SentinelPacket::seal<float>(dev::reduceInRankOrder<float, dev::kSum>(got, x, p.rank, 2)), p.outAligned);
  }
  if constexpr (kRecords)
    dev::closeRound(st, p.records, p.gridCap, 1, p.block, symmem::kernels::paddedBytes(p.count * sizeof(float)));
  else if (threadIdx.x == 0)
    p.records[0].round = st.round + 1;
}

// Both ranks' memory as two communicators of the floor bench have it (its layout: one-shot and
// two-shot up to 64 KiB; grid cap 4), in separate allocations or carved from one.
struct CommMemory {
  DeviceView view[2];
  float* in[2];
  float* out[2];
  std::vector<void*> device;
  std::vector<void*> host;

  CommMemory(bool onePage, bool trace) {
    const symmem::kernels::SymmetricLayout layout = symmem::kernels::makeLayout(2, 64 << 10, 64 << 10);
    const size_t controlBytes = sizeof(symmem::kernels::DeviceControl);
    const size_t traceBytes = symmem::kernels::kTraceCalls * symmem::kernels::kTraceWords * sizeof(uint64_t);
    char* page = nullptr;
    size_t used = 0;
    auto take = [&](size_t bytes) -> void* {
      void* p = nullptr;
      if (onePage) {
        p = page + used;
        used += (bytes + 255) / 256 * 256;
      } else {
        BENCH_CHECK_CUDA(cudaMalloc(&p, bytes));
        device.push_back(p);
      }
      BENCH_CHECK_CUDA(cudaMemset(p, 0, bytes));
      return p;
    };
    if (onePage) {
      BENCH_CHECK_CUDA(cudaMalloc(&page, 2 * (layout.totalBytes + controlBytes + traceBytes + (256 << 10))));
      device.push_back(page);
    }
    for (int r = 0; r < 2; ++r) {
      DeviceView& v = view[r];
      v = DeviceView{};
      v.rank = r;
      v.nRanks = 2;
      v.layout = layout;
      v.local = static_cast<char*>(take(layout.totalBytes));
      armSlots<<<1, 256>>>(v.local + layout.oneShotOffset, layout.scatterOffset - layout.oneShotOffset);
      v.control = static_cast<symmem::kernels::DeviceControl*>(take(controlBytes));
      void* words = nullptr;
      BENCH_CHECK_CUDA(cudaHostAlloc(&words, symmem::kernels::kHostWords * sizeof(uint32_t), cudaHostAllocMapped));
      std::memset(words, 0, symmem::kernels::kHostWords * sizeof(uint32_t));
      host.push_back(words);
      void* mapped = nullptr;
      BENCH_CHECK_CUDA(cudaHostGetDevicePointer(&mapped, words, 0));
      v.errorWord = static_cast<volatile uint32_t*>(mapped);
      v.timeoutNs = kGiveUpNs;
      v.gridCap = 4;
      v.trace = trace ? static_cast<uint64_t*>(take(traceBytes)) : nullptr;
      in[r] = static_cast<float*>(take(64 << 10));
      out[r] = static_cast<float*>(take(64 << 10));
    }
    for (int r = 0; r < 2; ++r)
      for (int q = 0; q < 2; ++q) view[r].peer[q] = view[q].local;
    BENCH_CHECK_CUDA(cudaDeviceSynchronize());
  }
  ~CommMemory() {
    for (void* p : device) cudaFree(p);
    for (void* p : host) cudaFreeHost(p);
  }
  // Whether a rank's wait gave up (the probe's own or the kernels' bounded wait).
  bool failed() const {
    for (const DeviceView& v : view) {
      uint32_t aborted = 0;
      BENCH_CHECK_CUDA(cudaMemcpy(&aborted, &v.control->aborted, 4, cudaMemcpyDeviceToHost));
      if (aborted != 0) return true;
    }
    return false;
  }
};

enum CommProbe : int {
  kLadderBase,
  kLadderPlanned,
  kLadderRecorded,
  kLadderReceived,
  kSmallKernel,
  kSmallKernelOnePage,
  kSmallKernelTrace,
  kCommProbes
};
const char* const kCommProbeNames[kCommProbes] = {"ladder-base",       "ladder-plan",  "ladder-records",
                                                  "ladder-receive",    "small-kernel", "small-kernel-one-page",
                                                  "small-kernel-trace"};
const void* commKernel(int p) {
  switch (p) {
    case kLadderBase:
      return reinterpret_cast<const void*>(ladderKernel<0>);
    case kLadderPlanned:
      return reinterpret_cast<const void*>(ladderKernel<kLadderPlan>);
    case kLadderRecorded:
      return reinterpret_cast<const void*>(ladderKernel<kLadderPlan | kLadderRecords>);
    case kLadderReceived:
      return reinterpret_cast<const void*>(ladderKernel<kLadderPlan | kLadderRecords | kLadderReceive>);
    case kSmallKernelTrace:
      return reinterpret_cast<const void*>(dev::oneShotSmallPush<float, dev::kSum, 2, true, false>);
    default:
      return reinterpret_cast<const void*>(dev::oneShotSmallPush<float, dev::kSum, 2, false, false>);
  }
}

// Means over the last replay's calls of the small kernel's trace (64 calls, one per trace entry):
// its segments per rank, and how long after the peer issued its stores this rank saw them.
void printKernelTrace(const CommMemory& mem) {
  using symmem::kernels::kTraceCalls;
  using symmem::kernels::kTraceMarks;
  using symmem::kernels::kTraceWords;
  std::vector<uint64_t> t[2];
  for (int r = 0; r < 2; ++r) {
    t[r].resize(static_cast<size_t>(kTraceCalls) * kTraceWords);
    BENCH_CHECK_CUDA(
        cudaMemcpy(t[r].data(), mem.view[r].trace, t[r].size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  }
  auto ns = [&](int r, int c, int m) { return static_cast<double>(t[r][static_cast<size_t>(c) * kTraceWords + m]); };
  auto clk = [&](int r, int c, int m) { return ns(r, c, kTraceMarks + m); };
  for (int r = 0; r < 2; ++r) {
    double seg[4] = {0, 0, 0, 0}, cycles = 0, span = 0, gap = 0, seen = 0, missed = 0;
    for (int c = 0; c < kTraceCalls; ++c) {
      for (int k = 0; k < 4; ++k) seg[k] += clk(r, c, k + 2) - clk(r, c, k + 1);
      cycles += clk(r, c, dev::kMarkEnd) - clk(r, c, dev::kMarkPrevDone);
      span += ns(r, c, dev::kMarkEnd) - ns(r, c, dev::kMarkPrevDone);
      if (c + 1 < kTraceCalls) gap += ns(r, c + 1, dev::kMarkPrevDone) - ns(r, c, dev::kMarkEnd);
      seen += ns(r, c, dev::kMarkArrived) - ns(1 - r, c, dev::kMarkSent);
      missed += static_cast<double>(t[r][static_cast<size_t>(c) * kTraceWords + 2 * kTraceMarks]);
    }
    const double perUs = span > 0 ? cycles / span * 1000 : 1;  // cycles per us
    const double n = kTraceCalls;
    std::printf(
        "    rank %d, us: round record %.3f, stores issued %.3f, peer's data seen %.3f, output+records %.3f; "
        "end to the next call past its wait %.3f; the peer's stores seen here %.3f us after they were issued; "
        "missed poll rounds %.2f; SM clock %.0f MHz\n",
        r, seg[0] / n / perUs, seg[1] / n / perUs, seg[2] / n / perUs, seg[3] / n / perUs, gap / (n - 1) / 1000,
        seen / n / 1000, missed / n, perUs);
  }
}

struct Options {
  int calls = kTraceCalls, replays = 50, repeats = 7;
  std::string csv;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Per-call microseconds over repeats of launch(rank, stream) `calls` times per rank in one graph per
// rank, both ranks' graphs replayed at once.
template <typename Launch>
std::vector<double> timeGraphs(const Options& o, Launch&& launch, cudaStream_t s[2]) {
  cudaGraphExec_t exec[2];
  for (int r = 0; r < 2; ++r) {
    cudaGraph_t g;
    BENCH_CHECK_CUDA(cudaStreamBeginCapture(s[r], cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < o.calls; ++i) launch(r, s[r]);
    BENCH_CHECK_CUDA(cudaStreamEndCapture(s[r], &g));
    BENCH_CHECK_CUDA(cudaGraphInstantiate(&exec[r], g, 0));
    BENCH_CHECK_CUDA(cudaGraphDestroy(g));
  }
  for (int r = 0; r < 2; ++r) BENCH_CHECK_CUDA(cudaGraphLaunch(exec[r], s[r]));  // warm-up
  BENCH_CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<double> us;
  for (int k = 0; k < o.repeats; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int rep = 0; rep < o.replays; ++rep)
      for (int r = 0; r < 2; ++r) BENCH_CHECK_CUDA(cudaGraphLaunch(exec[r], s[r]));
    BENCH_CHECK_CUDA(cudaDeviceSynchronize());
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                 (static_cast<double>(o.calls) * o.replays));
  }
  for (cudaGraphExec_t e : exec) BENCH_CHECK_CUDA(cudaGraphExecDestroy(e));
  return us;
}

// Mean cycles of each segment over the last replay's calls (rank 0), and the SM clock they imply.
void printSegments(const Memory& mem, int calls) {
  std::vector<long long> t(kTraceCalls * (kMarks + 2));
  BENCH_CHECK_CUDA(cudaMemcpy(t.data(), mem.rank[0].trace, kTraceBytes, cudaMemcpyDeviceToHost));
  double seg[kMarks - 1] = {0, 0, 0, 0};
  double cycles = 0, ns = 0, gap = 0;
  int n = 0, gaps = 0;
  const int used = std::min(calls, kTraceCalls);
  for (int c = 0; c < used; ++c) {
    const long long* m = &t[static_cast<size_t>(c) * (kMarks + 2)];
    for (int k = 0; k + 1 < kMarks; ++k) seg[k] += static_cast<double>(m[k + 1] - m[k]);
    cycles += static_cast<double>(m[kMarks - 1] - m[0]);
    ns += static_cast<double>(m[kMarks + 1] - m[kMarks]);
    ++n;
    if (c + 1 < used) {
      const long long* next = &t[static_cast<size_t>(c + 1) * (kMarks + 2)];
      gap += static_cast<double>(next[kMarks] - m[kMarks + 1]);
      ++gaps;
    }
  }
  const double perNs = ns > 0 ? cycles / ns : 0;
  std::printf(
      "    rank 0, mean cycles: round read %.0f, packet sent %.0f, peer's packet seen %.0f, output+round %.0f; "
      "SM clock seen %.0f MHz; end to the next call's wait returned %.3f us\n",
      seg[0] / n, seg[1] / n, seg[2] / n, seg[3] / n, perNs * 1000, gaps ? gap / gaps / 1000 : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--calls")
      o.calls = std::atoi(next());
    else if (a == "--replays")
      o.replays = std::atoi(next());
    else if (a == "--repeats")
      o.repeats = std::atoi(next());
    else if (a == "--csv")
      o.csv = next();
    else {
      std::fprintf(stderr, "usage: %s [--calls N] [--replays N] [--repeats N] [--csv FILE]\n", argv[0]);
      return 2;
    }
  }
  if (o.calls < 2 || o.replays < 1 || o.repeats < 1) {
    std::fprintf(stderr, "--calls must be at least 2, --replays and --repeats at least 1\n");
    return 2;
  }
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);  // each rank's stream its own hardware queue
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
    std::printf("no GPU: nothing to measure\n");
    return 0;
  }
  cudaDeviceProp prop{};
  BENCH_CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  if (prop.major < 9) {
    std::printf("%s: programmatic launch needs capability 9.0\n", prop.name);
    return 0;
  }
  std::printf("%s; 2 ranks as streams of one thread; %d calls per graph, %d replays, %d repeats\n", prop.name, o.calls,
              o.replays, o.repeats);
  FILE* csv = o.csv.empty() ? nullptr : std::fopen(o.csv.c_str(), "w");
  if (csv) std::fprintf(csv, "probe,median_us,min_us,max_us\n");
  cudaStream_t s[2];
  for (cudaStream_t& x : s) BENCH_CHECK_CUDA(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
  int failures = 0;
  for (int p = 0; p < kProbes; ++p) {
    Memory mem(p == kExchangePage);
    std::vector<double> us = timeGraphs(
        o, [&](int r, cudaStream_t st) { launchProbe(p, mem.rank[r], mem.rank[1 - r], r, st); }, s);
    uint32_t failed[2] = {0, 0};
    for (int r = 0; r < 2; ++r) BENCH_CHECK_CUDA(cudaMemcpy(&failed[r], mem.rank[r].failed, 4, cudaMemcpyDeviceToHost));
    const auto [lo, hi] = std::minmax_element(us.begin(), us.end());
    std::printf("  %-15s %7.3f us per call (min %.3f, max %.3f)%s\n", kProbeNames[p], median(us), *lo, *hi,
                failed[0] || failed[1] ? "  PEER NEVER CAME" : "");
    failures += (failed[0] || failed[1]) ? 1 : 0;
    if (p >= kExchange) printSegments(mem, o.calls);
    if (csv) std::fprintf(csv, "%s,%.4f,%.4f,%.4f\n", kProbeNames[p], median(us), *lo, *hi);
  }
  std::printf("on a communicator's memory, 8 B per call:\n");
  for (int p = 0; p < kCommProbes; ++p) {
    CommMemory mem(p == kSmallKernelOnePage, p == kSmallKernelTrace);
    const void* kernel = commKernel(p);
    std::vector<double> us = timeGraphs(
        o,
        [&](int r, cudaStream_t st) {
          DeviceView v = mem.view[r];
          const float* send = mem.in[r];
          float* recv = mem.out[r];
          size_t count = 2;
          void* args[] = {&v, &send, &recv, &count};
          BENCH_CHECK_CUDA(symmem::kernels::launchKernel(kernel, 1, 32, true, st, args));
        },
        s);
    const bool failed = mem.failed();
    const auto [lo, hi] = std::minmax_element(us.begin(), us.end());
    std::printf("  %-22s %7.3f us per call (min %.3f, max %.3f)%s\n", kCommProbeNames[p], median(us), *lo, *hi,
                failed ? "  PEER NEVER CAME" : "");
    failures += failed ? 1 : 0;
    if (p == kSmallKernelTrace && o.calls == symmem::kernels::kTraceCalls) printKernelTrace(mem);
    if (csv) std::fprintf(csv, "%s,%.4f,%.4f,%.4f\n", kCommProbeNames[p], median(us), *lo, *hi);
  }
  for (cudaStream_t x : s) BENCH_CHECK_CUDA(cudaStreamDestroy(x));
  if (csv) std::fclose(csv);
  return failures == 0 ? 0 : 1;
}

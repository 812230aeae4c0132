// SPDX-License-Identifier: Apache-2.0
// Per-call cost of the decision and of the tuner's getCollInfo (target: under 50 ns each), and of the
// interposer's count of each call in the live statistics (plugin/stats/call_stats.h; budget: 5 ns).
// A benchmark, not a test: it reports, it does not pass or fail.
#include <benchmark/benchmark.h>

#include "core/decision_table.h"
#include "plugin/stats/call_stats.h"
#include "plugin/tuner/tuner.h"

namespace symmem {
namespace {

void BM_Decide(benchmark::State& state) {
  const Thresholds* entry = DecisionTable::builtIn().thresholdsFor({12, 0}, LinkClass::PcieSameSwitch, 8).entry;
  CommFacts facts{8, 1, {12, 0}, LinkClass::PcieSameSwitch, true, 1 << 20};
  const Policy policy;
  uint64_t bytes = 8;
  for (auto _ : state) {
    CollRequest r{Collective::AllReduce, ReduceOp::Sum, DataType::Bfloat16, bytes};
    benchmark::DoNotOptimize(decide(r, facts, entry, policy));
    bytes = bytes >= (64u << 20) ? 8 : bytes * 2;
  }
}
BENCHMARK(BM_Decide);

// What the interposer adds to a symmetric call with SYMMEM_STATS on: the size bucket and one relaxed
// load and store of the route's counter, over sizes 8 B - 64 MiB, eager and captured in turn.
void BM_CountCall(benchmark::State& state) {
  CallStats stats(stats::WrittenSegment::createPrivate("bench", "0"));
  std::unique_ptr<CommCounters> counters = stats.lease(nullptr);
  uint64_t bytes = 8;
  bool captured = false;
  for (auto _ : state) {
    counters->count(stats::Route::OneShotPush, bytes, captured);
    bytes = bytes >= (64u << 20) ? 8 : bytes * 2;
    captured = !captured;
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_CountCall);

// The same loop without the count: what BM_CountCall's loop costs by itself.
void BM_CountCallLoopAlone(benchmark::State& state) {
  uint64_t bytes = 8;
  bool captured = false;
  for (auto _ : state) {
    benchmark::DoNotOptimize(bytes);
    benchmark::DoNotOptimize(captured);
    bytes = bytes >= (64u << 20) ? 8 : bytes * 2;
    captured = !captured;
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_CountCallLoopAlone);

void BM_GetCollInfoWithBands(benchmark::State& state) {
  DecisionTable table = DecisionTable::builtIn();
  Thresholds e = *table.thresholdsFor({12, 0}, LinkClass::PcieCrossSocket, 8).entry;
  e.bands[0] = {Collective::AllReduce, 256 << 10, NcclAlgo::Ring, NcclProto::LL, 0};
  e.bands[1] = {Collective::AllReduce, 16 << 20, NcclAlgo::Tree, NcclProto::Simple, 8};
  e.numBands = 2;
  table.set(e);
  ProcessContext process;
  process.node.cc = {12, 0};
  process.node.link = LinkClass::PcieCrossSocket;
  process.table = &table;
  TunerComm comm = makeTunerComm(process, 1, 8, 1);
  float cells[7][3];
  size_t bytes = 8;
  for (auto _ : state) {
    for (auto& row : cells) row[0] = row[1] = row[2] = -1.0f;
    cells[0][0] = 3.0f;
    cells[1][0] = 2.0f;
    cells[0][2] = 9.0f;
    cells[1][2] = 8.0f;
    int nChannels = 0;
    tuner::getCollInfo(&comm, 4, bytes, 1, reinterpret_cast<float**>(cells), 7, 3, 0, &nChannels);
    benchmark::DoNotOptimize(cells);
    bytes = bytes >= (64u << 20) ? 8 : bytes * 2;
  }
}
BENCHMARK(BM_GetCollInfoWithBands);

void BM_GetCollInfoInactive(benchmark::State& state) {
  TunerComm comm;  // not active: the common case on a machine with no bands
  float cells[7][3] = {};
  for (auto _ : state) {
    int nChannels = 0;
    tuner::getCollInfo(&comm, 4, 4096, 1, reinterpret_cast<float**>(cells), 7, 3, 0, &nChannels);
    benchmark::DoNotOptimize(cells);
  }
}
BENCHMARK(BM_GetCollInfoInactive);

}  // namespace
}  // namespace symmem

// Host cost of the interposed ncclAllReduce when the call falls back to NCCL (target: under 0.2 us).
// The stand-in NCCL does nothing, so what is measured is the interposer alone.
#include "plugin/interpose/interposer.h"

namespace symmem {
namespace {

RealNccl noOpNccl() {
  RealNccl r;
  r.allReduce = [](const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) {
    return ncclSuccess;
  };
  r.commCount = [](const ncclComm_t, int* n) {
    *n = 8;
    return ncclSuccess;
  };
  r.commUserRank = [](const ncclComm_t, int* n) {
    *n = 0;
    return ncclSuccess;
  };
  r.commCuDevice = [](const ncclComm_t, int* n) {
    *n = 0;
    return ncclSuccess;
  };
  r.commGetAsyncError = [](ncclComm_t, ncclResult_t* s) {
    *s = ncclSuccess;
    return ncclSuccess;
  };
  return r;
}

void BM_InterposerFallbackSetUpComm(benchmark::State& state) {
  static const RealNccl nccl = noOpNccl();
  static ProcessContext process;
  process.table = &DecisionTable::builtIn();
  Interposer ip(
      nccl, process,
      [](ncclComm_t, int, int, int, void*) {
        auto s = std::make_unique<CommState>();
        s->why = "no P2P";
        return s;
      },
      [](cudaStream_t) { return std::optional<bool>(false); });
  auto comm = reinterpret_cast<ncclComm_t>(0x1234);
  float buf[4];
  for (auto _ : state) benchmark::DoNotOptimize(ip.allReduce(buf, buf, 4, ncclBfloat16, ncclSum, comm, nullptr));
}
BENCHMARK(BM_InterposerFallbackSetUpComm);

void BM_InterposerIneligibleDtype(benchmark::State& state) {
  static const RealNccl nccl = noOpNccl();
  static ProcessContext process;
  process.table = &DecisionTable::builtIn();
  Interposer ip(
      nccl, process, [](ncclComm_t, int, int, int, void*) { return std::unique_ptr<CommState>(); },
      [](cudaStream_t) { return std::optional<bool>(false); });
  auto comm = reinterpret_cast<ncclComm_t>(0x1234);
  double buf[4];
  for (auto _ : state) benchmark::DoNotOptimize(ip.allReduce(buf, buf, 4, ncclFloat64, ncclSum, comm, nullptr));
}
BENCHMARK(BM_InterposerIneligibleDtype);

}  // namespace
}  // namespace symmem

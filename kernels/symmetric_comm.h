// SPDX-License-Identifier: Apache-2.0
#pragma once
// The symmetric-memory all-reduce path for one communicator: buffers mapped into every peer,
// one-shot and two-shot push kernels with the flag in the data, bounded waits.
//
// This module does not depend on NCCL: the caller supplies the all-gather used at setup
// (the interposer passes one built on pncclAllGather; tests and tools pass their own).
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/call_stats_layout.h"
#include "core/collective.h"
#include "core/sym_variant.h"

namespace symmem::kernels {

enum class Algorithm { OneShot, TwoShot };

// Which kernel a call runs: the algorithm and how it moves its data (core/sym_variant.h). An
// Algorithm alone means its push variant.
struct KernelChoice {
  Algorithm algorithm = Algorithm::OneShot;
  SymVariant variant = SymVariant::Push;
  constexpr KernelChoice(Algorithm a, SymVariant v = SymVariant::Push) : algorithm(a), variant(v) {}  // NOLINT
};

// Collective: every rank calls it with `bytesPerRank` bytes in `send`; on return `recv` holds
// nRanks * bytesPerRank bytes, rank r's contribution at offset r * bytesPerRank.
// Returns false on failure (then setup fails on this rank, and the caller must make every rank
// fall back; the facts exchanged let peers see it).
using AllGatherFn = std::function<bool(const void* send, void* recv, size_t bytesPerRank)>;

struct SymmetricConfig {
  int rank = 0;
  int nRanks = 0;
  int device = 0;                  // CUDA device of this rank
  size_t oneShotMaxBytes = 0;      // largest message the one-shot kernel must take
  size_t twoShotMaxBytes = 0;      // largest message the two-shot kernel must take (0: two-shot off)
  int64_t timeoutMs = 10000;       // bound on every wait for a peer
  bool p2pCheck = true;            // verify each mapping with a pattern at setup
  int maxBlocks = 0;               // cap on blocks per kernel launch (0: built-in default; at most 128 and
                                   // the device's multiprocessor count)
  bool programmaticLaunch = true;  // launch with programmatic stream serialization (sm_90+): the kernel's
                                   // launch overlaps the previous kernel; semantics unchanged
  bool orderStreams = true;        // calls run in call order whatever their streams, eager or captured, as
                                   // NCCL's do (symmetric_order.cpp); off only to measure what that costs
  // The two halves the halves variant runs over (core/sym_variant.h; topology/halves.h finds them):
  // halfOf[r], 0 or 1, for every rank r < nRanks, two equal halves of at least 2 ranks each, half 0
  // holding rank 0; ranks are paired across the middle by their position in their half. Every rank
  // must pass the same halves (setup compares them: ranks that disagree get no comm, all of them).
  // halves false: none, and a call in the halves variant is Unsupported.
  bool halves = false;
  std::array<uint8_t, 8> halfOf{};
  // Benchmark only (tests/bench/shared_gpu_floor.cu): CostSwitch bits (device_view.h), earlier forms
  // of the per-call path kept to measure what replacing them saved, and a device array of
  // kTraceCalls x kTraceWords timestamps that one-shot push launches fill (cost_trace.cuh).
  uint32_t costSwitches = 0;
  uint64_t* costTrace = nullptr;
};

enum class Status {
  Ok,
  Unsupported,  // dtype/op/size this path does not take: caller uses NCCL (decided identically on all ranks)
  PeerTimeout,  // a previous call timed out waiting for a peer; the communicator's path is broken
  CudaError,
};

class SymmetricComm {
 public:
  // Collective over the ranks of the communicator (calls `allGather` a fixed number of times on every
  // rank, whatever happens locally, so a failure on one rank cannot leave peers waiting). Returns
  // nullptr with `whyNot` set if any rank could not take part; then no rank gets a comm.
  static std::unique_ptr<SymmetricComm> create(const SymmetricConfig& config, const AllGatherFn& allGather,
                                               std::string* whyNot);
  // Teardown waits for this communicator's own work only (its calls, eager and replayed, end with an
  // event record; bounded by the timeout), never for the device as a whole, in relaxed capture mode
  // (another thread's capture stays valid); then frees buffers, mappings and pinned memory. Work that
  // has not ended by then is left allocated, with a WARN: nothing is freed under a running kernel.
  virtual ~SymmetricComm() = default;

  // ncclCommAbort/ncclCommRevoke: from any thread, returns at once. Every wait of this communicator's
  // kernels stops within about a millisecond (the host abort word they poll), and every later launch,
  // graph replays too, exits at once. The communicator is then good only for destruction.
  virtual void abort() = 0;

  // Enqueues the all-reduce on `stream` (graph capture safe: all per-call state lives on the device).
  // `captured` (when given): set to whether the call was captured into a graph rather than launched.
  virtual Status allReduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op, KernelChoice kernel,
                           cudaStream_t stream, bool* captured = nullptr) = 0;
  // Records `event` on `stream` (cudaEventRecord), after the all-reduce just enqueued there: a call's
  // launch-completion event (NCCL 2.32's ncclAllReduceConfig). CudaError when the record fails.
  virtual Status recordEvent(cudaEvent_t event, cudaStream_t stream);

  // From now on one call in `samplePeriod` (a power of two, at most 2^16; 1: every call) of each kernel
  // kind and size bucket, the first always, runs the clocked kernels, which count and time each of
  // their executions on the device by kind and bucket (kernels/kernel_clock.cuh); every execution of
  // each algorithm is counted anyway, by its round records. Both reach the host by copyKernelStats
  // and, at teardown, into `host` (plain host memory that outlives this object). Before the first call
  // only. False, and nothing kept, when the copies' pinned memory or stream cannot be had or the
  // period is not one of those. What it costs a call: docs/live-stats.md, "Cost".
  virtual bool publishKernelStats(stats::GpuCounts* host, uint32_t samplePeriod) {
    (void)host;
    (void)samplePeriod;
    return false;
  }
  // The counts as they stand, copied from the device on a stream of their own (nothing of the
  // application's is waited for), waiting at most boundMs: false when they are not kept, the copy
  // fails, or it does not finish in time (no later copy is tried). Any thread; serialised with
  // teardown.
  virtual bool copyKernelStats(stats::GpuCounts* to, int64_t boundMs) {
    (void)to;
    (void)boundMs;
    return false;
  }

  // The first error a kernel recorded (timeout), if any; cleared by nothing: the path stays off. A
  // plain read of host memory: cheap, no CUDA call, safe from any thread.
  virtual Status deviceStatus() const = 0;
  // The rank a timed-out kernel waited for (meaningful when deviceStatus() is PeerTimeout).
  virtual int waitedRank() const = 0;
  virtual const SymmetricConfig& config() const = 0;
};

// Device memory one rank allocates for `config` (the symmetric buffer; symmetric_layout.h).
size_t symmetricBufferBytes(const SymmetricConfig& config);

const char* statusName(Status status);

}  // namespace symmem::kernels

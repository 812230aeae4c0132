// SPDX-License-Identifier: Apache-2.0
#pragma once
// How the measuring tools time one path at one size (the method symmem-bench and symmem-tune share):
// `calls` back-to-back calls are captured into one CUDA graph; after a warm-up replay, each timed
// batch starts after a barrier across ranks, is one replay between two CUDA events on the rank's
// stream, and gives elapsed / calls. The median of the batches is the number reported.
#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

#include "tools/common/rank_rendezvous.h"

namespace symmem::harness {

// Ends a measuring rank after one line naming the failed call ("[rank 1] file:line call: why"); the
// parent then reports the rank's exit code.
[[noreturn]] void endRankAfterFailure(int rank, const char* file, int line, const char* call, const char* why,
                                      int exitCode);

}  // namespace symmem::harness

// A CUDA failure in a measuring rank ends that rank with exit code 2. Expects `rank` in scope.
#define CUDA_CHECK(call)                                                                                  \
  do {                                                                                                    \
    const cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess)                                                                                \
      ::symmem::harness::endRankAfterFailure(rank, __FILE__, __LINE__, #call, cudaGetErrorString(e_), 2); \
  } while (0)

namespace symmem::harness {

// `calls` calls of one path captured into one instantiated graph on `stream`.
class CapturedBatch {
 public:
  // enqueue() issues one call on the stream and says whether it was accepted.
  CapturedBatch(int rank, cudaStream_t stream, int calls, const std::function<bool()>& enqueue);
  // Destroys the graph; callers destroy batches before any ncclCommDestroy (which can hang otherwise).
  ~CapturedBatch();
  CapturedBatch(const CapturedBatch&) = delete;
  CapturedBatch& operator=(const CapturedBatch&) = delete;

  void replay();  // enqueues one replay of all the calls on the stream
  bool allCallsAccepted() const { return accepted_; }
  int calls() const { return calls_; }

 private:
  int rank_;
  cudaStream_t stream_;
  int calls_;
  bool accepted_ = true;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// Times batches of calls on one rank's stream, each batch started together with the other ranks
// (after a barrier), or on this rank alone.
class BatchTimer {
 public:
  BatchTimer(int rank, RankBarrier& barrier, cudaStream_t stream);
  BatchTimer(int rank, cudaStream_t stream);  // no barrier: what runs on this rank only
  ~BatchTimer();
  BatchTimer(const BatchTimer&) = delete;
  BatchTimer& operator=(const BatchTimer&) = delete;

  // `reps` batches of enqueueBatch(), which issues callsPerBatch calls: per-call microseconds, sorted.
  std::vector<double> time(int reps, int callsPerBatch, const std::function<void()>& enqueueBatch);

 private:
  int rank_;
  RankBarrier* barrier_;  // null: batches start without waiting for the other ranks
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// The reported value of a sorted, non-empty sample: its middle element (the upper one of an even count).
inline double medianOfSorted(const std::vector<double>& sorted) { return sorted[sorted.size() / 2]; }

}  // namespace symmem::harness

// SPDX-License-Identifier: Apache-2.0
#include "tools/common/graph_timing.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace symmem::harness {

void endRankAfterFailure(int rank, const char* file, int line, const char* call, const char* why, int exitCode) {
  std::fprintf(stderr, "[rank %d] %s:%d %s: %s\n", rank, file, line, call, why);
  std::exit(exitCode);
}

CapturedBatch::CapturedBatch(int rank, cudaStream_t stream, int calls, const std::function<bool()>& enqueue)
    : rank_(rank), stream_(stream), calls_(calls) {
  CUDA_CHECK(cudaStreamSynchronize(stream));
  // Thread-local capture: other threads of the process (NCCL's proxy) may keep using CUDA meanwhile.
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < calls; ++i) accepted_ = enqueue() && accepted_;
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph_));
  CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
}

CapturedBatch::~CapturedBatch() {
  const int rank = rank_;
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  CUDA_CHECK(cudaGraphExecDestroy(exec_));
  CUDA_CHECK(cudaGraphDestroy(graph_));
}

void CapturedBatch::replay() {
  const int rank = rank_;
  CUDA_CHECK(cudaGraphLaunch(exec_, stream_));
}

BatchTimer::BatchTimer(int rank, RankBarrier& barrier, cudaStream_t stream) : BatchTimer(rank, stream) {
  barrier_ = &barrier;
}

BatchTimer::BatchTimer(int rank, cudaStream_t stream) : rank_(rank), barrier_(nullptr), stream_(stream) {
  CUDA_CHECK(cudaEventCreate(&start_));
  CUDA_CHECK(cudaEventCreate(&stop_));
}

BatchTimer::~BatchTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

std::vector<double> BatchTimer::time(int reps, int callsPerBatch, const std::function<void()>& enqueueBatch) {
  const int rank = rank_;
  std::vector<double> us;
  for (int rep = 0; rep < reps; ++rep) {
    if (barrier_ != nullptr) barrier_->wait();
    CUDA_CHECK(cudaEventRecord(start_, stream_));
    enqueueBatch();
    CUDA_CHECK(cudaEventRecord(stop_, stream_));
    CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    us.push_back(ms * 1000.0 / callsPerBatch);
  }
  std::sort(us.begin(), us.end());
  return us;
}

}  // namespace symmem::harness

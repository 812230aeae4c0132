// SPDX-License-Identifier: Apache-2.0
#pragma once
// The GPU benchmarks' check of a CUDA call: a failed call ends the benchmark with its place and
// CUDA's message (a benchmark has nothing to measure after one).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

#define BENCH_CHECK_CUDA(x)                                                                    \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

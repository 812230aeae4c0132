// SPDX-License-Identifier: Apache-2.0
#pragma once
// The GPU tests' two checks: skip (saying why) without enough GPUs, and fail a rank on a CUDA error.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/gpu/rank_harness.h"

// Skips the test, naming what was found, when fewer than n GPUs are present (counted by a forked
// child: the test process itself stays CUDA-free, its ranks are forked first).
#define SKIP_WITHOUT_GPUS(n)                                                                                        \
  do {                                                                                                              \
    std::string why;                                                                                                \
    const int have = symmem::testing::gpuCount(&why);                                                               \
    if (have < (n)) GTEST_SKIP() << "needs " << (n) << " GPUs, found " << have << (why.empty() ? "" : ": ") << why; \
  } while (0)

// Inside a rank: a failed CUDA call fails the rank, naming the call, and returns its failure count.
#define CUDA_OK(f, call)                                                           \
  do {                                                                             \
    const cudaError_t e_ = (call);                                                 \
    if (e_ != cudaSuccess) {                                                       \
      (f).fail("%s:%d %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return (f).count;                                                            \
    }                                                                              \
  } while (0)

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The kernels symmem-health measures a node's peer-to-peer paths with. Each is launched by the GPU
// that does the access; a pointer may be local or a peer mapping (cudaDeviceEnablePeerAccess), which
// is the point: the same kernel reads or writes over the link when given a peer's memory.
// All calls are asynchronous on `stream` and return cudaGetLastError() of the launch.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace symmem::kernels {

// The value the pattern has at word `index` for `seed` (the host checks details with it too).
uint64_t p2pPatternWord(uint64_t seed, uint64_t index);

// Up to 8 buffers one kernel works on at once (a GPU writing to, or reading from, all its peers):
// the blocks are split evenly between them. Target k uses the pattern of seed + k.
struct P2pTargets {
  static constexpr int kMax = 8;
  uint64_t* words[kMax] = {};
  int count = 0;
};
inline P2pTargets oneTarget(uint64_t* words) {
  P2pTargets t;
  t.words[0] = words;
  t.count = 1;
  return t;
}

// Writes the pattern of `seed` + k into words [0, words) of each target k, `repeats` times over
// (the bandwidth of the writes is the point when repeats > 1; the result is the same).
cudaError_t launchFillPattern(const P2pTargets& dst, size_t words, uint64_t seed, int repeats, cudaStream_t stream);

// Compares words [0, words) of `src` with the pattern of `seed`. result[0] += number of words that
// differ; result[1] = min(result[1], first index that differs). Set result to {0, ~0} before.
cudaError_t launchCountMismatches(const uint64_t* src, size_t words, uint64_t seed, unsigned long long* result,
                                  cudaStream_t stream);

// A cycle through all `words` entries for dependent loads: chain[i] = (i + stride) % words, with
// stride odd and words a power of two (so the cycle visits every entry), each entry on its own line.
cudaError_t launchBuildChain(uint64_t* chain, size_t words, size_t stride, cudaStream_t stream);

// One thread follows the chain for `loads` dependent, uncached loads and stores where it ended in
// *sink (so nothing is optimised away). Elapsed time / loads = the latency of one load.
cudaError_t launchChase(const uint64_t* chain, int loads, uint64_t* sink, cudaStream_t stream);

// Streaming 16-byte loads of the first `words` words of each target, `repeats` times; per block one
// folded value into sink[blockIdx.x] (sink holds at least kStreamBlocks entries).
inline constexpr int kStreamBlocks = 264;
cudaError_t launchStreamRead(const P2pTargets& src, size_t words, int repeats, uint4* sink, cudaStream_t stream);

// Holds the stream until *gate (mapped pinned host memory) is non-zero, or 10 s have passed: kernels
// queued behind it on several GPUs then start together when the host opens the gate.
cudaError_t launchGate(const volatile uint32_t* gate, cudaStream_t stream);

}  // namespace symmem::kernels

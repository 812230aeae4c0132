// SPDX-License-Identifier: Apache-2.0
#include "kernels/p2p_probe.h"

#include "kernels/bounded_wait.cuh"

namespace symmem::kernels {
namespace device {

// splitmix64 of seed and index: every word differs from its neighbours and from other seeds, so a
// word landing at the wrong address, a stale word and a dropped write all show as mismatches.
__host__ __device__ __forceinline__ uint64_t patternWord(uint64_t seed, uint64_t index) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__device__ __forceinline__ size_t gridThread() { return size_t{blockIdx.x} * blockDim.x + threadIdx.x; }
__device__ __forceinline__ size_t gridThreads() { return size_t{gridDim.x} * blockDim.x; }

// This block's share of a P2pTargets launch: target blockIdx.x % count, and a thread index and stride
// over the blocks that share that target.
struct TargetShare {
  int target;
  size_t thread;
  size_t threads;
};
__device__ __forceinline__ TargetShare targetShare(int count) {
  const unsigned perTarget = gridDim.x / count;
  return {static_cast<int>(blockIdx.x % count), size_t{blockIdx.x / count} * blockDim.x + threadIdx.x,
          size_t{perTarget} * blockDim.x};
}

// Purpose: the written pattern, and write bandwidth. Requires: targets 16-byte aligned, gridDim.x a
// multiple of their count. Launch shape: kStreamBlocks (rounded to the count) x 256. Size range:
// any; pairs of words go out as one 16-byte store, as the all-reduce kernels write.
__global__ void fillPatternKernel(P2pTargets dst, size_t words, uint64_t seed, int repeats) {
  const TargetShare share = targetShare(dst.count);
  uint64_t* out = dst.words[share.target];
  const uint64_t s = seed + share.target;
  const size_t pairs = words / 2;
  for (int r = 0; r < repeats; ++r) {
    for (size_t p = share.thread; p < pairs; p += share.threads) {
      const ulonglong2 v = make_ulonglong2(patternWord(s, 2 * p), patternWord(s, 2 * p + 1));
      reinterpret_cast<ulonglong2*>(out)[p] = v;
    }
    if ((words & 1) != 0 && share.thread == 0) out[words - 1] = patternWord(s, words - 1);
  }
}

// Purpose: the read-back check. Requires: result = {0, ~0}. Launch shape: kStreamBlocks x 256.
__global__ void countMismatchesKernel(const uint64_t* src, size_t words, uint64_t seed, unsigned long long* result) {
  unsigned long long bad = 0;
  unsigned long long first = ~0ull;
  for (size_t i = gridThread(); i < words; i += gridThreads()) {
    // volatile: the words come from memory (over the link for a peer), not from an earlier cached copy.
    const uint64_t w = reinterpret_cast<const volatile uint64_t*>(src)[i];
    if (w != patternWord(seed, i)) {
      ++bad;
      if (i < first) first = i;
    }
  }
  if (bad != 0) {
    atomicAdd(&result[0], bad);
    atomicMin(&result[1], first);
  }
}

// Purpose: the chain for dependent loads. Launch shape: kStreamBlocks x 256.
__global__ void buildChainKernel(uint64_t* chain, size_t words, size_t stride) {
  for (size_t i = gridThread(); i < words; i += gridThreads()) chain[i] = (i + stride) & (words - 1);
}

// Purpose: load latency. Launch shape: 1 x 1. Each load depends on the one before, and is uncached
// (ld.volatile), so a peer's chain costs one round trip over the link per load.
__global__ void chaseKernel(const uint64_t* chain, int loads, uint64_t* sink) {
  const volatile uint64_t* c = chain;
  uint64_t i = 0;
  for (int n = 0; n < loads; ++n) i = c[i];
  *sink = i;
}

// Purpose: read bandwidth. Requires: as fillPatternKernel. Launch shape: as fillPatternKernel.
__global__ void streamReadKernel(P2pTargets src, size_t words, int repeats, uint4* sink) {
  const TargetShare share = targetShare(src.count);
  const uint4* in = reinterpret_cast<const uint4*>(src.words[share.target]);
  const size_t vectors = words / 2;
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (int r = 0; r < repeats; ++r)
    for (size_t v = share.thread; v < vectors; v += share.threads) {
      const uint4 x = __ldcv(in + v);
      acc.x ^= x.x;
      acc.y ^= x.y;
      acc.z ^= x.z;
      acc.w ^= x.w;
    }
  // Fold the block's values so the loads cannot be dropped; one store per block.
  __shared__ unsigned folded;
  if (threadIdx.x == 0) folded = 0;
  __syncthreads();
  atomicXor(&folded, acc.x ^ acc.y ^ acc.z ^ acc.w);
  __syncthreads();
  if (threadIdx.x == 0) sink[blockIdx.x] = make_uint4(folded, 0, 0, 0);
}

// Purpose: start kernels on several GPUs together. Launch shape: 1 x 1. Bounded: 10 s.
__global__ void gateKernel(const volatile uint32_t* gate) {
  const uint64_t giveUp = globalTimerNs() + 10000000000ull;
  uint32_t spins = 0;
  while (*gate == 0) {
    if ((++spins & 1023u) == 0 && globalTimerNs() > giveUp) return;
  }
}

}  // namespace device

namespace {
constexpr int kThreads = 256;
// kStreamBlocks rounded down to a multiple of the target count, so every target gets as many blocks.
int blocksFor(const P2pTargets& t) { return t.count <= 0 ? 0 : kStreamBlocks / t.count * t.count; }
bool validTargets(const P2pTargets& t) { return t.count >= 1 && t.count <= P2pTargets::kMax; }
}  // namespace

uint64_t p2pPatternWord(uint64_t seed, uint64_t index) { return device::patternWord(seed, index); }

cudaError_t launchFillPattern(const P2pTargets& dst, size_t words, uint64_t seed, int repeats, cudaStream_t stream) {
  if (!validTargets(dst)) return cudaErrorInvalidValue;
  device::fillPatternKernel<<<blocksFor(dst), kThreads, 0, stream>>>(dst, words, seed, repeats);
  return cudaGetLastError();
}

cudaError_t launchCountMismatches(const uint64_t* src, size_t words, uint64_t seed, unsigned long long* result,
                                  cudaStream_t stream) {
  device::countMismatchesKernel<<<kStreamBlocks, kThreads, 0, stream>>>(src, words, seed, result);
  return cudaGetLastError();
}

cudaError_t launchBuildChain(uint64_t* chain, size_t words, size_t stride, cudaStream_t stream) {
  device::buildChainKernel<<<kStreamBlocks, kThreads, 0, stream>>>(chain, words, stride);
  return cudaGetLastError();
}

cudaError_t launchChase(const uint64_t* chain, int loads, uint64_t* sink, cudaStream_t stream) {
  device::chaseKernel<<<1, 1, 0, stream>>>(chain, loads, sink);
  return cudaGetLastError();
}

cudaError_t launchStreamRead(const P2pTargets& src, size_t words, int repeats, uint4* sink, cudaStream_t stream) {
  if (!validTargets(src)) return cudaErrorInvalidValue;
  device::streamReadKernel<<<blocksFor(src), kThreads, 0, stream>>>(src, words, repeats, sink);
  return cudaGetLastError();
}

cudaError_t launchGate(const volatile uint32_t* gate, cudaStream_t stream) {
  device::gateKernel<<<1, 1, 0, stream>>>(gate);
  return cudaGetLastError();
}

}  // namespace symmem::kernels

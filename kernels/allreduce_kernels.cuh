#pragma once
// Device code of the symmetric all-reduce: one-shot and two-shot push kernels with the flag in the
// data. Included by allreduce_kernels.cu only.
//
// ---- Protocol ------------------------------------------------------------------------------------
// A receive slot is "armed" when every 32-bit word holds kArmedWord (reads as -0.0 in every dtype we
// take, symmetric_layout.h). Senders replace -0.0 by +0.0 in what they send and pad the last vector
// with +0.0, so a word that no longer has a -0.0 element has arrived. Data moves only by remote
// 16-byte stores (relaxed, system scope) into peers' buffers; a rank only ever polls its own buffer.
// There is no separate flag, barrier or fence: the data is the flag.
//
// ---- Rotation (why re-arming round r-1's buffer during round r is safe) ---------------------------
// Round r (the r-th call of an algorithm on this communicator, counted on the device) uses round
// buffer r % 3 of every slot region; during round r each rank re-arms, in its OWN buffer, the slots of
// round buffer (r-1) % 3, for the bytes round r-1 used. Writers into that buffer of rank p are:
//  (a) peers' round r-1 stores: p finished round r-1 only after it had seen every word of every peer's
//      round r-1 data in that buffer, so none of those stores is still in flight;
//  (b) peers' round r+2 stores (same buffer, (r+2) % 3 == (r-1) % 3): a peer q starts round r+2 only
//      after finishing round r+1, which needs p's round r+1 data (one-shot; for two-shot, p's round
//      r+2 scatter data or round r+1 gather data). p sends those in a later launch than round r's,
//      so p's re-arm stores precede them in stream order: a kernel's stores are performed before the
//      next kernel on the stream starts, hence before q can observe p's next data and answer with its
//      own stores. No fence is needed between re-arm stores and the next round's remote stores; the
//      kernel boundary is the fence.
// Two buffers would not do: during round r a fast peer that has seen p's round r data may already
// write round r+1 into buffer (r+1) % 2 == (r-1) % 2 while p is re-arming it.
// The round buffer r % 3 itself was re-armed during round r-2, in an earlier launch.
//
// ---- Round counters ------------------------------------------------------------------------------
// Each block reads its own PhaseControl entry (device_view.h) once at start (one thread, then a block
// barrier, so no warp can see the entry after another warp advanced it) and at its end writes its
// own entry and those of the block indices its launch does not have (up to the comm's grid cap). Graph replay re-runs the same
// kernels and they pick up the state on the device, so a captured call replays correctly.
//
// ---- Arithmetic -----------------------------------------------------------------------------------
// Every rank reduces the n contributions in rank order 0..n-1 in the dtype's own arithmetic (bf16 and
// fp16 with the packed half instructions, fp32 with round-to-nearest adds/multiplies that the
// compiler may not contract). Results are therefore bit-identical on every rank and match what a
// sequential reduction in that dtype gives; reducing half types in fp32 would round differently from
// NCCL's own half arithmetic. Cost: a -0.0 input counts as +0.0 (sum of only -0.0 gives +0.0;
// min/max see +0.0).
//
// ---- Bounded waits --------------------------------------------------------------------------------
// Every poll loop reads %globaltimer every kSpinsPerCheck iterations; past the deadline it stores
// kDevicePeerTimeout into the mapped host word, sets control->aborted (later launches exit at once)
// and the thread stops waiting; the kernel then runs to its end without further waits.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/device_view.h"

namespace symmem::kernels::device {

inline constexpr uint32_t kSpinsPerCheck = 256;

enum Op : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3 };  // core/collective.h values

// ---- memory access -------------------------------------------------------------------------------
__device__ __forceinline__ void storeRemote(char* p, uint4 v) {
  asm volatile("st.relaxed.sys.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}
__device__ __forceinline__ uint4 loadPolled(const char* p) {
  uint4 v;
  asm volatile("ld.relaxed.sys.global.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ uint64_t globalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ---- element types -------------------------------------------------------------------------------
template <typename T>
struct Elem;

template <>
struct Elem<float> {
  static constexpr int kPerVec = 4;
  __device__ static bool pending(uint32_t w) { return wordPending32(w); }
  __device__ static uint32_t clearNegZero(uint32_t w) { return clearNegZero32(w); }
  template <int OP>
  __device__ static uint32_t combine(uint32_t a, uint32_t b) {
    const float x = __uint_as_float(a), y = __uint_as_float(b);
    float r;
    if constexpr (OP == kSum) r = __fadd_rn(x, y);
    else if constexpr (OP == kProd) r = __fmul_rn(x, y);
    else if constexpr (OP == kMax) r = fmaxf(x, y);
    else r = fminf(x, y);
    return __float_as_uint(r);
  }
};

// Word <-> packed pair without taking addresses (which would put the values in local memory).
__device__ __forceinline__ __half2 pairFromWord(uint32_t w, __half2*) {
  return __halves2half2(__ushort_as_half(static_cast<unsigned short>(w & 0xffffu)),
                        __ushort_as_half(static_cast<unsigned short>(w >> 16)));
}
__device__ __forceinline__ uint32_t wordFromPair(__half2 h) {
  return static_cast<uint32_t>(__half_as_ushort(__low2half(h))) |
         (static_cast<uint32_t>(__half_as_ushort(__high2half(h))) << 16);
}
__device__ __forceinline__ __nv_bfloat162 pairFromWord(uint32_t w, __nv_bfloat162*) {
  return __halves2bfloat162(__ushort_as_bfloat16(static_cast<unsigned short>(w & 0xffffu)),
                            __ushort_as_bfloat16(static_cast<unsigned short>(w >> 16)));
}
__device__ __forceinline__ uint32_t wordFromPair(__nv_bfloat162 h) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(__low2bfloat16(h))) |
         (static_cast<uint32_t>(__bfloat16_as_ushort(__high2bfloat16(h))) << 16);
}

template <typename H2>
struct HalfOps {
  __device__ static H2 fromWord(uint32_t w) { return pairFromWord(w, static_cast<H2*>(nullptr)); }
  __device__ static uint32_t toWord(H2 h) { return wordFromPair(h); }
  template <int OP>
  __device__ static uint32_t combine(uint32_t a, uint32_t b) {
    const H2 x = fromWord(a), y = fromWord(b);
    H2 r;
    if constexpr (OP == kSum) r = __hadd2(x, y);
    else if constexpr (OP == kProd) r = __hmul2(x, y);
    else if constexpr (OP == kMax) r = __hmax2(x, y);
    else r = __hmin2(x, y);
    return toWord(r);
  }
};

template <>
struct Elem<__half> : HalfOps<__half2> {
  static constexpr int kPerVec = 8;
  __device__ static bool pending(uint32_t w) { return wordPending16(w); }
  __device__ static uint32_t clearNegZero(uint32_t w) { return clearNegZero16(w); }
};

template <>
struct Elem<__nv_bfloat16> : HalfOps<__nv_bfloat162> {
  static constexpr int kPerVec = 8;
  __device__ static bool pending(uint32_t w) { return wordPending16(w); }
  __device__ static uint32_t clearNegZero(uint32_t w) { return clearNegZero16(w); }
};

template <typename T>
__device__ __forceinline__ bool vecPending(const uint4& v) {
  return Elem<T>::pending(v.x) || Elem<T>::pending(v.y) || Elem<T>::pending(v.z) || Elem<T>::pending(v.w);
}
template <typename T>
__device__ __forceinline__ uint4 vecClearNegZero(uint4 v) {
  return make_uint4(Elem<T>::clearNegZero(v.x), Elem<T>::clearNegZero(v.y), Elem<T>::clearNegZero(v.z),
                    Elem<T>::clearNegZero(v.w));
}
template <typename T, int OP>
__device__ __forceinline__ uint4 vecCombine(const uint4& a, const uint4& b) {
  return make_uint4(Elem<T>::template combine<OP>(a.x, b.x), Elem<T>::template combine<OP>(a.y, b.y),
                    Elem<T>::template combine<OP>(a.z, b.z), Elem<T>::template combine<OP>(a.w, b.w));
}

// Elements [begin, begin + kPerVec) of `src` as one vector; elements at or past `end` read as +0.0.
// `aligned`: src is 16-byte aligned (begin is always a multiple of kPerVec). -0.0 becomes +0.0.
template <typename T>
__device__ __forceinline__ uint4 loadMessageVec(const T* src, size_t begin, size_t end, bool aligned) {
  constexpr int kPer = Elem<T>::kPerVec;
  uint4 r;
  if (aligned && begin + kPer <= end) {
    r = *reinterpret_cast<const uint4*>(src + begin);
  } else {
    uint32_t w[4] = {0u, 0u, 0u, 0u};
    if constexpr (sizeof(T) == 4) {
      const uint32_t* s = reinterpret_cast<const uint32_t*>(src);
#pragma unroll
      for (int i = 0; i < 4; ++i)
        if (begin + i < end) w[i] = s[begin + i];
    } else {
      const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
#pragma unroll
      for (int i = 0; i < 8; ++i)
        if (begin + i < end) w[i / 2] |= static_cast<uint32_t>(s[begin + i]) << (16 * (i % 2));
    }
    r = make_uint4(w[0], w[1], w[2], w[3]);
  }
  return vecClearNegZero<T>(r);
}

// Stores the elements of `v` that fall before `end` at dst[begin...].
template <typename T>
__device__ __forceinline__ void storeMessageVec(T* dst, size_t begin, size_t end, const uint4& v, bool aligned) {
  constexpr int kPer = Elem<T>::kPerVec;
  if (aligned && begin + kPer <= end) {
    *reinterpret_cast<uint4*>(dst + begin) = v;
    return;
  }
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  if constexpr (sizeof(T) == 4) {
    uint32_t* d = reinterpret_cast<uint32_t*>(dst);
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (begin + i < end) d[begin + i] = w[i];
  } else {
    uint16_t* d = reinterpret_cast<uint16_t*>(dst);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      if (begin + i < end) d[begin + i] = static_cast<uint16_t>(w[i / 2] >> (16 * (i % 2)));
  }
}

// ---- bounded waiting -----------------------------------------------------------------------------
struct Deadline {
  uint64_t limit = 0;
  uint32_t spins = 0;
  bool failed = false;
};

// Called once per unsuccessful poll round; false once this thread must stop waiting.
__device__ __forceinline__ bool keepWaiting(Deadline& d, const DeviceView& v, int waitedRank) {
  if ((++d.spins % kSpinsPerCheck) != 0) return true;
  if (*reinterpret_cast<volatile uint32_t*>(&v.control->aborted) != 0) {
    d.failed = true;
    return false;
  }
  const uint64_t now = globalTimerNs();
  if (d.limit == 0) {
    d.limit = now + v.timeoutNs;
    return true;
  }
  if (now < d.limit) return true;
  v.errorWord[1] = static_cast<uint32_t>(waitedRank);
  __threadfence_system();
  v.errorWord[0] = kDevicePeerTimeout;
  *reinterpret_cast<volatile uint32_t*>(&v.control->aborted) = 1u;
  d.failed = true;
  return false;
}

// Polls vector `at + q * slotStride` for every rank q in `pending` until none holds a -0.0 element;
// in[q] receives the data. Stops early (d.failed) on timeout.
template <typename T>
__device__ __forceinline__ void receiveVecs(const DeviceView& v, const char* at, size_t slotStride, uint32_t pending,
                                            uint4 (&in)[kMaxRanks], Deadline& d) {
  while (pending != 0u) {
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q) {
      if (pending & (1u << q)) {
        const uint4 x = loadPolled(at + static_cast<size_t>(q) * slotStride);
        if (!vecPending<T>(x)) {
          in[q] = x;
          pending &= ~(1u << q);
        }
      }
    }
    if (pending != 0u && !keepWaiting(d, v, __ffs(pending) - 1)) return;
  }
}

// in[q] for q != rank, `own` for q == rank, combined in rank order 0..n-1. Every index is a
// compile-time constant (the rank test is a select), so `in` stays in registers.
template <typename T, int OP>
__device__ __forceinline__ uint4 reduceInRankOrder(const uint4 (&in)[kMaxRanks], const uint4& own, int rank, int n) {
  uint4 acc = own;
#pragma unroll
  for (int q = 0; q < kMaxRanks; ++q) {
    if (q >= n) break;
    const bool mine = q == rank;
    uint4 x;
    x.x = mine ? own.x : in[q].x;
    x.y = mine ? own.y : in[q].y;
    x.z = mine ? own.z : in[q].z;
    x.w = mine ? own.w : in[q].w;
    acc = q == 0 ? x : vecCombine<T, OP>(acc, x);
  }
  return acc;
}

__device__ __forceinline__ uint32_t peerMask(int rank, int n) { return ((1u << n) - 1u) & ~(1u << rank); }

// Programmatic dependent launch (sm_90+): the next kernel on the stream may be scheduled while this
// one runs, and waits in griddepcontrol.wait until this one has completed and its memory is visible.
// So everything a kernel does comes after its wait, exactly as with plain stream order.
__device__ __forceinline__ void allowNextLaunch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void waitForPreviousKernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Block b's entry is read by one thread and shared through shared memory, behind a barrier: a warp
// may finish the whole call (its peers' data already there) and write the entry's next round in
// endLaunch while a slower warp of the same block has not read it yet; every warp must see the round
// of this launch. The barrier also gives every thread of the block the same `aborted`.
struct RoundState {
  uint64_t round;
  uint64_t rearmBytes;
  bool aborted;
};

__device__ __forceinline__ RoundState beginLaunch(const DeviceView& v, const BlockControl* ctl) {
  __shared__ RoundState shared;
  if (threadIdx.x == 0) {
    const BlockControl& mine = ctl[blockIdx.x];
    RoundState s;
    s.round = mine.round;
    const uint64_t d0 = mine.dirtyBytes[0], d1 = mine.dirtyBytes[1], d2 = mine.dirtyBytes[2];
    const int rb = rearmBuffer(s.round);
    s.rearmBytes = rb == 0 ? d0 : rb == 1 ? d1 : d2;
    s.aborted = *reinterpret_cast<volatile const uint32_t*>(&v.control->aborted) != 0;
    shared = s;
  }
  __syncthreads();
  return shared;
}

// Entries b, b + G, ... below gridCap (the largest grid any launch of this comm uses).
__device__ __forceinline__ void endLaunch(const DeviceView& v, BlockControl* ctl, uint64_t round, uint64_t usedBytes) {
  const int buf = roundBuffer(round), rb = rearmBuffer(round);
  for (unsigned j = blockIdx.x + threadIdx.x * gridDim.x; j < static_cast<unsigned>(v.gridCap);
       j += blockDim.x * gridDim.x) {
    ctl[j].dirtyBytes[rb] = 0;
    ctl[j].dirtyBytes[buf] = usedBytes;
    ctl[j].round = round + 1;
  }
}

// Re-arms, in this rank's own buffer, `bytes` of each slot of round buffer rb at `regionBase`
// (slots of stride slotBytes), except this rank's own slot, which no one writes.
__device__ __forceinline__ void rearmSlots(const DeviceView& v, size_t bufBase, size_t slotBytes, uint64_t bytes) {
  if (bytes == 0) return;
  const size_t vecs = bytes / kVecBytes;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const uint4 armed = make_uint4(kArmedWord, kArmedWord, kArmedWord, kArmedWord);
  for (int q = 0; q < v.nRanks; ++q) {
    if (q == v.rank) continue;
    char* slot = v.local + bufBase + static_cast<size_t>(q) * slotBytes;
    for (size_t i = first; i < vecs; i += stride) *reinterpret_cast<uint4*>(slot + i * kVecBytes) = armed;
  }
}

// ==================================================================================================
// One-shot all-reduce.
// Purpose:      all-reduce of a small message in one step: every rank pushes its whole input into its
//               slot in every peer's buffer, then reduces the n slots it received locally.
// Requires:     count * sizeof(T) <= layout.oneShotMaxBytes; every rank launches it with the same
//               count/dtype/op; all blocks of every rank's launch co-resident (grid <= kMaxGrid).
// Launch shape: launchShape(vectors of the message): one thread per 16-byte vector, one block up to
//               512 vectors (8 KiB), then more blocks, then several vectors per thread.
// Size range:   8 B to a few hundred KiB (traffic is (n-1) x message per rank; past that two-shot).
// ==================================================================================================
template <typename T, int OP>
__global__ void __launch_bounds__(kMaxThreads)
    oneShotAllReduce(const __grid_constant__ DeviceView v, const T* send, T* recv, size_t count) {
  allowNextLaunch();
  waitForPreviousKernel();
  constexpr int kPer = Elem<T>::kPerVec;
  const size_t nVec = vectorCount(count * sizeof(T));
  const bool inAligned = (reinterpret_cast<uintptr_t>(send) & 15u) == 0;
  const bool outAligned = (reinterpret_cast<uintptr_t>(recv) & 15u) == 0;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  // The first input vector and the round are loaded together (neither depends on the other).
  const uint4 firstIn = first < nVec ? loadMessageVec<T>(send, first * kPer, count, inAligned) : uint4{};
  BlockControl* ctl = v.control->oneShot;
  const RoundState st = beginLaunch(v, ctl);
  if (st.aborted) return;
  const int buf = roundBuffer(st.round);
  const size_t slotBytes = v.layout.oneShotSlotBytes;
  const size_t myOffset = oneShotSlotOffset(v.layout, buf, v.rank);

  // 1. Push: my input into my slot of round buffer `buf` in every peer's buffer.
  for (size_t i = first; i < nVec; i += stride) {
    const uint4 x = i == first ? firstIn : loadMessageVec<T>(send, i * kPer, count, inAligned);
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q)
      if (q < v.nRanks && q != v.rank) storeRemote(v.peer[q] + myOffset + i * kVecBytes, x);
  }

  // 2. Re-arm the previous round's slots while the peers' data is on its way.
  rearmSlots(v, oneShotSlotOffset(v.layout, rearmBuffer(st.round), 0), slotBytes, st.rearmBytes);

  // 3. Wait for every peer's vector, reduce in rank order, write the output.
  Deadline d;
  const char* bufBase = v.local + oneShotSlotOffset(v.layout, buf, 0);
  const uint32_t peers = peerMask(v.rank, v.nRanks);
  for (size_t i = first; i < nVec && !d.failed; i += stride) {
    uint4 in[kMaxRanks];
    receiveVecs<T>(v, bufBase + i * kVecBytes, slotBytes, peers, in, d);
    if (d.failed) break;
    const uint4 own = i == first ? firstIn : loadMessageVec<T>(send, i * kPer, count, inAligned);
    storeMessageVec<T>(recv, i * kPer, count, reduceInRankOrder<T, OP>(in, own, v.rank, v.nRanks), outAligned);
  }

  endLaunch(v, ctl, st.round, paddedBytes(count * sizeof(T)));
}

// ==================================================================================================
// Two-shot all-reduce.
// Purpose:      all-reduce of a mid-size message in two pushes: reduce-scatter (rank i pushes chunk j
//               of its input into its scatter slot in rank j's buffer; rank j reduces its chunk in rank
//               order), then all-gather (rank j pushes its reduced chunk into its gather slot in every
//               peer's buffer; everyone copies the chunks out).
// Requires:     count * sizeof(T) <= layout.twoShotMaxBytes; same count/dtype/op on every rank; all
//               blocks co-resident. Chunks: chunkBegin/chunkCount (symmetric_layout.h).
// Launch shape: launchShape(vectors of one chunk); thread t handles vector t of every chunk in all
//               three phases, so in place is safe without any grid-wide sync.
// Size range:   from where one-shot traffic ((n-1) x message) stops paying, up to several MiB.
// ==================================================================================================
template <typename T, int OP>
__global__ void __launch_bounds__(kMaxThreads)
    twoShotAllReduce(const __grid_constant__ DeviceView v, const T* send, T* recv, size_t count) {
  allowNextLaunch();
  waitForPreviousKernel();
  BlockControl* ctl = v.control->twoShot;
  const RoundState st = beginLaunch(v, ctl);
  if (st.aborted) return;

  constexpr int kPer = Elem<T>::kPerVec;
  const int n = v.nRanks, rank = v.rank;
  const int buf = roundBuffer(st.round), rb = rearmBuffer(st.round);
  const size_t chunk = chunkElems(count, sizeof(T), n);
  const size_t maxVec = vectorCount(chunk * sizeof(T));
  const bool inAligned = (reinterpret_cast<uintptr_t>(send) & 15u) == 0;
  const bool outAligned = (reinterpret_cast<uintptr_t>(recv) & 15u) == 0;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t slotBytes = v.layout.chunkSlotBytes;
  const size_t myScatter = scatterSlotOffset(v.layout, buf, rank);
  const size_t myGather = gatherSlotOffset(v.layout, buf, rank);
  const size_t myBegin = chunkBegin(count, sizeof(T), n, rank);
  const size_t myCount = chunkCount(count, sizeof(T), n, rank);

  // 1. Reduce-scatter push: chunk q of my input into my scatter slot in rank q's buffer.
  for (size_t i = first; i < maxVec; i += stride) {
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q) {
      if (q >= n || q == rank) continue;
      const size_t qCount = chunkCount(count, sizeof(T), n, q);
      if (i * kPer >= qCount) continue;
      const uint4 x = loadMessageVec<T>(send + chunkBegin(count, sizeof(T), n, q), i * kPer, qCount, inAligned);
      storeRemote(v.peer[q] + myScatter + i * kVecBytes, x);
    }
  }

  // 2. Re-arm the previous round's scatter and gather slots.
  rearmSlots(v, scatterSlotOffset(v.layout, rb, 0), slotBytes, st.rearmBytes);
  rearmSlots(v, gatherSlotOffset(v.layout, rb, 0), slotBytes, st.rearmBytes);

  Deadline d;
  const uint32_t peers = peerMask(rank, n);
  const char* scatterBase = v.local + scatterSlotOffset(v.layout, buf, 0);
  const char* gatherBase = v.local + gatherSlotOffset(v.layout, buf, 0);
  for (size_t i = first; i < maxVec && !d.failed; i += stride) {
    // 3. My chunk: wait for every peer's copy, reduce in rank order, keep, push to every peer.
    //    The reduced value is sent, so -0.0 (e.g. a product) becomes +0.0, here too, so that
    //    every rank holds the same bits.
    if (i * kPer < myCount) {
      uint4 in[kMaxRanks];
      receiveVecs<T>(v, scatterBase + i * kVecBytes, slotBytes, peers, in, d);
      if (d.failed) break;
      const uint4 own = loadMessageVec<T>(send + myBegin, i * kPer, myCount, inAligned);
      const uint4 r = vecClearNegZero<T>(reduceInRankOrder<T, OP>(in, own, rank, n));
#pragma unroll
      for (int q = 0; q < kMaxRanks; ++q)
        if (q < n && q != rank) storeRemote(v.peer[q] + myGather + i * kVecBytes, r);
      storeMessageVec<T>(recv + myBegin, i * kPer, myCount, r, outAligned);
    }
    // 4. The other chunks: wait for their owners' reduced vectors and copy them out.
    uint32_t expect = 0;
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q)
      if (q < n && q != rank && i * kPer < chunkCount(count, sizeof(T), n, q)) expect |= 1u << q;
    uint4 in[kMaxRanks];
    receiveVecs<T>(v, gatherBase + i * kVecBytes, slotBytes, expect, in, d);
    if (d.failed) break;
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q)
      if (expect & (1u << q))
        storeMessageVec<T>(recv + chunkBegin(count, sizeof(T), n, q), i * kPer, chunkCount(count, sizeof(T), n, q),
                           in[q], outAligned);
  }

  endLaunch(v, ctl, st.round, paddedBytes(chunk * sizeof(T)));
}

// ---- setup kernels -------------------------------------------------------------------------------
// Arms `words` 32-bit words at dst. Grid-stride; any shape.
__global__ void armKernel(uint32_t* dst, size_t words);
// Writes the P2P check pattern (kCheckBytes) through a peer mapping with the same stores as the
// all-reduce kernels. One block.
__global__ void checkPatternKernel(char* dst, int writer, int reader, uint32_t nonce);

}  // namespace symmem::kernels::device

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The arithmetic of the all-reduce: sum, prod, max, min of bf16, fp16 and fp32, on 16-byte vectors.
//
// Every rank reduces the n contributions in rank order 0..n-1. fp32: round-to-nearest adds and
// multiplies that the compiler may not contract. fp16/bf16 sums and products: accumulated in fp32
// (each element widened exactly, the same rank order, round-to-nearest fp32 steps) and rounded to the
// dtype once at the end, which is more accurate than rounding at every step (256 + 1 + 1 + 1 in bf16
// is 260, where per-step rounding gives 256). fp16/bf16 max and min are exact in any order and use
// the packed half instructions. One order, one rounding: results are bit-identical on every rank and
// in every variant. Inputs arrive sealed (flag_protocol.cuh), so a -0.0 input counts as +0.0: a sum of
// only -0.0 gives +0.0, and min/max see +0.0.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/collective.h"
#include "kernels/symmetric_layout.h"

namespace symmem::kernels::device {

// The kernels' template argument: ReduceOp's values as an int.
enum Op : int {
  kSum = static_cast<int>(ReduceOp::Sum),
  kProd = static_cast<int>(ReduceOp::Prod),
  kMax = static_cast<int>(ReduceOp::Max),
  kMin = static_cast<int>(ReduceOp::Min),
};

// One operation on one lane: a float, or a __half2 / __nv_bfloat162 pair (the packed instructions
// are overloaded for both pair types).
template <int OP, typename Lane>
__device__ __forceinline__ Lane applyOp(Lane x, Lane y) {
  constexpr bool kFp32 = std::is_same_v<Lane, float>;
  // One line per op: the fp32 instruction, then the packed-half one.
  // clang-format off
  if constexpr (OP == kSum) { if constexpr (kFp32) return __fadd_rn(x, y); else return __hadd2(x, y); }
  else if constexpr (OP == kProd) { if constexpr (kFp32) return __fmul_rn(x, y); else return __hmul2(x, y); }
  else if constexpr (OP == kMax) { if constexpr (kFp32) return fmaxf(x, y); else return __hmax2(x, y); }
  else { if constexpr (kFp32) return fminf(x, y); else return __hmin2(x, y); }
  // clang-format on
}

// The packed pair type of a 16-bit dtype.
template <typename T>
using PairOf = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;

// 32-bit word <-> packed pair (low half first) without taking addresses, which would put the values
// in local memory.
template <typename Pair>
__device__ __forceinline__ Pair pairFromWord(uint32_t w) {
  const unsigned short lo = static_cast<unsigned short>(w & 0xffffu), hi = static_cast<unsigned short>(w >> 16);
  if constexpr (std::is_same_v<Pair, __half2>)
    return __halves2half2(__ushort_as_half(lo), __ushort_as_half(hi));
  else
    return __halves2bfloat162(__ushort_as_bfloat16(lo), __ushort_as_bfloat16(hi));
}
template <typename Pair>
__device__ __forceinline__ uint32_t wordFromPair(Pair p) {
  uint32_t lo, hi;
  if constexpr (std::is_same_v<Pair, __half2>) {
    lo = __half_as_ushort(__low2half(p));
    hi = __half_as_ushort(__high2half(p));
  } else {
    lo = __bfloat16_as_ushort(__low2bfloat16(p));
    hi = __bfloat16_as_ushort(__high2bfloat16(p));
  }
  return lo | (hi << 16);
}

// OP on the elements of T in two 32-bit words.
template <typename T, int OP>
__device__ __forceinline__ uint32_t combineWord(uint32_t a, uint32_t b) {
  if constexpr (sizeof(T) == 4) {
    return __float_as_uint(applyOp<OP>(__uint_as_float(a), __uint_as_float(b)));
  } else {
    using Pair = PairOf<T>;
    return wordFromPair(applyOp<OP>(pairFromWord<Pair>(a), pairFromWord<Pair>(b)));
  }
}

template <typename T, int OP>
__device__ __forceinline__ uint4 combineVector(const uint4& a, const uint4& b) {
  return make_uint4(combineWord<T, OP>(a.x, b.x), combineWord<T, OP>(a.y, b.y), combineWord<T, OP>(a.z, b.z),
                    combineWord<T, OP>(a.w, b.w));
}

// The 16-bit element `bits` of T widened to fp32 (exact), and an fp32 value rounded to T's bits.
template <typename T>
__device__ __forceinline__ float widen(uint32_t bits) {
  if constexpr (std::is_same_v<T, __half>)
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
  else
    return __uint_as_float(bits << 16);
}
template <typename T>
__device__ __forceinline__ uint32_t narrow(float x) {
  if constexpr (std::is_same_v<T, __half>)
    return __half_as_ushort(__float2half_rn(x));
  else
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}

// Whether (T, OP) accumulates in fp32: 16-bit sums and products.
template <typename T, int OP>
inline constexpr bool kWideAccumulation = sizeof(T) == 2 && (OP == kSum || OP == kProd);

// The 8 elements of a 16-bit vector, widened.
template <typename T>
__device__ __forceinline__ void widenVector(const uint4& v, float (&out)[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = widen<T>(w[i] & 0xffffu);
    out[2 * i + 1] = widen<T>(w[i] >> 16);
  }
}

// in[q] for q != rank, `own` for q == rank, combined in rank order 0..n-1. Every index is a
// compile-time constant (the rank test is a select), so `in` stays in registers.
template <typename T, int OP>
__device__ __forceinline__ uint4 reduceInRankOrder(const uint4 (&in)[kMaxRanks], const uint4& own, int rank, int n) {
  if constexpr (kWideAccumulation<T, OP>) {
    float acc[8];
    widenVector<T>(rank == 0 ? own : in[0], acc);
#pragma unroll
    for (int q = 1; q < kMaxRanks; ++q) {
      if (q >= n) break;
      float x[8];
      widenVector<T>(q == rank ? own : in[q], x);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] = applyOp<OP>(acc[e], x[e]);
    }
    return make_uint4(narrow<T>(acc[0]) | (narrow<T>(acc[1]) << 16), narrow<T>(acc[2]) | (narrow<T>(acc[3]) << 16),
                      narrow<T>(acc[4]) | (narrow<T>(acc[5]) << 16), narrow<T>(acc[6]) | (narrow<T>(acc[7]) << 16));
  }
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
    acc = q == 0 ? x : combineVector<T, OP>(acc, x);
  }
  return acc;
}

}  // namespace symmem::kernels::device

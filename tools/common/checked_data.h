// SPDX-License-Identifier: Apache-2.0
#pragma once
// The data the measuring tools all-reduce, its element type, and its check: small integers (exact in
// bf16, fp16 and fp32, and so are their sums over up to 64 ranks), different on every rank and
// element, so a wrong slot, a missed peer or a stale round shows up as a wrong element.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/collective.h"
#include "tools/common/rank_rendezvous.h"

namespace symmem::harness {

// Element bytes: 2 (bf16 when `bf16`, else fp16) or 4 (fp32).
struct ElementFormat {
  size_t bytes = 2;
  bool bf16 = true;
};

// One measured element type as the data, NCCL and the symmetric kernels each name it.
struct ElementType {
  ElementFormat format;
  ncclDataType_t nccl = ncclBfloat16;
  DataType ours = DataType::Bfloat16;
};

// One of the measured types (cli_values.h's measuredType; anything else reads as bfloat16).
ElementType elementTypeOf(DataType type);

// Bits of `value` in the format (round to nearest even for bf16; fp16 exact for the small integers used).
uint32_t encodeElement(float value, ElementFormat format);

// Input element i of `rank`: an integer in [-8, 8].
float inputValue(int rank, size_t i);

// `count` elements of rank's input, packed in the format.
std::vector<char> makeInput(int rank, size_t count, ElementFormat format);

// Elements of an all-reduce (sum over nRanks ranks) result that differ from the exact sum (an fp32
// zero sum may come back as -0.0).
long long countWrongSum(const std::vector<char>& result, size_t count, int nRanks, ElementFormat format);

// One checked call: rank's input goes into `buffer` (count elements), every rank starts after the
// barrier, enqueueInPlace() issues one in-place all-reduce of `buffer` on `stream`, and the result
// is compared with the exact sum. Returns the wrong elements, or -1 when enqueueInPlace() refused.
long long countWrongAfterOneCall(int rank, int nRanks, RankBarrier& barrier, cudaStream_t stream, void* buffer,
                                 size_t count, ElementFormat format, const std::function<bool()>& enqueueInPlace);

}  // namespace symmem::harness

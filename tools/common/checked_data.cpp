// SPDX-License-Identifier: Apache-2.0
#include "tools/common/checked_data.h"

#include <cstring>

#include "tools/common/graph_timing.h"

namespace symmem::harness {

namespace {

uint16_t toHalfBits(float x, bool bf16) {
  uint32_t f;
  std::memcpy(&f, &x, 4);
  if (bf16) return static_cast<uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
  // fp16 for the small integers used here (exact): sign, rebias exponent, top mantissa bits.
  if (x == 0.0f) return static_cast<uint16_t>((f >> 16) & 0x8000u);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const int exp = static_cast<int>((f >> 23) & 0xffu) - 127 + 15;
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | ((f >> 13) & 0x3ffu));
}

}  // namespace

uint32_t encodeElement(float value, ElementFormat format) {
  if (format.bytes == 4) {
    uint32_t b;
    std::memcpy(&b, &value, 4);
    return b;
  }
  return toHalfBits(value, format.bf16);
}

ElementType elementTypeOf(DataType dtype) {
  const bool fp32 = dtype == DataType::Float32;
  const bool bf16 = !fp32 && dtype != DataType::Float16;
  ElementType type;
  type.format = ElementFormat{fp32 ? size_t{4} : size_t{2}, bf16};
  type.nccl = fp32 ? ncclFloat32 : bf16 ? ncclBfloat16 : ncclFloat16;
  type.ours = fp32 ? DataType::Float32 : bf16 ? DataType::Bfloat16 : DataType::Float16;
  return type;
}

float inputValue(int rank, size_t i) { return static_cast<float>(static_cast<int>((i * 7 + rank * 3) % 17) - 8); }

std::vector<char> makeInput(int rank, size_t count, ElementFormat format) {
  std::vector<char> raw(count * format.bytes);
  for (size_t i = 0; i < count; ++i) {
    const uint32_t b = encodeElement(inputValue(rank, i), format);
    std::memcpy(raw.data() + i * format.bytes, &b, format.bytes);
  }
  return raw;
}

long long countWrongSum(const std::vector<char>& result, size_t count, int nRanks, ElementFormat format) {
  long long wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    float want = 0.0f;
    for (int q = 0; q < nRanks; ++q) want += inputValue(q, i);
    uint32_t got = 0;
    std::memcpy(&got, result.data() + i * format.bytes, format.bytes);
    const uint32_t w = encodeElement(want == 0.0f ? 0.0f : want, format);
    if (got != w && !(want == 0.0f && (got & 0x7fffffffu) == 0)) ++wrong;
  }
  return wrong;
}

long long countWrongAfterOneCall(int rank, int nRanks, RankBarrier& barrier, cudaStream_t stream, void* buffer,
                                 size_t count, ElementFormat format, const std::function<bool()>& enqueueInPlace) {
  std::vector<char> data = makeInput(rank, count, format);
  // On the call's stream, waited for: a cudaMemcpy from pageable memory may return before its DMA has
  // landed, and nothing would order it before a call on a non-blocking stream.
  CUDA_CHECK(cudaMemcpyAsync(buffer, data.data(), data.size(), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  barrier.wait();
  if (!enqueueInPlace()) return -1;
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaMemcpy(data.data(), buffer, data.size(), cudaMemcpyDeviceToHost));
  return countWrongSum(data, count, nRanks, format);
}

}  // namespace symmem::harness

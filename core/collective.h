// SPDX-License-Identifier: Apache-2.0
#pragma once
// Plain values that describe one collective call. The numeric values are NCCL's own
// (ncclFunc_t, ncclRedOp_t, ncclDataType_t) so translating at the boundary is a cast plus a range check.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace symmem {

enum class Collective : int { Broadcast = 0, Reduce = 1, AllGather = 2, ReduceScatter = 3, AllReduce = 4 };
inline constexpr int kNumCollectives = 5;

enum class ReduceOp : int { Sum = 0, Prod = 1, Max = 2, Min = 3, Avg = 4, Other = 5 };

enum class DataType : int {
  Int8 = 0,
  Uint8 = 1,
  Int32 = 2,
  Uint32 = 3,
  Int64 = 4,
  Uint64 = 5,
  Float16 = 6,
  Float32 = 7,
  Float64 = 8,
  Bfloat16 = 9,
  Float8e4m3 = 10,
  Float8e5m2 = 11,
  Other = 12
};

std::string_view collectiveName(Collective c);
std::string_view reduceOpName(ReduceOp op);
std::string_view dataTypeName(DataType t);
size_t dataTypeSize(DataType t);  // 0 for Other

// The one vocabulary of element types: NCCL's names (what dataTypeName gives: half, float, bfloat16,
// double, int32, f8e4m3, ...) and the short ones users also type (fp16, fp32, bf16, fp64). Other for
// anything else.
DataType dataTypeFromName(std::string_view name);

// From NCCL's raw integers; anything out of range maps to Other (never an invalid enum value).
ReduceOp reduceOpFromNccl(int op);
DataType dataTypeFromNccl(int type);

}  // namespace symmem

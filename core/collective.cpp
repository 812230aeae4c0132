// SPDX-License-Identifier: Apache-2.0
#include "core/collective.h"

namespace symmem {

std::string_view collectiveName(Collective c) {
  switch (c) {
    case Collective::Broadcast:
      return "broadcast";
    case Collective::Reduce:
      return "reduce";
    case Collective::AllGather:
      return "allgather";
    case Collective::ReduceScatter:
      return "reducescatter";
    case Collective::AllReduce:
      return "allreduce";
  }
  return "unknown";
}

std::string_view reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Prod:
      return "prod";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::Other:
      return "other";
  }
  return "other";
}

std::string_view dataTypeName(DataType t) {
  switch (t) {
    case DataType::Int8:
      return "int8";
    case DataType::Uint8:
      return "uint8";
    case DataType::Int32:
      return "int32";
    case DataType::Uint32:
      return "uint32";
    case DataType::Int64:
      return "int64";
    case DataType::Uint64:
      return "uint64";
    case DataType::Float16:
      return "half";
    case DataType::Float32:
      return "float";
    case DataType::Float64:
      return "double";
    case DataType::Bfloat16:
      return "bfloat16";
    case DataType::Float8e4m3:
      return "f8e4m3";
    case DataType::Float8e5m2:
      return "f8e5m2";
    case DataType::Other:
      return "other";
  }
  return "other";
}

size_t dataTypeSize(DataType t) {
  switch (t) {
    case DataType::Int8:
    case DataType::Uint8:
    case DataType::Float8e4m3:
    case DataType::Float8e5m2:
      return 1;
    case DataType::Float16:
    case DataType::Bfloat16:
      return 2;
    case DataType::Int32:
    case DataType::Uint32:
    case DataType::Float32:
      return 4;
    case DataType::Int64:
    case DataType::Uint64:
    case DataType::Float64:
      return 8;
    case DataType::Other:
      return 0;
  }
  return 0;
}

DataType dataTypeFromName(std::string_view name) {
  for (int i = 0; i < static_cast<int>(DataType::Other); ++i)
    if (dataTypeName(static_cast<DataType>(i)) == name) return static_cast<DataType>(i);
  if (name == "fp16") return DataType::Float16;
  if (name == "fp32") return DataType::Float32;
  if (name == "bf16") return DataType::Bfloat16;
  if (name == "fp64") return DataType::Float64;
  return DataType::Other;
}

ReduceOp reduceOpFromNccl(int op) { return (op >= 0 && op <= 4) ? static_cast<ReduceOp>(op) : ReduceOp::Other; }

DataType dataTypeFromNccl(int type) {
  return (type >= 0 && type <= 11) ? static_cast<DataType>(type) : DataType::Other;
}

}  // namespace symmem

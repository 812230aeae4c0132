// SPDX-License-Identifier: Apache-2.0
// One vocabulary of element types: every NCCL name core gives reads back as its type, the short names
// users type are the same types, and nothing else is a type.
#include <gtest/gtest.h>

#include "core/collective.h"

namespace symmem {
namespace {

TEST(DataTypeNames, EveryNameReadsBackAsItsType) {
  for (int i = 0; i < static_cast<int>(DataType::Other); ++i) {
    const auto type = static_cast<DataType>(i);
    EXPECT_EQ(dataTypeFromName(dataTypeName(type)), type) << dataTypeName(type);
  }
}

TEST(DataTypeNames, TheShortNamesAreTheSameTypes) {
  EXPECT_EQ(dataTypeFromName("bf16"), DataType::Bfloat16);
  EXPECT_EQ(dataTypeFromName("fp16"), DataType::Float16);
  EXPECT_EQ(dataTypeFromName("fp32"), DataType::Float32);
  EXPECT_EQ(dataTypeFromName("fp64"), DataType::Float64);
  EXPECT_EQ(dataTypeFromName("half"), DataType::Float16);
  EXPECT_EQ(dataTypeFromName("float"), DataType::Float32);
}

TEST(DataTypeNames, AnythingElseIsNoType) {
  for (const char* name : {"", "other", "fp8", "BF16", "float ", "bfloat", "f32"})
    EXPECT_EQ(dataTypeFromName(name), DataType::Other) << "'" << name << "'";
}

}  // namespace
}  // namespace symmem

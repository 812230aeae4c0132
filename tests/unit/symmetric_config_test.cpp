// SPDX-License-Identifier: Apache-2.0
// SymmetricComm::create refuses a configuration it cannot run before it touches the GPU, on every
// rank alike: here rank 0 of two, whose peer's record is a copy of its own, on a machine with or
// without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "kernels/device_view.h"
#include "kernels/symmetric_comm.h"

namespace {

using symmem::kernels::SymmetricComm;
using symmem::kernels::SymmetricConfig;

// Rank 0's all-gather with a peer that says what rank 0 says.
bool mirroredGather(const void* send, void* recv, size_t bytes) {
  for (int r = 0; r < 2; ++r) std::memcpy(static_cast<char*>(recv) + r * bytes, send, bytes);
  return true;
}

SymmetricConfig rank0Of2() {
  SymmetricConfig c;
  c.rank = 0;
  c.nRanks = 2;
  c.oneShotMaxBytes = 4096;
  c.twoShotMaxBytes = 0;
  return c;
}

TEST(SymmetricConfig, UnknownCostSwitchesAreRefusedAndNamed) {
  SymmetricConfig c = rank0Of2();
  c.costSwitches = symmem::kernels::kKnownCostSwitches | (1u << 20);
  c.timeoutMs = 0;  // refused first for the switches, before this rule and before any GPU work
  std::string why;
  EXPECT_EQ(SymmetricComm::create(c, mirroredGather, &why), nullptr);
  EXPECT_NE(why.find("unknown cost switches 0x100000"), std::string::npos) << why;
}

// Every known switch passes the check: the configuration is refused for the next rule instead (a
// zero timeout, so that no GPU is touched where one is present).
TEST(SymmetricConfig, KnownCostSwitchesPassTheCheck) {
  SymmetricConfig c = rank0Of2();
  c.costSwitches = symmem::kernels::kKnownCostSwitches;
  c.timeoutMs = 0;
  std::string why;
  EXPECT_EQ(SymmetricComm::create(c, mirroredGather, &why), nullptr);
  EXPECT_NE(why.find("timeout must be positive"), std::string::npos) << why;
}

TEST(SymmetricConfig, ANonPositiveTimeoutIsRefused) {
  SymmetricConfig c = rank0Of2();
  c.timeoutMs = 0;
  std::string why;
  EXPECT_EQ(SymmetricComm::create(c, mirroredGather, &why), nullptr);
  EXPECT_NE(why.find("timeout must be positive"), std::string::npos) << why;
}

}  // namespace

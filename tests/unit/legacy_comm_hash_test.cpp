// SPDX-License-Identifier: Apache-2.0
// NCCL 2.27's communicator id read from its struct (plugin/nccl/legacy_comm_hash.h): on a buffer laid out
// as the 2.27 sources lay out struct ncclComm around the tuner's context slot.
#include "plugin/nccl/legacy_comm_hash.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace symmem {
namespace {

constexpr int kNccl2277 = 22707;

// A communicator struct as far as the reads go, with the context slot 16 KiB in.
struct FakeComm {
  std::vector<char> bytes = std::vector<char>(32 << 10, 0);
  void* slot() { return bytes.data() + (16 << 10); }
  template <typename T>
  void put(ptrdiff_t offset, T value) {
    std::memcpy(static_cast<char*>(slot()) + offset, &value, sizeof(T));
  }
  FakeComm(uint64_t hash, int rank, int nRanks, int nNodes) {
    const LegacyCommLayout* l = legacyCommLayout(kNccl2277);
    put(l->commHash, hash);
    put(l->rank, rank);
    put(l->nRanks, nRanks);
    put(l->nNodes, nNodes);
  }
};

class LegacyCommHash : public ::testing::Test {
 protected:
  void SetUp() override { resetLegacyCommHashForTests(); }
  void TearDown() override { resetLegacyCommHashForTests(); }
};

TEST_F(LegacyCommHash, KnownOnNccl227Only) {
  for (int v : {22703, 22705, 22706, 22707}) EXPECT_NE(legacyCommLayout(v), nullptr) << v;
  for (int v : {0, 22605, 22708, 22803, 22809, 23007}) EXPECT_EQ(legacyCommLayout(v), nullptr) << v;
  // The distances the 2.27 sources give (offsetof(struct ncclComm, X) - offsetof(..., tunerContext)).
  const LegacyCommLayout* l = legacyCommLayout(kNccl2277);
  EXPECT_EQ(l->commHash, -8336);
  EXPECT_EQ(l->nRanks - l->commHash, 12);  // uint64_t commHash; int rank; int nRanks;
}

TEST_F(LegacyCommHash, ReadsTheIdWhereTheFieldsBesideItHoldWhatTheInitWasHanded) {
  FakeComm comm(0x1234abcd5678ef01ull, 1, 4, 1);
  std::string why;
  EXPECT_EQ(legacyCommHash(comm.slot(), kNccl2277, 4, 1, &why), 0x1234abcd5678ef01ull) << why;
}

TEST_F(LegacyCommHash, RefusesWhatDoesNotFit) {
  std::string why;
  FakeComm comm(0x77, 1, 4, 1);
  EXPECT_FALSE(legacyCommHash(comm.slot(), 22809, 4, 1, &why));  // no layout for 2.28
  EXPECT_NE(why.find("no communicator layout"), std::string::npos) << why;
  EXPECT_FALSE(legacyCommHash(comm.slot(), kNccl2277, 8, 1, &why));  // another rank count
  EXPECT_NE(why.find("does not hold what its tuner was handed"), std::string::npos) << why;
  EXPECT_FALSE(legacyCommHash(comm.slot(), kNccl2277, 4, 2, &why));  // another node count
  EXPECT_FALSE(legacyCommHash(nullptr, kNccl2277, 4, 1, &why));
  FakeComm badRank(0x77, 4, 4, 1);
  EXPECT_FALSE(legacyCommHash(badRank.slot(), kNccl2277, 4, 1, &why));
  FakeComm zero(0, 0, 4, 1);
  EXPECT_FALSE(legacyCommHash(zero.slot(), kNccl2277, 4, 1, &why));
  EXPECT_NE(why.find("reads as 0"), std::string::npos) << why;
}

TEST_F(LegacyCommHash, OneDisagreementWithACreationCallGivesReadsUp) {
  FakeComm comm(0x99, 0, 2, 1);
  std::string why;
  crossCheckLegacyCommHash(0x99, 0x99);
  EXPECT_FALSE(legacyCommHashGivenUp());
  EXPECT_TRUE(legacyCommHash(comm.slot(), kNccl2277, 2, 1, &why));
  crossCheckLegacyCommHash(0x99, 0x98);
  EXPECT_TRUE(legacyCommHashGivenUp());
  EXPECT_FALSE(legacyCommHash(comm.slot(), kNccl2277, 2, 1, &why));
  EXPECT_NE(why.find("given up"), std::string::npos) << why;
}

}  // namespace
}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
// A tuner init that NCCL gave no id (NCCL 2.27 and older) claims the name of the one creation call
// under way that is its communicator's: on its own thread, or whose handle holds its context slot;
// none where none or several fit, and each name once.
#include "plugin/interpose/creation_calls.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>

#include "plugin/interpose/comm_tickets.h"

namespace {

using namespace symmem;

constexpr size_t kSlotOffset = 4096;
alignas(64) char gStructs[2][2 * kSlotOffset];

class CreationCalls : public ::testing::Test {
 protected:
  void SetUp() override { resetCreationCallsForTests(); }
  void TearDown() override { resetCreationCallsForTests(); }
  static const void* slotOf(int i, size_t offset = kSlotOffset) { return gStructs[i] + offset; }
  // The claim as NCCL's own thread makes it (InitRankConfig: NCCL runs the init off the caller's thread).
  static std::optional<CommName> claimElsewhere(const void* slot, size_t nRanks, std::string* why = nullptr) {
    std::optional<CommName> name;
    std::thread([&] { name = claimCreationForTunerInit(slot, nRanks, why); }).join();
    return name;
  }
};

// ncclCommInitRank outside a group: NCCL runs the init inline, before the handle is even of use.
TEST_F(CreationCalls, AnInitOnTheCallingThreadClaimsItsCall) {
  const void* handle = nullptr;
  const CreationUnderWay call({0x1234, NamedBy::UniqueId}, 4, &handle);
  const std::optional<CommName> name = claimCreationForTunerInit(slotOf(0), 4, nullptr);
  ASSERT_TRUE(name);
  EXPECT_EQ(name->identity, 0x1234u);
  std::string why;
  EXPECT_FALSE(claimCreationForTunerInit(slotOf(0), 4, &why)) << "a name is claimed once";
  EXPECT_NE(why.find("no creation call"), std::string::npos) << why;
}

// NCCL's thread claims the call whose handle holds the slot; another call under way stays its own.
TEST_F(CreationCalls, AnInitOnAnotherThreadClaimsTheCallWhoseCommunicatorHoldsItsSlot) {
  const void* first = gStructs[0];
  const void* second = gStructs[1];
  const CreationUnderWay a({0xa, NamedBy::UniqueId}, 2, &first);
  const CreationUnderWay b({0xb, NamedBy::UniqueId}, 2, &second);
  const std::optional<CommName> forSecond = claimElsewhere(slotOf(1), 2);
  ASSERT_TRUE(forSecond);
  EXPECT_EQ(forSecond->identity, 0xbu);
  const std::optional<CommName> forFirst = claimElsewhere(slotOf(0), 2);
  ASSERT_TRUE(forFirst);
  EXPECT_EQ(forFirst->identity, 0xau);
}

// The first claim by handle measures the slot's distance into the struct; a later one must match it.
TEST_F(CreationCalls, ASlotAtAnotherDistanceThanTheMeasuredOneIsNotClaimed) {
  const void* first = gStructs[0];
  const void* second = gStructs[1];
  {
    const CreationUnderWay a({0xa, NamedBy::UniqueId}, 2, &first);
    ASSERT_TRUE(claimElsewhere(slotOf(0), 2));
  }
  const CreationUnderWay b({0xb, NamedBy::UniqueId}, 2, &second);
  EXPECT_FALSE(claimElsewhere(slotOf(1, kSlotOffset - 64), 2));
  EXPECT_TRUE(claimElsewhere(slotOf(1), 2));
}

TEST_F(CreationCalls, NothingIsClaimedWhereNoneOrSeveralFit) {
  const void* handle = gStructs[0];
  std::string why;
  {
    const CreationUnderWay call({0xa, NamedBy::UniqueId}, 2, &handle);
    EXPECT_FALSE(claimElsewhere(slotOf(0), 4, &why)) << "another rank count";
    EXPECT_FALSE(claimElsewhere(gStructs[0] + kMaxContextSlotDistance + 8, 2)) << "beyond any struct";
    EXPECT_FALSE(claimElsewhere(gStructs[0] - 8, 2)) << "before the communicator";
  }
  EXPECT_FALSE(claimElsewhere(slotOf(0), 2)) << "the call has returned: its handle is no longer read";
  // Two splits under way on the claiming thread (no rank count, no handle yet): either could be it.
  const void* none = nullptr;
  const CreationUnderWay s1({0x51, NamedBy::Split}, -1, &none);
  const CreationUnderWay s2({0x52, NamedBy::Split}, -1, &none);
  EXPECT_FALSE(claimCreationForTunerInit(slotOf(0), 2, &why));
  EXPECT_NE(why.find("2 creation calls"), std::string::npos) << why;
}

// A call that names nothing (a split's NOCOLOR, a parent unknown) is not recorded.
TEST_F(CreationCalls, ACallWithoutANameIsNotRecorded) {
  const void* handle = nullptr;
  const CreationUnderWay call({0, NamedBy::Split}, -1, &handle);
  EXPECT_FALSE(claimCreationForTunerInit(slotOf(0), 2, nullptr));
}

}  // namespace

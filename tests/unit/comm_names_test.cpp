// SPDX-License-Identifier: Apache-2.0
// A communicator named by its creation call is found by the id NCCL gave its tuner, wherever its
// context slot lies; by the slot only where the names do not tell (none, or several with its id).
#include "plugin/interpose/comm_names.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "plugin/interpose/comm_tickets.h"

namespace {

using namespace symmem;

class CommNames : public ::testing::Test {
 protected:
  void SetUp() override {
    resetTicketsForTests();
    resetCommNamesForTests();
  }
  void TearDown() override {
    resetTicketsForTests();
    resetCommNamesForTests();
  }
  static std::shared_ptr<CommTicket> ticket(const void* slot, uint64_t commId) {
    auto t = std::make_shared<CommTicket>();
    t->contextSlot = slot;
    t->commId = commId;
    t->nRanks = 2;
    t->nNodes = 1;
    registerTicket(t);
    return t;
  }
};

// The context slot of the named communicator lies before it (no layout rule would find it): its id
// alone finds its ticket.
TEST_F(CommNames, ANamedCommunicatorIsFoundByItsIdNotItsSlot) {
  static char structs[2][256];
  const auto mine = ticket(structs[0] + 8, 0x1111);
  const auto other = ticket(structs[1] + 8, 0x2222);
  nameComm(structs[1] + 64, {0x1111, NamedBy::UniqueId});
  EXPECT_EQ(ticketFor(structs[1] + 64), mine);
  EXPECT_EQ(ticketFor(structs[0]), mine) << "an unnamed one is found by its slot, as before";
}

// Two live communicators with one id (a fixed NCCL_COMM_ID): the id cannot tell them apart, the
// nearest slot past each does.
TEST_F(CommNames, SeveralWithOneIdAreToldApartByTheirSlots) {
  static char structs[2][256];
  const auto a = ticket(structs[0] + 16, 0x7777);
  const auto b = ticket(structs[1] + 16, 0x7777);
  const auto c = ticket(structs[1] + 8, 0x9999);  // nearer past structs[1], but another communicator's id
  nameComm(structs[0], {0x7777, NamedBy::UniqueId});
  nameComm(structs[1], {0x7777, NamedBy::UniqueId});
  EXPECT_EQ(ticketFor(structs[1]), b) << "only the slots of communicators with its id are candidates";
  EXPECT_EQ(ticketFor(structs[0]), a);
  EXPECT_NE(ticketFor(structs[1]), c);
}

// One NCCL_COMM_ID gives communicators of two NCCL copies the same id: a name finds only its own
// copy's ticket, or one whose copy the tuner could not tell.
TEST_F(CommNames, ANameFindsOnlyItsOwnCopysTicket) {
  static char structs[3][256];
  const auto other = ticket(structs[0] + 8, 0x3131);
  other->copy = 1;
  nameComm(structs[1], {0x3131, NamedBy::UniqueId});
  EXPECT_EQ(ticketFor(structs[1], 0), nullptr) << "copy 1's ticket is not copy 0's communicator's";
  EXPECT_EQ(ticketFor(structs[1], 1), other) << "a communicator of copy 1 with that name finds it";
  const auto untold = ticket(structs[2] + 8, 0x4141);
  untold->copy = -1;
  nameComm(structs[2] + 64, {0x4141, NamedBy::UniqueId});
  EXPECT_EQ(ticketFor(structs[2] + 64, 0), untold) << "a ticket of a copy not told is found by its name";
  EXPECT_EQ(ticketFor(structs[2], 0), nullptr) << "but teaches no distance by its slot";
  static char more[2][256];
  const auto own = ticket(more[0] + 8, 0x5151);  // copy 0's: teaches 8
  EXPECT_EQ(ticketFor(more[0], 0), own);
  const auto late = ticket(more[1] + 8, 0x6161);
  late->copy = -1;
  EXPECT_EQ(ticketFor(more[1], 0), late) << "at the distance already learned, its slot is its own";
}

// A name that no tuner id matches (an NCCL that names communicators otherwise): the slot decides.
TEST_F(CommNames, ANameNoTunerIdMatchesFallsBackToTheSlot) {
  static char structs[1][256];
  const auto t = ticket(structs[0] + 32, 0x4242);
  nameComm(structs[0], {0x5353, NamedBy::Split});
  EXPECT_EQ(ticketFor(structs[0]), t);
}

// Children are counted as NCCL counts them: from 1, on every split; a failed split loses the count;
// a communicator destroyed is forgotten, and so is its count.
TEST_F(CommNames, ChildCountsFollowNccls) {
  static char parent[64];
  EXPECT_EQ(countChild(parent), 0) << "a parent made before the hooks is not counted by default";
  setUnseenParentsCountedFromTheirStart(true);
  EXPECT_EQ(countChild(parent), 1);
  EXPECT_EQ(countChild(parent), 2);
  loseChildCount(parent);
  EXPECT_EQ(countChild(parent), 0);
  forgetComm(parent);
  EXPECT_EQ(countChild(parent), 1) << "a new communicator at the same address counts afresh";
  nameComm(parent, {0xabc, NamedBy::UniqueId});
  EXPECT_EQ(countChild(parent), 1) << "naming is a new communicator";
  ASSERT_TRUE(commName(parent).has_value());
  EXPECT_EQ(commName(parent)->identity, 0xabcu);
  forgetComm(parent);
  EXPECT_FALSE(commName(parent).has_value());
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the tuner learned about each communicator at its init, for the interposer to find at the
// communicator's first all-reduce: the communicator's id (the same on every rank: NCCL's, tuner v5+;
// else the one its creation call gave it, plugin/interpose/creation_calls.h), NCCL's node count, and the
// communicator's agreement (plugin/interpose/rendezvous.h).
//
// The interposer holds an ncclComm_t, the tuner a context slot. A communicator the code hooks saw
// made has a name (plugin/interpose/comm_names.h): its ticket is the one live ticket with that id. Otherwise
// (the process's first communicator, one made by a call not hooked, several live with one id) the
// slot tells: NCCL hands its tuner init the address of a member of its communicator struct
// (&comm->tunerContext, NCCL 2.21 - 2.31 at least), so that address lies a fixed distance past the
// ncclComm_t. Structs never overlap, so the nearest slot past a communicator is its own; the first
// lookup learns the distance, and every later one must match it exactly (and the ticket's rank count
// the communicator's). The distance is a property of one NCCL build: with two NCCL copies in the
// process (plugin/interpose/nccl_copies.h) each copy's is learned from its own communicators, and a slot is
// looked for only among the tickets of the copy whose tuner init made them. A communicator without
// a ticket (NCCL did not load the plugin as its tuner, or an NCCL that breaks this rule) stays on
// NCCL, and so, through the agreement, do its peers.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "plugin/interpose/rendezvous.h"

namespace symmem {

struct CommTicket {
  const void* contextSlot = nullptr;  // the void** NCCL passed to the tuner's init
  // The NCCL copy whose tuner init made it (plugin/interpose/nccl_copies.h); -1 where that could not be told:
  // such a ticket is found by its communicator's name, or by its slot at a distance its copy's other
  // communicators already taught, never by teaching one.
  int copy = 0;
  uint64_t commId = 0;
  int nRanks = 0;
  int nNodes = 0;
  // Whether NCCL gave the tuner the id (tuner v5+, NCCL 2.28.3+), whose init runs before NCCL's
  // intra-node barrier: on one node every declaration is then in by a rank's first all-reduce. An id
  // from the creation call (NCCL 2.27 and older, whose init runs after that barrier) gives no such
  // promise: the agreement waits for every rank's declaration, until it is due (kLateDeclarationsDueMs).
  bool idFromNccl = false;
  std::shared_ptr<Rendezvous> rendezvous;  // null: this communicator stays on NCCL (whyNot)
  std::string whyNot;
};

// Registered at tuner init, retired at tuner finalize.
void registerTicket(std::shared_ptr<CommTicket> ticket);
void retireTicket(const void* contextSlot);

// The ticket of `comm`, a communicator of NCCL copy `copy` (see above), or null.
std::shared_ptr<CommTicket> ticketFor(const void* comm, int copy = 0);

// How far past a communicator its tuner context slot may lie: NCCL 2.28.9's is 1,075,712 bytes into a
// 1,082,968-byte struct.
inline constexpr size_t kMaxContextSlotDistance = 8u << 20;

// The tickets' lock, for the fork handlers alone (plugin/process/process.cpp): held by the forking thread across
// fork, so that a child never inherits it held mid-change.
std::mutex& commTicketsMutex();
// Forgets the learned distances and every ticket (tests).
void resetTicketsForTests();

}  // namespace symmem

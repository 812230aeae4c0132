// SPDX-License-Identifier: Apache-2.0
#pragma once
// Each communicator's name as the call that made it gives it (core/comm_identity.h), for the
// interposer to find the communicator's tuner ticket by what NCCL handed both: the creation call's
// arguments here, NCCL's id in the tuner's init (tuner v5). The code hooks take the creation calls
// (ncclCommInitRank, InitRankConfig, InitRankScalable, Split; Grow only to count the parent's
// children) once they are in; a communicator made before (the one whose tuner init put them in), by a
// call not hooked (ncclCommInitAll, Shrink, Grow: NCCL makes or combines their ids itself) or by a
// split inside a group (NCCL writes its handle only at the group's end) has no name here, and is found
// by its context slot (plugin/interpose/comm_tickets.h).
#include <cstdint>
#include <mutex>
#include <optional>

namespace symmem {

// Where a name came from, for the log.
enum class NamedBy { UniqueId, Split };

struct CommName {
  uint64_t identity = 0;
  NamedBy by = NamedBy::UniqueId;
};

// After a creation call returned ncclSuccess or ncclInProgress with `comm` set.
void nameComm(const void* comm, CommName name);
// The name of `comm`, if its creation was seen.
std::optional<CommName> commName(const void* comm);

// A split or grow of `parent` on this rank (every rank counts each, NOCOLOR ones too, as NCCL does):
// the parent's child count after this one, or 0 when it cannot be known (the parent was made before
// the hooks, and may have had children before they went in): its children then have no name here.
int countChild(const void* parent);
// After a split or grow of `parent` that failed: NCCL may or may not have counted it, so the parent's
// later children have no name here.
void loseChildCount(const void* parent) noexcept;
// Whether a parent whose creation was not seen was counted from its start all the same: true where
// the hooks went in at the process's first communicator, inside its creation (it can have had no
// children before), false (the default) where an earlier attempt was refused.
void setUnseenParentsCountedFromTheirStart(bool counted);

// At ncclCommDestroy / ncclCommAbort: the address may be reused by another communicator. Never throws.
void forgetComm(const void* comm) noexcept;

// The names' lock, for the fork handlers alone (plugin/process/process.cpp): held by the forking thread across
// fork, so that a child never inherits it held mid-change.
std::mutex& commNamesMutex();
void resetCommNamesForTests();

}  // namespace symmem

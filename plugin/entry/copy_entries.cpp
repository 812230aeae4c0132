// SPDX-License-Identifier: Apache-2.0
#include "plugin/entry/copy_entries.h"

namespace symmem::entry {

void nameCreated(ncclResult_t r, const ncclComm_t* newcomm, uint64_t identity, NamedBy by) noexcept {
  if ((r != ncclSuccess && r != ncclInProgress) || newcomm == nullptr || *newcomm == nullptr || identity == 0) return;
  try {
    nameComm(*newcomm, {identity, by});
  } catch (...) {
  }
}

uint64_t parentIdentity(ncclComm_t parent, int copy) {
  if (const std::optional<CommName> name = commName(parent)) return name->identity;
  const std::shared_ptr<CommTicket> ticket = ticketFor(parent, copy);
  return ticket ? ticket->commId : 0;
}

uint64_t splitChildIdentity(ncclComm_t comm, int color, int copy) {
  // Counted before the call, as NCCL counts it, on every rank (NOCOLOR ones too).
  int count = 0;
  uint64_t parent = 0;
  try {
    count = countChild(comm);
    parent = count > 0 ? parentIdentity(comm, copy) : 0;
  } catch (...) {
    count = 0;
  }
  const bool named = count > 0 && parent != 0 && color != NCCL_SPLIT_NOCOLOR;
  return named ? childCommIdentity(parent, count, color) : 0;
}

}  // namespace symmem::entry

// SPDX-License-Identifier: Apache-2.0
#include "plugin/interpose/comm_tickets.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <vector>

#include "core/log.h"
#include "plugin/interpose/comm_names.h"
#include "plugin/nccl/nccl_real.h"

namespace symmem {

namespace {

struct Tickets {
  std::mutex mutex;
  std::vector<std::shared_ptr<CommTicket>> live;
  // Learned once per NCCL copy: context slot minus communicator (-1: not yet).
  std::array<std::atomic<ptrdiff_t>, kMaxNcclCopies> distance{};
  Tickets() {
    for (auto& d : distance) d.store(-1);
  }
};

// Constructed on first use and never destroyed: tuner calls can come from NCCL's threads at exit.
Tickets& tickets() {
  static Tickets* t = new Tickets();
  return *t;
}

}  // namespace

std::mutex& commTicketsMutex() { return tickets().mutex; }

void registerTicket(std::shared_ptr<CommTicket> ticket) {
  Tickets& t = tickets();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.live.push_back(std::move(ticket));
}

void retireTicket(const void* contextSlot) {
  Tickets& t = tickets();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::erase_if(t.live, [&](const auto& k) { return k->contextSlot == contextSlot; });
}

namespace {

const char* namedByText(NamedBy by) { return by == NamedBy::Split ? "ncclCommSplit" : "its unique id"; }

// The one live ticket of NCCL copy `copy` (or of a copy not told) whose NCCL id is `identity`; null
// when none is or several are, `*several` saying which. Copies share no communicator, though one
// NCCL_COMM_ID can give both the same ids.
std::shared_ptr<CommTicket> onlyTicketWithId(const Tickets& t, uint64_t identity, int copy, bool* several) {
  std::shared_ptr<CommTicket> found;
  *several = false;
  for (const auto& k : t.live) {
    if (k->commId != identity || (k->copy != copy && k->copy >= 0)) continue;
    if (found) {
      *several = true;
      return nullptr;
    }
    found = k;
  }
  return found;
}

}  // namespace

std::shared_ptr<CommTicket> ticketFor(const void* comm, int copy) {
  const std::optional<CommName> name = commName(comm);
  Tickets& t = tickets();
  std::lock_guard<std::mutex> lock(t.mutex);
  // By what NCCL handed both: the creation call's arguments here, NCCL's id in the tuner's init.
  bool several = false;
  if (name && name->identity != 0) {
    if (std::shared_ptr<CommTicket> k = onlyTicketWithId(t, name->identity, copy, &several)) {
      SYMMEM_INFO(kLogInit, "comm %p: found by its creation call (the id from %s, 0x%llx, is NCCL's for it)", comm,
                  namedByText(name->by), static_cast<unsigned long long>(name->identity));
      return k;
    }
    if (!several) {
      const bool tunerHasIds = std::any_of(t.live.begin(), t.live.end(),
                                           [copy](const auto& k) { return k->commId != 0 && k->copy == copy; });
      if (tunerHasIds)
        SYMMEM_WARN_ONCE("comm-names:mismatch",
                         "comm %p: the id computed from its creation call (%s, 0x%llx) is not one NCCL gave its "
                         "tuner; this NCCL names communicators otherwise, and they are found by their context slot",
                         comm, namedByText(name->by), static_cast<unsigned long long>(name->identity));
    }
  }
  if (copy < 0 || copy >= kMaxNcclCopies) return nullptr;
  std::atomic<ptrdiff_t>& distance = t.distance[static_cast<size_t>(copy)];
  const auto base = reinterpret_cast<uintptr_t>(comm);
  const ptrdiff_t learned = distance.load(std::memory_order_relaxed);
  std::shared_ptr<CommTicket> nearest;
  ptrdiff_t nearestDistance = 0;
  for (const auto& k : t.live) {
    // Another NCCL copy's communicators lie at their own distance from their slots. A ticket whose
    // copy was not told may match only a distance already learned: a slot exactly there lies inside
    // this communicator's struct, so it is its own (structs never overlap).
    if (k->copy != copy && !(k->copy < 0 && learned >= 0)) continue;
    // Several live communicators with this one's id (a fixed NCCL_COMM_ID): only they are candidates.
    if (several && k->commId != name->identity) continue;
    const auto slot = reinterpret_cast<uintptr_t>(k->contextSlot);
    if (slot < base) continue;
    const auto d = static_cast<ptrdiff_t>(slot - base);
    if (learned >= 0 ? d == learned
                     : (static_cast<size_t>(d) < kMaxContextSlotDistance && (!nearest || d < nearestDistance))) {
      nearest = k;
      nearestDistance = d;
    }
  }
  // Structs never overlap, so another communicator's slot always lies farther past this one than this
  // one's own: the nearest is this communicator's whenever its tuner was initialised.
  if (nearest && learned < 0) distance.store(nearestDistance, std::memory_order_relaxed);
  return nearest;
}

void resetTicketsForTests() {
  Tickets& t = tickets();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.live.clear();
  for (auto& d : t.distance) d.store(-1);
}

}  // namespace symmem

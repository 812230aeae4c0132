// SPDX-License-Identifier: Apache-2.0
#include "plugin/comm_tickets.h"

#include <atomic>
#include <mutex>
#include <vector>

namespace symmem {

namespace {

struct Tickets {
  std::mutex mutex;
  std::vector<std::shared_ptr<CommTicket>> live;
  std::atomic<ptrdiff_t> distance{-1};  // learned once: context slot minus communicator
};

// Constructed on first use and never destroyed: tuner calls can come from NCCL's threads at exit.
Tickets& tickets() {
  static Tickets* t = new Tickets();
  return *t;
}

}  // namespace

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

std::shared_ptr<CommTicket> ticketFor(const void* comm) {
  Tickets& t = tickets();
  std::lock_guard<std::mutex> lock(t.mutex);
  const auto base = reinterpret_cast<uintptr_t>(comm);
  const ptrdiff_t learned = t.distance.load(std::memory_order_relaxed);
  std::shared_ptr<CommTicket> nearest;
  ptrdiff_t nearestDistance = 0;
  for (const auto& k : t.live) {
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
  if (nearest && learned < 0) t.distance.store(nearestDistance, std::memory_order_relaxed);
  return nearest;
}

void resetTicketsForTests() {
  Tickets& t = tickets();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.live.clear();
  t.distance.store(-1);
}

}  // namespace symmem

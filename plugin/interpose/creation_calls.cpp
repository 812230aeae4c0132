// SPDX-License-Identifier: Apache-2.0
#include "plugin/interpose/creation_calls.h"

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "plugin/interpose/comm_tickets.h"

namespace symmem {

namespace {

struct Record {
  uint64_t key = 0;
  CommName name;
  int nRanks = -1;
  const void* const* newcomm = nullptr;  // read only while the record lives: the caller's variable
  std::thread::id thread;
  bool claimed = false;
};

// More creation calls under way at once than any process makes (one per GPU and thread): the rest
// are not recorded.
constexpr size_t kMaxUnderWay = 256;

struct Calls {
  std::mutex mutex;
  std::vector<Record> underWay;
  uint64_t nextKey = 1;
  ptrdiff_t distance = -1;  // context slot minus communicator, once a claim measured it
};

// Never destroyed: creation calls can come from any thread at exit.
Calls& calls() {
  static Calls* c = new Calls();
  return *c;
}

}  // namespace

std::mutex& creationCallsMutex() { return calls().mutex; }

CreationUnderWay::CreationUnderWay(CommName name, int nRanks, const void* const* newcomm) noexcept {
  if (name.identity == 0) return;
  try {
    Calls& c = calls();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.underWay.size() >= kMaxUnderWay) return;
    key_ = c.nextKey++;
    c.underWay.push_back(Record{key_, name, nRanks, newcomm, std::this_thread::get_id(), false});
  } catch (...) {
    key_ = 0;
  }
}

CreationUnderWay::~CreationUnderWay() {
  if (key_ == 0) return;
  Calls& c = calls();
  std::lock_guard<std::mutex> lock(c.mutex);
  std::erase_if(c.underWay, [this](const Record& r) { return r.key == key_; });
}

std::optional<CommName> claimCreationForTunerInit(const void* contextSlot, size_t nRanks, std::string* whyNot) {
  Calls& c = calls();
  std::lock_guard<std::mutex> lock(c.mutex);
  const auto slot = reinterpret_cast<uintptr_t>(contextSlot);
  const std::thread::id self = std::this_thread::get_id();
  // Structs never overlap: of the communicators below the slot, the nearest is the one that holds it.
  Record* bySlot = nullptr;
  ptrdiff_t nearest = -1;
  Record* byThread = nullptr;
  int onThread = 0;
  for (Record& r : c.underWay) {
    if (r.claimed || (r.nRanks >= 0 && static_cast<size_t>(r.nRanks) != nRanks)) continue;
    // The caller's variable lives while its record does, and NCCL wrote it before this init ran.
    const auto comm = reinterpret_cast<uintptr_t>(r.newcomm ? *r.newcomm : nullptr);
    const ptrdiff_t d = comm != 0 && slot >= comm ? static_cast<ptrdiff_t>(slot - comm) : -1;
    if (d >= 0 && static_cast<size_t>(d) < kMaxContextSlotDistance && (c.distance < 0 || d == c.distance) &&
        (nearest < 0 || d < nearest)) {
      bySlot = &r;
      nearest = d;
    }
    if (r.thread == self) {
      byThread = &r;
      ++onThread;
    }
  }
  // One call fits: the one holding the slot (and, if any is on this thread, that one too), else the
  // only one on this thread.
  const bool agree = bySlot ? onThread == 0 || (onThread == 1 && byThread == bySlot) : onThread == 1;
  if (!agree) {
    const int fits = onThread + (bySlot && byThread != bySlot ? 1 : 0);
    if (whyNot)
      *whyNot = fits == 0 ? "no creation call under way seen by the plugin makes it (made inside a group, "
                            "non-blocking, by ncclCommInitAll, or before the plugin's code hooks went in)"
                          : std::to_string(fits) + " creation calls under way could each be the one that makes it";
    return std::nullopt;
  }
  Record* found = bySlot ? bySlot : byThread;
  const ptrdiff_t foundDistance = bySlot ? nearest : -1;
  found->claimed = true;
  if (foundDistance >= 0 && c.distance < 0) c.distance = foundDistance;
  return found->name;
}

void resetCreationCallsForTests() {
  Calls& c = calls();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.underWay.clear();
  c.distance = -1;
}

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// A writer of statistics slots for the tests, following the plugin's protocol (plugin/stats/call_stats.h):
// a slot is claimed under an odd `seq` (identity written, counters zeroed), published with an even
// one; counters grow by a relaxed load and store of one word; the GPU's entries are two 16-byte stores
// (count and sum, then min and max), as kernels/kernel_clock.cuh writes them.
#include <emmintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/call_stats_layout.h"

namespace symmem::testing {

struct SlotIdentity {
  stats::SlotState state = stats::SlotState::Live;
  int rank = 0, nRanks = 2, device = 0;
  uint64_t comm = 0;
  uint64_t openedNs = 0, closedNs = 0;
  bool symmetric = true;
  uint32_t gpuSampling = 1;  // CommSlot::gpuSampling: every execution timed
  std::string path = "symmetric (test)";
};

inline void storeWord(uint64_t* at, uint64_t v) { __atomic_store_n(at, v, __ATOMIC_RELAXED); }

inline void beginChange(stats::CommSlot* s) {
  __atomic_store_n(&s->seq, __atomic_load_n(&s->seq, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
  std::atomic_thread_fence(std::memory_order_release);
}

inline void endChange(stats::CommSlot* s) {
  __atomic_store_n(&s->seq, __atomic_load_n(&s->seq, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
}

// Claims `s` for a communicator: identity written, every counter set to `fill` (0 as the plugin does;
// the race tests fill them with a value derived from the identity), each GPU entry `fill` executions
// of `fill` ns (sum fill x fill: values possible together, which a reader checks).
inline void claimSlot(stats::CommSlot* s, const SlotIdentity& id, uint64_t fill = 0) {
  beginChange(s);
  __atomic_store_n(reinterpret_cast<uint32_t*>(&s->state), static_cast<uint32_t>(id.state), __ATOMIC_RELAXED);
  s->rank = id.rank;
  s->nRanks = id.nRanks;
  s->device = id.device;
  storeWord(&s->comm, id.comm);
  storeWord(&s->openedNs, id.openedNs);
  storeWord(&s->closedNs, id.closedNs);
  s->symmetric = id.symmetric ? 1 : 0;
  s->gpuSampling = id.gpuSampling;
  std::memset(s->path, 0, sizeof(s->path));
  std::memcpy(s->path, id.path.data(), std::min(id.path.size(), sizeof(s->path) - 1));
  for (auto& route : s->calls)
    for (auto& bucket : route)
      for (uint64_t& c : bucket) storeWord(&c, fill);
  for (uint64_t& runs : s->gpu.runs) storeWord(&runs, fill);
  for (auto& kind : s->gpu.timed)
    for (stats::KernelEntry& e : kind) {
      storeWord(&e.count, fill);
      storeWord(&e.sumNs, fill * fill);
      storeWord(&e.minNs, fill);
      storeWord(&e.maxNs, fill);
    }
  endChange(s);
}

// Marks `s` ended at `closedNs`, its counters kept.
inline void endSlot(stats::CommSlot* s, uint64_t closedNs) {
  beginChange(s);
  __atomic_store_n(reinterpret_cast<uint32_t*>(&s->state), static_cast<uint32_t>(stats::SlotState::Ended),
                   __ATOMIC_RELAXED);
  storeWord(&s->closedNs, closedNs);
  endChange(s);
}

inline void countCalls(stats::CommSlot* s, stats::Route r, uint64_t bytes, bool captured, uint64_t n = 1) {
  uint64_t* c = &s->calls[static_cast<int>(r)][stats::sizeBucket(bytes)][captured ? 1 : 0];
  __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

// An entry written in two 16-byte stores: {count, sum}, then {min, max}.
inline void storeKernelEntry(stats::KernelEntry* e, uint64_t count, uint64_t sumNs, uint64_t minNs, uint64_t maxNs) {
  volatile __m128i* to = reinterpret_cast<volatile __m128i*>(e);
  _mm_store_si128(const_cast<__m128i*>(to),
                  _mm_set_epi64x(static_cast<long long>(sumNs), static_cast<long long>(count)));
  std::atomic_thread_fence(std::memory_order_release);
  _mm_store_si128(const_cast<__m128i*>(to + 1),
                  _mm_set_epi64x(static_cast<long long>(maxNs), static_cast<long long>(minNs)));
}

}  // namespace symmem::testing

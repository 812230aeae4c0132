// SPDX-License-Identifier: Apache-2.0
#include "tools/common/rank_rendezvous.h"

#include <glob.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <new>
#include <thread>

namespace symmem::harness {

int countGpuDeviceNodes() {
  glob_t g{};
  int n = 0;
  if (glob("/dev/nvidia[0-9]*", 0, nullptr, &g) == 0) n = static_cast<int>(g.gl_pathc);
  globfree(&g);
  return n;
}

using Clock = std::chrono::steady_clock;

void* mapSharedBetweenRanks(size_t bytes) {
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return mem == MAP_FAILED ? nullptr : mem;
}

RankRendezvous* mapRendezvous() {
  void* mem = mapSharedBetweenRanks(sizeof(RankRendezvous));
  if (mem == nullptr) return nullptr;
  auto* rendezvous = new (mem) RankRendezvous();
  rendezvous->idReady.store(0);
  for (auto& a : rendezvous->arrived) a.store(0);
  return rendezvous;
}

bool exchangeUniqueId(RankRendezvous& rendezvous, int rank, const std::function<void(ncclUniqueId*)>& makeId,
                      ncclUniqueId* id) {
  if (rank == 0) {
    makeId(&rendezvous.id);
    rendezvous.idReady.store(1, std::memory_order_release);
  } else {
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (!rendezvous.idReady.load(std::memory_order_acquire)) {
      if (Clock::now() > deadline) {
        std::fprintf(stderr, "[rank %d] no ncclUniqueId from rank 0\n", rank);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  *id = rendezvous.id;
  return true;
}

bool RankBarrier::wait(int timeoutMs) {
  const uint64_t k = ++count_;
  rendezvous_->arrived[rank_].store(k, std::memory_order_release);
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  for (int q = 0; q < n_; ++q)
    while (rendezvous_->arrived[q].load(std::memory_order_acquire) < k) {
      if (Clock::now() > deadline) return false;
      std::this_thread::yield();
    }
  return true;
}

}  // namespace symmem::harness

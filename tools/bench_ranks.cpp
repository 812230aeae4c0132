// SPDX-License-Identifier: Apache-2.0
#include "tools/bench_ranks.h"

#include <glob.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <new>
#include <thread>
#include <vector>

namespace symmem::bench {

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

int runForkedRanks(int nRanks, const char* toolName, int timeoutSec, const std::function<int(int rank)>& rankBody,
                   bool stopAllOnFailure) {
  // Unflushed output would be written once by the parent and once more by every child.
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int r = 0; r < nRanks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      const int code = rankBody(r);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    pids.push_back(pid);
  }
  int worst = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(timeoutSec);
  std::vector<bool> done(nRanks, false);
  int remaining = nRanks;
  while (remaining > 0) {
    for (int r = 0; r < nRanks; ++r) {
      int st = 0;
      if (!done[r] && waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        done[r] = true;
        --remaining;
        const int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (code != 0) std::fprintf(stderr, "%s: rank %d exited with %d\n", toolName, r, code);
        worst = std::max(worst, code);
      }
    }
    if (remaining > 0 && stopAllOnFailure && worst != 0) {
      std::fprintf(stderr, "%s: stopping the other ranks\n", toolName);
      for (int r = 0; r < nRanks; ++r)
        if (!done[r]) kill(pids[r], SIGKILL), waitpid(pids[r], nullptr, 0);
      return worst;
    }
    if (remaining > 0 && Clock::now() > deadline) {
      std::fprintf(stderr, "%s: ranks still running after %d s, killed\n", toolName, timeoutSec);
      for (int r = 0; r < nRanks; ++r)
        if (!done[r]) kill(pids[r], SIGKILL), waitpid(pids[r], nullptr, 0);
      return 124;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return worst;
}

}  // namespace symmem::bench

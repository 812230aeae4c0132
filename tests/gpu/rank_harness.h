// SPDX-License-Identifier: Apache-2.0
#pragma once
// Multi-rank test harness: fork one process per rank before any CUDA call (the parent never
// initialises CUDA), a shared-memory all-gather for SymmetricComm::create, bounded waits everywhere.
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace symmem::testing {

// Number of CUDA devices, found by a forked child (this process stays CUDA-free); 0 with `why` set
// when there is no driver, no device node or the query fails. Cached after the first call.
int gpuCount(std::string* why = nullptr);

// Runs body(rank) in nRanks forked children. Each child's return value is its exit code (0 = pass).
// Children still running after timeoutSec are killed. Returns "" if every child exited 0, else what
// went wrong for each rank.
std::string runForked(int nRanks, int timeoutSec, const std::function<int(int rank)>& body);

// All-gather and barrier over shared memory, for processes forked after construction or for threads
// of one process. Every wait gives up after timeoutMs (returns false).
class ShmAllGather {
 public:
  ShmAllGather(int nRanks, size_t maxBytes, int timeoutMs = 60000);
  ~ShmAllGather();
  ShmAllGather(const ShmAllGather&) = delete;
  ShmAllGather& operator=(const ShmAllGather&) = delete;

  bool allGather(int rank, const void* send, void* recv, size_t bytes);
  bool barrier(int rank);
  int nRanks() const { return nRanks_; }

 private:
  struct Header {
    std::atomic<uint64_t> arrived[64];
    uint64_t calls[64];  // written only by that rank
  };
  int nRanks_;
  size_t maxBytes_;
  int timeoutMs_;
  size_t mapBytes_;
  Header* header_;
  char* data_;  // [2][nRanks][maxBytes]
};

// SYMMEM_TIMEOUT_MS as the settings registry reads it (kept out of the .cu files).
int64_t timeoutSettingMs();

// Failure reporting inside a child: prints and counts; the child returns the count as exit code.
struct RankFailures {
  int rank = 0;
  int count = 0;
  void fail(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
};

#define RANK_CHECK(f, cond, ...)        \
  do {                                  \
    if (!(cond)) (f).fail(__VA_ARGS__); \
  } while (0)

}  // namespace symmem::testing

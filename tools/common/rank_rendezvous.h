// SPDX-License-Identifier: Apache-2.0
#pragma once
// One process per GPU for the measuring tools (symmem-bench, symmem-tune): the parent forks the
// ranks before any CUDA or NCCL call (it makes none: a CUDA context does not survive fork), and the
// ranks meet through an anonymous shared mapping created before the fork: a barrier and the
// ncclUniqueId that rank 0 makes.
#include <nccl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "tools/common/forked_ranks.h"

namespace symmem::harness {

// Lives in memory shared by the parent and every forked rank.
struct RankRendezvous {
  std::atomic<int> idReady;
  ncclUniqueId id;
  std::atomic<uint64_t> arrived[kMaxForkedRanks];
};

// GPU device nodes the NVIDIA driver created (/dev/nvidia0, /dev/nvidia1, ...): a count that needs no
// CUDA call, so a parent that forks ranks can ask it first.
int countGpuDeviceNodes();

// Zero-filled memory shared with processes forked afterwards; nullptr if the mapping fails.
void* mapSharedBetweenRanks(size_t bytes);

// A fresh rendezvous in its own shared mapping; nullptr if the mapping fails.
RankRendezvous* mapRendezvous();

// Rank 0 calls makeId and publishes the id; the others wait for it (up to 60 s). False, after one
// "[rank r] no ncclUniqueId from rank 0" line on stderr, when it never comes.
bool exchangeUniqueId(RankRendezvous& rendezvous, int rank, const std::function<void(ncclUniqueId*)>& makeId,
                      ncclUniqueId* id);

// All ranks of one run wait here until each has arrived (or the timeout passes: then false).
class RankBarrier {
 public:
  RankBarrier(RankRendezvous* rendezvous, int rank, int nRanks) : rendezvous_(rendezvous), rank_(rank), n_(nRanks) {}
  bool wait(int timeoutMs = 120000);

 private:
  RankRendezvous* rendezvous_;
  int rank_, n_;
  uint64_t count_ = 0;
};

}  // namespace symmem::harness

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The creation calls under way, for the tuner's init on NCCL 2.27 and older (tuner v2-v4), which
// hands its init no communicator id: the name the creation call gives its communicator
// (plugin/interpose/comm_names.h) reaches that init here, so that its ranks can still find each other.
//
// NCCL runs the tuner's init inside the creation call: inline on the calling thread
// (ncclCommInitRank outside a group), or on a thread of NCCL's own while the caller waits
// (InitRankConfig, which NCCL wraps in a group of its own). A blocking creation's `*newcomm` is
// written before that init runs, and the caller's variable lives until the call returns. So an init
// claims the one creation under way that is on its own thread, or whose communicator holds the
// context slot NCCL hands the init (the slot lies within the struct: at the distance the first such
// claim measured, checked on NCCL 2.27.7). Where none or several fit (a creation inside a user's group
// or non-blocking, whose init runs after the call returned; ncclCommInitAll; the process's first
// communicator, made before the code hooks went in), the init claims nothing: that rank joins no
// agreement, and every rank of the communicator stays on NCCL together.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "plugin/interpose/comm_names.h"

namespace symmem {

// Lives for the duration of one creation call (the code hooks' entries). Never throws: where it cannot
// record the call, the call's communicator is left unclaimed.
class CreationUnderWay {
 public:
  // `nRanks` -1: not known before the call (a split). `newcomm`: the caller's handle variable.
  CreationUnderWay(CommName name, int nRanks, const void* const* newcomm) noexcept;
  ~CreationUnderWay();
  CreationUnderWay(const CreationUnderWay&) = delete;
  CreationUnderWay& operator=(const CreationUnderWay&) = delete;

 private:
  uint64_t key_ = 0;  // 0: not recorded
};

// From a tuner init that NCCL gave no id: the name of the creation under way that is this
// communicator's, claimed once; none, with `*whyNot`, where none or several fit.
std::optional<CommName> claimCreationForTunerInit(const void* contextSlot, size_t nRanks, std::string* whyNot);

// The records' lock, for the fork handlers alone (plugin/process/process.cpp): held by the forking thread across
// fork, so that a child never inherits it held mid-change.
std::mutex& creationCallsMutex();
// Forgets every record and the measured distance (tests).
void resetCreationCallsForTests();

}  // namespace symmem

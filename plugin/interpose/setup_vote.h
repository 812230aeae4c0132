// SPDX-License-Identifier: Apache-2.0
#pragma once
// The first exchange of a communicator's setup: every rank that has the plugin votes, whatever its
// own settings say, so that ranks launched with differing settings still post the same collectives
// and stay on NCCL together. A vote carries everything per process that shapes the symmetric path:
// SYMMEM_ENABLE and SYMMEM_SYMMETRIC, SYMMEM_FORCE, SYMMEM_P2P_CHECK, SYMMEM_TIMEOUT_MS,
// SYMMEM_TEST_SHARED_GPU and a fingerprint of the decision table. The tally is a pure function of the gathered votes,
// so every rank reaches the same outcome and names the same rank and setting.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "plugin/process/process_context.h"

namespace symmem {

struct SetupVote {
  uint32_t magic = 0;  // kVoteMagic: an all-zero record (a rank that could not vote) never matches
  uint32_t version = 0;
  int32_t wants = 0;  // SYMMEM_ENABLE=1 and SYMMEM_SYMMETRIC=1
  int32_t force = 0;
  int32_t p2pCheck = 0;
  int32_t sharedGpuTest = 0;  // SYMMEM_TEST_SHARED_GPU
  int32_t halves = 0;         // SYMMEM_HALVES (HalvesMode)
  int64_t timeoutMs = 0;
  uint64_t tableFingerprint = 0;
};

struct VoteOutcome {
  bool go = false;  // every rank wants the symmetric path with the same settings and table
  std::string why;  // why not (empty when go)
};

// This process's vote.
SetupVote voteOf(const ProcessContext& process);

// The outcome of one communicator's votes, in rank order.
VoteOutcome tallyVotes(const std::vector<SetupVote>& votes);

// The decisions a table makes, as one number (entries and bands; not its provenance lines).
uint64_t tableFingerprint(const DecisionTable& table);
// The same for one entry (what a communicator's tuner applies).
uint64_t entryFingerprint(const Thresholds& entry);

// The vote through `allGather` (every rank's record, in rank order; false: the exchange failed).
using VoteGatherFn = std::function<bool(const void* send, void* recv, size_t bytesPerRank)>;
VoteOutcome runSetupVote(const ProcessContext& process, int nRanks, const VoteGatherFn& allGather);

}  // namespace symmem

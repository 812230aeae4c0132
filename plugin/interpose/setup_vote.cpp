// SPDX-License-Identifier: Apache-2.0
#include "plugin/interpose/setup_vote.h"

#include "core/table_file.h"

namespace symmem {

namespace {

constexpr uint32_t kVoteMagic = 0x53594d56u;  // "SYMV"
constexpr uint32_t kVoteVersion = 3;

// FNV-1a, 64 bits: a fingerprint, not a defence against anyone.
uint64_t fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string onOff(int32_t v) { return v ? "on" : "off"; }

// What differs between rank 0's vote and rank r's, in words, or empty.
std::string difference(const SetupVote& ref, const SetupVote& v, size_t r) {
  const std::string ranks = "ranks 0 and " + std::to_string(r);
  if (v.magic != kVoteMagic || v.version != kVoteVersion)
    return "rank " + std::to_string(r) + " could not vote (setup failed there, or another plugin version)";
  if (v.wants != ref.wants)
    return ranks + " differ in SYMMEM_ENABLE/SYMMEM_SYMMETRIC (" + onOff(ref.wants) + " and " + onOff(v.wants) + ")";
  if (v.force != ref.force) return ranks + " differ in SYMMEM_FORCE";
  if (v.p2pCheck != ref.p2pCheck) return ranks + " differ in SYMMEM_P2P_CHECK";
  if (v.sharedGpuTest != ref.sharedGpuTest) return ranks + " differ in SYMMEM_TEST_SHARED_GPU";
  if (v.halves != ref.halves) return ranks + " differ in SYMMEM_HALVES";
  if (v.timeoutMs != ref.timeoutMs)
    return ranks + " differ in SYMMEM_TIMEOUT_MS (" + std::to_string(ref.timeoutMs) + " and " +
           std::to_string(v.timeoutMs) + ")";
  if (v.tableFingerprint != ref.tableFingerprint)
    return ranks +
           " use different decision tables (SYMMEM_TABLE, a table installed for one machine and not the other, or "
           "another plugin version)";
  return {};
}

}  // namespace

uint64_t tableFingerprint(const DecisionTable& table) { return fnv1a(formatTable(table.entries(), {})); }

uint64_t entryFingerprint(const Thresholds& entry) { return fnv1a(formatTable({entry}, {})); }

SetupVote voteOf(const ProcessContext& process) {
  SetupVote v;
  v.magic = kVoteMagic;
  v.version = kVoteVersion;
  v.wants = process.policy.enabled && process.policy.symmetric;
  v.force = static_cast<int32_t>(process.policy.force);
  v.p2pCheck = process.p2pCheck;
  v.sharedGpuTest = process.sharedGpuTest ? 1 : 0;
  v.halves = static_cast<int32_t>(process.halves);
  v.timeoutMs = process.timeoutMs;
  v.tableFingerprint = process.table ? tableFingerprint(*process.table) : 0;
  return v;
}

VoteOutcome tallyVotes(const std::vector<SetupVote>& votes) {
  if (votes.empty()) return {false, "no votes"};
  const SetupVote& ref = votes[0];
  if (ref.magic != kVoteMagic || ref.version != kVoteVersion)
    return {false, "rank 0 could not vote (setup failed there, or another plugin version)"};
  for (size_t r = 1; r < votes.size(); ++r) {
    std::string why = difference(ref, votes[r], r);
    if (!why.empty()) return {false, why + "; every rank stays on NCCL (launch every rank with the same environment)"};
  }
  if (!ref.wants) return {false, "SYMMEM_ENABLE=0 or SYMMEM_SYMMETRIC=0 on every rank"};
  return {true, {}};
}

VoteOutcome runSetupVote(const ProcessContext& process, int nRanks, const VoteGatherFn& allGather) {
  const SetupVote mine = voteOf(process);
  std::vector<SetupVote> votes(static_cast<size_t>(nRanks > 0 ? nRanks : 1));
  if (!allGather(&mine, votes.data(), sizeof(SetupVote))) return {false, "setup exchange failed"};
  return tallyVotes(votes);
}

}  // namespace symmem

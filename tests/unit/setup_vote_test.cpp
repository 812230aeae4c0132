// SPDX-License-Identifier: Apache-2.0
// The setup vote: every rank takes part whatever its settings, and ranks whose settings or tables
// differ all reach the same "stay on NCCL" with the same reason, without waiting for one another
// forever. Ranks here are threads joined by an all-gather over shared memory.
#include "plugin/interpose/setup_vote.h"

#include <gtest/gtest.h>

#include <barrier>
#include <cstring>
#include <thread>

#include "core/decision_table.h"

namespace symmem {
namespace {

ProcessContext contextWith(const DecisionTable& table) {
  ProcessContext c;
  c.table = &table;
  c.timeoutMs = 600000;
  c.p2pCheck = true;
  return c;
}

// An all-gather of `n` threads: each writes its record, waits for all, reads every record.
class ThreadGather {
 public:
  explicit ThreadGather(int n) : n_(n), sync_(n), records_(static_cast<size_t>(n) * 256) {}
  bool operator()(int rank, const void* send, void* recv, size_t bytes) {
    std::memcpy(records_.data() + static_cast<size_t>(rank) * bytes, send, bytes);
    sync_.arrive_and_wait();
    std::memcpy(recv, records_.data(), bytes * static_cast<size_t>(n_));
    sync_.arrive_and_wait();  // nobody writes the next exchange before everyone has read this one
    ++calls_[rank];
    return true;
  }
  int calls(int rank) const { return calls_[rank]; }

 private:
  int n_;
  std::barrier<> sync_;
  std::vector<char> records_;
  int calls_[8] = {};
};

// Two ranks with the given contexts vote; both outcomes.
std::pair<VoteOutcome, VoteOutcome> voteTwo(const ProcessContext& a, const ProcessContext& b, ThreadGather& gather) {
  VoteOutcome outA, outB;
  std::thread t0(
      [&] { outA = runSetupVote(a, 2, [&](const void* s, void* r, size_t n) { return gather(0, s, r, n); }); });
  std::thread t1(
      [&] { outB = runSetupVote(b, 2, [&](const void* s, void* r, size_t n) { return gather(1, s, r, n); }); });
  t0.join();
  t1.join();
  return {outA, outB};
}

TEST(SetupVote, SameSettingsGo) {
  const DecisionTable table = DecisionTable::builtIn();
  ThreadGather gather(2);
  const auto [a, b] = voteTwo(contextWith(table), contextWith(table), gather);
  EXPECT_TRUE(a.go) << a.why;
  EXPECT_TRUE(b.go) << b.why;
}

// Each setting that shapes setup, differing on rank 1 only: both ranks take part in the one exchange
// and both stay on NCCL, with the same reason naming the setting.
TEST(SetupVote, EachDifferingSettingKeepsEveryRankOnNcclTogether) {
  const DecisionTable table = DecisionTable::builtIn();
  DecisionTable other = DecisionTable::builtIn();
  Thresholds changed = other.entries().front();
  setPushLimits(changed, changed.oneShotMaxBytes + 16, changed.twoShotMaxBytes);
  other.set(changed);
  struct Case {
    const char* setting;
    std::function<void(ProcessContext&)> change;
  };
  const Case cases[] = {
      {"SYMMEM_ENABLE", [](ProcessContext& c) { c.policy.enabled = false; }},
      {"SYMMEM_SYMMETRIC", [](ProcessContext& c) { c.policy.symmetric = false; }},
      {"SYMMEM_FORCE", [](ProcessContext& c) { c.policy.force = ForcedPath::OneShot; }},
      {"SYMMEM_P2P_CHECK", [](ProcessContext& c) { c.p2pCheck = false; }},
      {"SYMMEM_TIMEOUT_MS", [](ProcessContext& c) { c.timeoutMs = 5000; }},
      {"decision tables", [&](ProcessContext& c) { c.table = &other; }},
  };
  for (const Case& c : cases) {
    ThreadGather gather(2);
    ProcessContext second = contextWith(table);
    c.change(second);
    const auto [a, b] = voteTwo(contextWith(table), second, gather);
    EXPECT_FALSE(a.go) << c.setting;
    EXPECT_FALSE(b.go) << c.setting;
    EXPECT_EQ(a.why, b.why) << c.setting;
    EXPECT_NE(a.why.find(c.setting), std::string::npos) << a.why;
    EXPECT_NE(a.why.find("ranks 0 and 1"), std::string::npos) << a.why;
    EXPECT_EQ(gather.calls(0), 1) << c.setting;
    EXPECT_EQ(gather.calls(1), 1) << c.setting << ": the rank with the path off votes too";
  }
}

TEST(SetupVote, EveryRankOffStaysOnNcclAndSaysWhy) {
  const DecisionTable table = DecisionTable::builtIn();
  ProcessContext off = contextWith(table);
  off.policy.enabled = false;
  ThreadGather gather(2);
  const auto [a, b] = voteTwo(off, off, gather);
  EXPECT_FALSE(a.go);
  EXPECT_FALSE(b.go);
  EXPECT_NE(a.why.find("on every rank"), std::string::npos) << a.why;
}

TEST(SetupVote, ARankThatCouldNotVoteIsNamed) {
  const DecisionTable table = DecisionTable::builtIn();
  std::vector<SetupVote> votes = {voteOf(contextWith(table)), SetupVote{}, voteOf(contextWith(table))};
  const VoteOutcome out = tallyVotes(votes);
  EXPECT_FALSE(out.go);
  EXPECT_NE(out.why.find("rank 1 could not vote"), std::string::npos) << out.why;
}

TEST(SetupVote, ProvenanceLinesDoNotChangeTheFingerprint) {
  DecisionTable a = DecisionTable::builtIn(), b = DecisionTable::builtIn();
  b.meta.push_back("measured elsewhere");
  EXPECT_EQ(tableFingerprint(a), tableFingerprint(b));
  Thresholds t = b.entries().back();
  setPushLimits(t, t.oneShotMaxBytes, t.twoShotMaxBytes + 4096);
  b.set(t);
  EXPECT_NE(tableFingerprint(a), tableFingerprint(b));
}

}  // namespace
}  // namespace symmem

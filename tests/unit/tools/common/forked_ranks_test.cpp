// SPDX-License-Identifier: Apache-2.0
// runForkedRanks when fork or waitpid fail: only children it started are ever signalled, the ones
// started are reaped, and the failure is named.
#include "tools/common/forked_ranks.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

namespace symmem::harness {
namespace {

// Real fork for the first `okForks` calls, then -1 with EAGAIN. kill and waitpid reach the system
// only for a pid above 0, so the test itself can never signal anything else; every pid asked
// for is recorded.
struct FakeCalls {
  int okForks = 0;
  int forks = 0;
  std::vector<pid_t> started, killed;
  bool waitFails = false;

  RankProcessCalls calls() {
    return {[this]() -> pid_t {
              if (forks++ >= okForks) {
                errno = EAGAIN;
                return -1;
              }
              const pid_t pid = ::fork();
              if (pid > 0) started.push_back(pid);
              return pid;
            },
            [this](pid_t pid, int* status, int options) -> pid_t {
              if (pid <= 0) return 0;  // as the system would answer with children still running
              if (waitFails && (options & WNOHANG)) {
                errno = ECHILD;
                return -1;
              }
              return ::waitpid(pid, status, options);
            },
            [this](pid_t pid, int signal) {
              killed.push_back(pid);
              return pid > 0 ? ::kill(pid, signal) : 0;
            }};
  }
};

bool reaped(pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) < 0 && errno == ECHILD; }

int sleepThenExit(int) {
  sleep(20);
  return 0;
}

TEST(ForkedRanks, FailedForkStopsOnlyTheStartedRanks) {
  FakeCalls fake;
  fake.okForks = 2;
  ::testing::internal::CaptureStderr();
  const int code = runForkedRanks(4, "tool", 2, sleepThenExit, true, fake.calls());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, kRanksNotRun);
  EXPECT_NE(err.find("tool: cannot start rank 2 of 4: fork failed: " + std::string(strerror(EAGAIN))),
            std::string::npos)
      << err;
  ASSERT_EQ(fake.started.size(), 2u);
  EXPECT_EQ(fake.killed, fake.started);
  for (pid_t pid : fake.killed) EXPECT_GT(pid, 0);
  for (pid_t pid : fake.started) EXPECT_TRUE(reaped(pid)) << pid;
}

TEST(ForkedRanks, FirstForkFailingSignalsNothing) {
  FakeCalls fake;
  ::testing::internal::CaptureStderr();
  const int code = runForkedRanks(2, "tool", 2, sleepThenExit, false, fake.calls());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, kRanksNotRun);
  EXPECT_NE(err.find("cannot start rank 0 of 2: fork failed"), std::string::npos) << err;
  EXPECT_TRUE(fake.killed.empty());
}

TEST(ForkedRanks, FailedWaitIsNamed) {
  FakeCalls fake;
  fake.okForks = 1;
  fake.waitFails = true;
  ::testing::internal::CaptureStderr();
  const int code = runForkedRanks(1, "tool", 2, sleepThenExit, false, fake.calls());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, kRanksNotRun);
  EXPECT_NE(err.find("cannot wait for rank 0"), std::string::npos) << err;
  EXPECT_NE(err.find("waitpid failed"), std::string::npos) << err;
  for (pid_t pid : fake.killed) EXPECT_GT(pid, 0);
  for (pid_t pid : fake.started) ::waitpid(pid, nullptr, 0);
}

TEST(ForkedRanks, WorstExitCodeOfRealRanks) {
  EXPECT_EQ(runForkedRanks(3, "tool", 30, [](int rank) { return rank; }), 2);
  EXPECT_EQ(runForkedRanks(2, "tool", 30, [](int) { return 0; }), 0);
}

}  // namespace
}  // namespace symmem::harness

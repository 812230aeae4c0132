// SPDX-License-Identifier: Apache-2.0
#include "tools/common/forked_ranks.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace symmem::harness {

namespace {

using Clock = std::chrono::steady_clock;

// The children of one run: pid > 0 for a started rank that has not been reaped yet.
class RankChildren {
 public:
  RankChildren(const RankProcessCalls& calls, const char* toolName) : calls_(calls), tool_(toolName) {}

  void add(pid_t pid) { pids_.push_back(pid); }
  int started() const { return static_cast<int>(pids_.size()); }
  bool running(int r) const { return pids_[r] > 0; }

  // Kills (SIGKILL) and reaps every started rank still running.
  void stopAll() {
    for (pid_t& pid : pids_) {
      if (pid <= 0) continue;
      calls_.kill(pid, SIGKILL);
      waitBlocking(pid);
      pid = 0;
    }
  }

  // One non-blocking look at rank r: true when it ended (its code in `code`, kRanksNotRun when it
  // could not be waited for).
  bool poll(int r, int& code) {
    int status = 0;
    const pid_t got = calls_.waitpid(pids_[r], &status, WNOHANG);
    if (got == 0 || (got < 0 && errno == EINTR)) return false;
    if (got < 0) {
      std::fprintf(stderr, "%s: cannot wait for rank %d (pid %d): waitpid failed: %s\n", tool_, r,
                   static_cast<int>(pids_[r]), std::strerror(errno));
      calls_.kill(pids_[r], SIGKILL);
      code = kRanksNotRun;
    } else {
      code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    pids_[r] = 0;
    return true;
  }

 private:
  void waitBlocking(pid_t pid) {
    while (calls_.waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }

  const RankProcessCalls& calls_;
  const char* tool_;
  std::vector<pid_t> pids_;
};

}  // namespace

RankProcessCalls systemRankProcessCalls() {
  return {[] { return ::fork(); }, [](pid_t pid, int* status, int options) { return ::waitpid(pid, status, options); },
          [](pid_t pid, int signal) { return ::kill(pid, signal); }};
}

int runForkedRanks(int nRanks, const char* toolName, int timeoutSec, const std::function<int(int rank)>& rankBody,
                   bool stopAllOnFailure, const RankProcessCalls& calls) {
  // Unflushed output would be written once by the parent and once more by every child.
  std::fflush(stdout);
  std::fflush(stderr);
  RankChildren children(calls, toolName);
  for (int r = 0; r < nRanks; ++r) {
    const pid_t pid = calls.fork();
    if (pid == 0) {
      const int code = rankBody(r);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    if (pid < 0) {
      const int err = errno;
      std::fprintf(stderr, "%s: cannot start rank %d of %d: fork failed: %s\n", toolName, r, nRanks,
                   std::strerror(err));
      if (children.started() > 0)
        std::fprintf(stderr, "%s: stopping the %d rank(s) already started\n", toolName, children.started());
      children.stopAll();
      return kRanksNotRun;
    }
    children.add(pid);
  }
  int worst = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(timeoutSec);
  int remaining = nRanks;
  while (remaining > 0) {
    for (int r = 0; r < nRanks; ++r) {
      int code = 0;
      if (!children.running(r) || !children.poll(r, code)) continue;
      --remaining;
      if (code != 0 && code != kRanksNotRun) std::fprintf(stderr, "%s: rank %d exited with %d\n", toolName, r, code);
      worst = std::max(worst, code);
    }
    if (remaining > 0 && stopAllOnFailure && worst != 0) {
      std::fprintf(stderr, "%s: stopping the other ranks\n", toolName);
      children.stopAll();
      return worst;
    }
    if (remaining > 0 && Clock::now() > deadline) {
      std::fprintf(stderr, "%s: ranks still running after %d s, killed\n", toolName, timeoutSec);
      children.stopAll();
      return 124;
    }
    if (remaining > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return worst;
}

}  // namespace symmem::harness

// SPDX-License-Identifier: Apache-2.0
#pragma once
// One process per rank for the measuring tools: fork them, wait for them, stop them. Only ever a
// child this call started is signalled (a pid above 0): fork's -1 kept as a pid would make
// kill(-1, SIGKILL) end every process of the user.
#include <sys/types.h>

#include <functional>

namespace symmem::harness {

// The most ranks the measuring tools fork (the size of their shared rendezvous).
inline constexpr int kMaxForkedRanks = 64;

// Exit code of runForkedRanks when the ranks could not all be started or waited for (the reason is
// on stderr, with the errno text). Distinct from a rank's own codes and from 124 (timeout).
inline constexpr int kRanksNotRun = 125;

// The process calls runForkedRanks makes, replaceable so tests can make fork or waitpid fail.
struct RankProcessCalls {
  std::function<pid_t()> fork;
  std::function<pid_t(pid_t, int*, int)> waitpid;
  std::function<int(pid_t, int)> kill;
};
RankProcessCalls systemRankProcessCalls();

// Forks nRanks processes, each running rankBody(rank) and exiting with its return value, then waits
// for all of them. Returns the worst exit code (a signal counts as 128 + signal); a rank that exits
// non-zero is named on stderr ("<tool>: rank 3 exited with 5"). After timeoutSec the ranks still
// running are killed and 124 is returned. With stopAllOnFailure, the first rank that fails makes the
// parent kill the others at once (they would otherwise wait for it in a collective until the timeout).
// When a fork fails, the ranks already started are killed and reaped, one line names the failure
// ("<tool>: cannot start rank 2 of 4: fork failed: Resource temporarily unavailable") and
// kRanksNotRun is returned; a waitpid failure is named the same way.
int runForkedRanks(int nRanks, const char* toolName, int timeoutSec, const std::function<int(int rank)>& rankBody,
                   bool stopAllOnFailure = false, const RankProcessCalls& calls = systemRankProcessCalls());

}  // namespace symmem::harness

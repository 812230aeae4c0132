// SPDX-License-Identifier: Apache-2.0
#include "tools/common/stats_check.h"

#include <cinttypes>
#include <cstdio>

namespace symmem {

namespace {

using stats::Route;

uint64_t captured(const stats::SlotSnapshot& s, Route r) {
  uint64_t n = 0;
  for (int b = 0; b < stats::kBuckets; ++b) n += s.calls[static_cast<int>(r)][b][stats::kCaptured];
  return n;
}

std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), fmt, args...);
  return buf;
}

}  // namespace

int checkExitCode(CheckVerdict verdict) {
  switch (verdict) {
    case CheckVerdict::Pass:
      return 0;
    case CheckVerdict::Fail:
      return 3;
    case CheckVerdict::Nothing:
      return 4;
  }
  return 4;
}

StatsCheck checkCapturedPaths(const std::vector<stats::ProcessSnapshot>& processes) {
  StatsCheck out;
  int judged = 0, failed = 0;
  for (const stats::ProcessSnapshot& p : processes) {
    for (const stats::SlotSnapshot& s : p.comms) {
      if (s.state != stats::SlotState::Live || s.nRanks < 2) continue;
      uint64_t symmetric = 0;
      for (int k = 0; k < stats::kKernelKinds; ++k) symmetric += captured(s, static_cast<Route>(k));
      const uint64_t byTable = captured(s, Route::NcclTuned) + captured(s, Route::NcclTable);
      const uint64_t byType = captured(s, Route::NcclTypeOrOp) + captured(s, Route::NcclConfig);
      const uint64_t beforeSetup = captured(s, Route::NcclBeforeSetup);
      const uint64_t pathOff = captured(s, Route::NcclPathOff);
      const uint64_t declined = captured(s, Route::NcclKernelDeclined);
      const uint64_t failedCalls = captured(s, Route::Failed);
      const uint64_t total = symmetric + byTable + byType + beforeSetup + pathOff + declined + failedCalls;
      if (total == 0) continue;
      ++judged;
      const std::string who = format("pid %d (%s) comm 0x%" PRIx64 " rank %d/%d", static_cast<int>(p.pid),
                                     p.program.c_str(), s.comm, s.rank, s.nRanks);
      std::string line = who + format(": %" PRIu64 " captured all-reduces, %" PRIu64 " symmetric", total, symmetric);
      if (byTable) line += format(", %" PRIu64 " on NCCL by the table (sizes it leaves to NCCL)", byTable);
      if (byType) line += format(", %" PRIu64 " on NCCL by type, operation or configuration", byType);
      if (declined) line += format(", %" PRIu64 " larger than the kernels' buffers", declined);
      const bool bad = beforeSetup != 0 || pathOff != 0 || failedCalls != 0;
      out.lines.push_back((bad ? "FAIL " : "ok   ") + line);
      if (beforeSetup)
        out.lines.push_back(
            format("     %" PRIu64
                   " captured before the communicator was set up (its first eager all-reduce): those graphs keep "
                   "NCCL's all-reduce for as long as they live; capture after one eager all-reduce (a warm-up)",
                   beforeSetup));
      if (pathOff)
        out.lines.push_back(
            format("     %" PRIu64 " on NCCL because the symmetric path is off: %s", pathOff, s.path.c_str()));
      if (failedCalls)
        out.lines.push_back(
            format("     %" PRIu64 " failed on the symmetric path (a peer's timeout, a CUDA error)", failedCalls));
      failed += bad;
    }
  }
  if (judged == 0) {
    out.verdict = CheckVerdict::Nothing;
    out.lines.push_back(
        "nothing to check yet: no communicator of two or more ranks has captured an all-reduce (is the server up, "
        "and has it captured its CUDA graphs?)");
  } else if (failed != 0) {
    out.verdict = CheckVerdict::Fail;
    out.lines.push_back(
        format("FAIL: %d of %d communicators have captured all-reduces on NCCL (above)", failed, judged));
  } else {
    out.verdict = CheckVerdict::Pass;
    out.lines.push_back(
        format("ok: every captured all-reduce of %d communicator(s) takes the path the table gives it", judged));
  }
  return out;
}

}  // namespace symmem

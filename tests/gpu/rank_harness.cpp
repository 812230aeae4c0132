// SPDX-License-Identifier: Apache-2.0
#include "tests/gpu/rank_harness.h"

#include <cuda_runtime_api.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstring>
#include <thread>
#include <vector>

#include "core/settings.h"
#include "plugin/process/process.h"
#include "tools/common/rank_rendezvous.h"

namespace symmem::testing {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

int gpuCount(std::string* why) {
  static int cached = -1;
  static std::string cachedWhy;
  if (cached < 0) {
    cached = 0;
    if (harness::countGpuDeviceNodes() == 0) {
      cachedWhy = "no /dev/nvidia[0-9]* device nodes";
    } else {
      int fds[2];
      if (pipe(fds) != 0) {
        cachedWhy = "pipe failed";
      } else {
        const pid_t pid = fork();
        if (pid == 0) {
          close(fds[0]);
          int count = 0;
          if (cudaGetDeviceCount(&count) != cudaSuccess) count = -1;
          (void)!write(fds[1], &count, sizeof(count));
          _exit(0);
        }
        close(fds[1]);
        int count = -1;
        pollfd pfd{fds[0], POLLIN, 0};
        if (pid > 0 && poll(&pfd, 1, 60000) == 1 && read(fds[0], &count, sizeof(count)) == sizeof(count)) {
          cached = count < 0 ? 0 : count;
          if (count < 0) cachedWhy = "cudaGetDeviceCount failed (no usable driver)";
        } else {
          cachedWhy = "the device query child did not answer";
          if (pid > 0) kill(pid, SIGKILL);
        }
        if (pid > 0) waitpid(pid, nullptr, 0);
        close(fds[0]);
      }
    }
  }
  if (why != nullptr) *why = cachedWhy;
  return cached;
}

std::string runForked(int nRanks, int timeoutSec, const std::function<int(int rank)>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids(nRanks, -1);
  for (int r = 0; r < nRanks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      int code = 1;
      try {
        code = body(r);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "[rank %d] exception: %s\n", r, e.what());
        code = 1;
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code > 255 ? 255 : code);
    }
    pids[r] = pid;
  }
  std::vector<int> status(nRanks, -1);
  std::vector<bool> done(nRanks, false);
  const auto deadline = Clock::now() + std::chrono::seconds(timeoutSec);
  int remaining = nRanks;
  bool timedOut = false;
  while (remaining > 0) {
    for (int r = 0; r < nRanks; ++r) {
      if (done[r] || pids[r] <= 0) {
        if (!done[r]) done[r] = true, --remaining;
        continue;
      }
      int st = 0;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        status[r] = st;
        done[r] = true;
        --remaining;
      }
    }
    if (remaining == 0) break;
    if (Clock::now() > deadline) {
      timedOut = true;
      for (int r = 0; r < nRanks; ++r)
        if (!done[r] && pids[r] > 0) kill(pids[r], SIGKILL);
      for (int r = 0; r < nRanks; ++r) {
        if (!done[r] && pids[r] > 0) {
          int st = 0;
          waitpid(pids[r], &st, 0);
          status[r] = -2;
          done[r] = true;
        }
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string report;
  for (int r = 0; r < nRanks; ++r) {
    const int st = status[r];
    if (pids[r] <= 0)
      report += "rank " + std::to_string(r) + ": fork failed; ";
    else if (st == -2)
      report += "rank " + std::to_string(r) + ": killed after " + std::to_string(timeoutSec) + " s; ";
    else if (WIFSIGNALED(st))
      report += "rank " + std::to_string(r) + ": signal " + std::to_string(WTERMSIG(st)) + "; ";
    else if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
      report += "rank " + std::to_string(r) + ": " + std::to_string(WEXITSTATUS(st)) + " failure(s); ";
  }
  (void)timedOut;
  return report;
}

ShmAllGather::ShmAllGather(int nRanks, size_t maxBytes, int timeoutMs)
    : nRanks_(nRanks), maxBytes_(maxBytes), timeoutMs_(timeoutMs) {
  mapBytes_ = sizeof(Header) + 2 * static_cast<size_t>(nRanks) * maxBytes;
  void* p = mmap(nullptr, mapBytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
  header_ = new (p) Header();
  for (int r = 0; r < 64; ++r) {
    header_->arrived[r].store(0);
    header_->calls[r] = 0;
  }
  data_ = static_cast<char*>(p) + sizeof(Header);
}

ShmAllGather::~ShmAllGather() { munmap(header_, mapBytes_); }

bool ShmAllGather::allGather(int rank, const void* send, void* recv, size_t bytes) {
  if (bytes > maxBytes_ || rank < 0 || rank >= nRanks_) return false;
  const uint64_t call = ++header_->calls[rank];
  const size_t half = static_cast<size_t>(nRanks_) * maxBytes_;
  char* base = data_ + (call % 2) * half;
  std::memcpy(base + rank * maxBytes_, send, bytes);
  header_->arrived[rank].store(call, std::memory_order_release);
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs_);
  for (int q = 0; q < nRanks_; ++q) {
    while (header_->arrived[q].load(std::memory_order_acquire) < call) {
      if (Clock::now() > deadline) return false;
      std::this_thread::yield();
    }
  }
  for (int q = 0; q < nRanks_; ++q) std::memcpy(static_cast<char*>(recv) + q * bytes, base + q * maxBytes_, bytes);
  return true;
}

bool ShmAllGather::barrier(int rank) {
  char none = 0;
  std::vector<char> all(nRanks_);
  return allGather(rank, &none, all.data(), 1);
}

int64_t timeoutSettingMs() { return Process::get().settings().integer(SettingId::TimeoutMs); }

void RankFailures::fail(const char* fmt, ...) {
  ++count;
  if (count > 20) return;  // enough to diagnose
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "[rank %d] FAIL: %s\n", rank, text);
}

}  // namespace symmem::testing

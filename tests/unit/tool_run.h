// SPDX-License-Identifier: Apache-2.0
#pragma once
// Runs a built tool as a user would, through the shell, for the tests of the tools' binaries: its
// stdout and stderr together, its exit code, how long it took.
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace symmem::testing {

struct ToolRun {
  int exitCode = -1;  // -1: not started, or ended by a signal
  std::string out;    // stdout and stderr, interleaved as written
  double seconds = 0;
  bool has(const std::string& text) const { return out.find(text) != std::string::npos; }
};

// `command` is a shell command line; " 2>&1" is added.
inline ToolRun runTool(const std::string& command) {
  ToolRun r;
  const auto start = std::chrono::steady_clock::now();
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace symmem::testing

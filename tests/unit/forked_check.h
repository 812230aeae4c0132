// SPDX-License-Identifier: Apache-2.0
#pragma once
// Runs a check in a forked child, for tests whose subject is process-wide (a loaded plugin, hooked
// code, settings read once): the child's report string comes back through a pipe, and a child that
// dies or fails without a word is reported too. "" means the child found nothing wrong.
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace symmem::testing {

inline std::string runForkedCheck(const std::function<std::string()>& child) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    close(fds[0]);
    const std::string report = child();
    if (write(fds[1], report.data(), report.size()) < 0) _exit(3);
    close(fds[1]);
    _exit(report.empty() ? 0 : 1);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status))
    out += "child died (signal " + std::to_string(WTERMSIG(status)) + ")\n";
  else if (WEXITSTATUS(status) != 0 && out.empty())
    out += "child exit " + std::to_string(WEXITSTATUS(status)) + "\n";
  return out;
}

}  // namespace symmem::testing

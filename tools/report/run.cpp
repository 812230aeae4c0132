// SPDX-License-Identifier: Apache-2.0
#include "tools/report/run.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

namespace symmem::report {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kStderrTailBytes = 8192;  // what is kept of a tool's stderr for the report
constexpr int kStderrTailLines = 10;
// After the tool exits, how long a grandchild still holding its pipes may keep them open.
constexpr auto kAfterExitGrace = std::chrono::seconds(2);
// After the kill, how long the pipes may stay open (held by something outside the group).
constexpr auto kAfterKillDrain = std::chrono::seconds(5);
// After the kill, how long the child may take to end (a process inside the GPU driver ends late).
constexpr auto kReapLimit = std::chrono::seconds(20);

std::string errnoText(int err) { return std::strerror(err); }

// The pipe ends of one run; every descriptor closed once.
class Pipes {
 public:
  ~Pipes() {
    for (int& fd : fds_)
      if (fd >= 0) close(fd);
  }
  // 0/1: stdout, 2/3: stderr, 4/5: exec error report; all close-on-exec.
  bool open(std::string& error) {
    for (int i = 0; i < 6; i += 2) {
      if (pipe2(&fds_[i], O_CLOEXEC) != 0) {
        error = "pipe failed: " + errnoText(errno);
        return false;
      }
    }
    return true;
  }
  int& operator[](int i) { return fds_[i]; }
  void closeReadEnds() {
    closeEnd(0);
    closeEnd(2);
  }
  void closeEnd(int i) {
    if (fds_[i] >= 0) close(fds_[i]);
    fds_[i] = -1;
  }

 private:
  int fds_[6] = {-1, -1, -1, -1, -1, -1};
};

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void execChild(Pipes& pipes, char* const* argv, char* const* envp) {
  setpgid(0, 0);
  // Signals the report catches or ignores are the tool's own again.
  signal(SIGPIPE, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGHUP, SIG_DFL);
  const int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0) dup2(null, STDIN_FILENO);
  dup2(pipes[1], STDOUT_FILENO);
  dup2(pipes[3], STDERR_FILENO);
  execve(argv[0], argv, envp);
  const int err = errno;
  ssize_t ignored = write(pipes[5], &err, sizeof err);
  (void)ignored;
  _exit(127);
}

// Whether the child has ended, without reaping it (its pid, and so its process group, stay ours).
bool childEnded(pid_t pid) {
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return errno != EINTR;
  return info.si_pid == pid;
}

void killGroup(pid_t pid) {
  if (pid > 0) kill(-pid, SIGKILL);
}

}  // namespace

ToolRun runTool(const RunRequest& request, const volatile std::sig_atomic_t* interrupted) {
  ToolRun run;
  run.tool = request.tool;
  run.command = commandLine(request.argv);
  run.timeoutSeconds = request.timeoutSeconds;
  if (request.argv.empty()) {
    run.end = RunEnd::CouldNotStart;
    run.problem = "no command";
    return run;
  }
  const std::string& path = request.argv[0];
  if (access(path.c_str(), F_OK) != 0) {
    run.end = RunEnd::CouldNotStart;
    run.problem = "not found: " + path + " (" + errnoText(errno) + ")";
    return run;
  }
  if (access(path.c_str(), X_OK) != 0) {
    run.end = RunEnd::CouldNotStart;
    run.problem = "not executable: " + path + " (" + errnoText(errno) + ")";
    return run;
  }

  Pipes pipes;
  if (std::string error; !pipes.open(error)) {
    run.end = RunEnd::CouldNotStart;
    run.problem = error;
    return run;
  }
  std::vector<char*> argv, envp;
  for (const std::string& a : request.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : request.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  std::fflush(stdout);
  std::fflush(stderr);
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    run.end = RunEnd::CouldNotStart;
    run.problem = "fork failed: " + errnoText(errno);
    return run;
  }
  if (pid == 0) execChild(pipes, argv.data(), envp.data());
  setpgid(pid, pid);  // also here, so the group exists before any kill (EACCES after exec is fine)
  if (request.runningGroup != nullptr) *request.runningGroup = pid;
  pipes.closeEnd(1);
  pipes.closeEnd(3);
  pipes.closeEnd(5);

  // The exec report: EOF when exec succeeded (the pipe is close-on-exec), errno when it failed.
  int execErr = 0;
  ssize_t got = 0;
  do {
    got = read(pipes[4], &execErr, sizeof execErr);
  } while (got < 0 && errno == EINTR);
  pipes.closeEnd(4);
  const bool execFailed = got == static_cast<ssize_t>(sizeof execErr);

  std::string stderrTail;
  const auto deadline = start + std::chrono::seconds(request.timeoutSeconds);
  std::optional<Clock::time_point> endedAt, killedAt;
  while (!execFailed) {
    pollfd fds[2];
    nfds_t n = 0;
    for (int i : {0, 2})
      if (pipes[i] >= 0) fds[n++] = {pipes[i], POLLIN, 0};
    const int ready = poll(n > 0 ? fds : nullptr, n, 100);
    if (ready < 0 && errno != EINTR) {
      std::fprintf(stderr, "symmem-report: poll failed while reading %s: %s\n", request.tool.c_str(),
                   errnoText(errno).c_str());
      pipes.closeReadEnds();
    }
    for (nfds_t k = 0; ready > 0 && k < n; ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const int which = fds[k].fd == pipes[0] ? 0 : 2;
      char buf[8192];
      const ssize_t r = read(fds[k].fd, buf, sizeof buf);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        pipes.closeEnd(which);
        continue;
      }
      const size_t len = static_cast<size_t>(r);
      if (which == 0) {
        const size_t room = request.stdoutMaxBytes - std::min(request.stdoutMaxBytes, run.stdoutText.size());
        run.stdoutText.append(buf, std::min(room, len));
        if (len > room) run.stdoutTruncated = true;
      } else {
        ssize_t ignored = write(STDERR_FILENO, buf, len);
        (void)ignored;
        stderrTail.append(buf, len);
        if (stderrTail.size() > 2 * kStderrTailBytes) stderrTail.erase(0, stderrTail.size() - kStderrTailBytes);
      }
    }
    const auto now = Clock::now();
    const bool pipesOpen = pipes[0] >= 0 || pipes[2] >= 0;
    if (!endedAt && childEnded(pid)) endedAt = now;
    if (endedAt && !pipesOpen) break;
    if (killedAt) {
      // Draining what the killed group left; a descriptor held outside the group is given up on.
      if (!pipesOpen || now - *killedAt > kAfterKillDrain) break;
      continue;
    }
    if (*interrupted != 0) {
      run.end = RunEnd::Interrupted;
    } else if (now > deadline) {
      run.end = RunEnd::TimedOut;
    }
    if (run.end == RunEnd::Interrupted || run.end == RunEnd::TimedOut ||
        (endedAt && now - *endedAt > kAfterExitGrace)) {
      // Also when the tool has exited but something it started still holds its output open.
      killGroup(pid);
      killedAt = now;
    }
  }
  // Whatever the tool left in its process group (ranks it forked) goes with it; the unreaped child
  // keeps the group's id ours until it is reaped below.
  killGroup(pid);
  int status = 0;
  pid_t waited = 0;
  const auto reapBy = Clock::now() + kReapLimit;
  for (;;) {
    waited = waitpid(pid, &status, WNOHANG);
    if (waited != 0 && !(waited < 0 && errno == EINTR)) break;
    if (Clock::now() > reapBy) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (request.runningGroup != nullptr && waited == pid) *request.runningGroup = 0;
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (execFailed) {
    run.end = RunEnd::CouldNotStart;
    run.problem = "exec of " + path + " failed: " + errnoText(execErr);
    return run;
  }
  if (waited < 0) {
    run.end = RunEnd::Lost;
    run.problem = "waitpid failed: " + errnoText(errno);
    return run;
  }
  if (waited == 0) {
    run.end = RunEnd::Lost;
    run.problem = "still running " + std::to_string(kReapLimit.count()) + " s after SIGKILL (pid " +
                  std::to_string(pid) + "), left behind";
    return run;
  }
  if (run.end != RunEnd::Interrupted && run.end != RunEnd::TimedOut) {
    if (WIFEXITED(status)) {
      run.end = RunEnd::Exited;
      run.exitCode = WEXITSTATUS(status);
    } else {
      run.end = RunEnd::Signalled;
      run.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
  }
  if (!run.exited(0)) run.stderrTail = lastLines(stderrTail, kStderrTailLines);
  return run;
}

}  // namespace symmem::report

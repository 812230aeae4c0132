// SPDX-License-Identifier: Apache-2.0
#include "topology/hwloc_xml_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>

#include "topology/hwloc_library.h"
#include "topology/topology_file.h"
#include "topology/topology_record.h"

namespace symmem {

namespace {

// The child's answer on the pipe: one byte saying which, then the bytes.
constexpr char kValue = 'V';
constexpr char kError = 'E';
// More than any topology record; a child sending more is broken.
constexpr size_t kMaxAnswerBytes = size_t{64} << 20;

void writeAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

[[noreturn]] void runChild(int fd, const std::function<Expected<std::string>()>& work) {
  std::string answer;
  try {
    Expected<std::string> result = work();
    answer = result ? kValue + result.value() : kError + result.error();
  } catch (const std::exception& e) {
    answer = kError + std::string("exception: ") + e.what();
  } catch (...) {
    answer = kError + std::string("unknown exception");
  }
  writeAll(fd, answer);
  ::close(fd);
  ::_exit(0);
}

int waitForChild(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return status;
}

ChildOutcome failed(std::string what) {
  ChildOutcome o;
  o.kind = ChildOutcome::Kind::Failed;
  o.what = std::move(what);
  return o;
}

}  // namespace

ChildOutcome runInChildProcess(const std::function<Expected<std::string>()>& work, std::chrono::milliseconds timeout) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return failed(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return failed(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::close(fds[0]);
    runChild(fds[1], work);
  }
  ::close(fds[1]);

  std::string answer;
  bool timedOut = false;
  bool tooLong = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[64 * 1024];
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timedOut = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline check above ends the wait
    const ssize_t n = ready < 0 ? -1 : ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of the answer (or a broken pipe): the child is done
    answer.append(buffer, static_cast<size_t>(n));
    if (answer.size() > kMaxAnswerBytes) {
      tooLong = true;
      break;
    }
  }
  ::close(fds[0]);
  if (timedOut || tooLong) ::kill(pid, SIGKILL);
  const int status = waitForChild(pid);

  ChildOutcome o;
  if (timedOut) {
    o.kind = ChildOutcome::Kind::TimedOut;
    o.what = "still running after " + std::to_string(timeout.count()) + " ms; stopped";
  } else if (status >= 0 && WIFSIGNALED(status)) {
    o.kind = ChildOutcome::Kind::Crashed;
    o.what = "signal " + std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")";
  } else if (tooLong) {
    o = failed("answer longer than " + std::to_string(kMaxAnswerBytes) + " bytes");
  } else if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || answer.empty() ||
             (answer[0] != kValue && answer[0] != kError)) {
    o = failed(status >= 0 && WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                                : std::string("no answer"));
  } else {
    o.kind = ChildOutcome::Kind::Finished;
    o.ok = answer[0] == kValue;
    o.value = answer.substr(1);
  }
  return o;
}

Expected<Topology> parseHwlocXmlInChildProcess(std::string_view text, std::string_view fileName,
                                               std::chrono::milliseconds timeout) {
  using Result = Expected<Topology>;
  const std::string file(fileName);
#ifdef SYMMEM_HAVE_HWLOC
  // Load hwloc here, not in the child: dlopen after fork in a process with threads can deadlock.
  (void)hwlocLibrary();
#endif
  const ChildOutcome outcome = runInChildProcess(
      [&]() -> Expected<std::string> {
        Result parsed = parseHwlocXml(text, fileName);
        if (!parsed) return Expected<std::string>::failure(parsed.error());
        return encodeTopology(parsed.value());
      },
      timeout);
  switch (outcome.kind) {
    case ChildOutcome::Kind::Finished:
      if (!outcome.ok) return Result::failure(outcome.value);
      return decodeTopology(outcome.value);
    case ChildOutcome::Kind::Crashed:
      return Result::failure(file + ": hwloc's XML reader crashed on this file (" + outcome.what +
                             ", in a child process; nothing else was affected): the file is malformed or "
                             "not an hwloc export");
    case ChildOutcome::Kind::TimedOut:
      return Result::failure(file + ": hwloc's XML reader was " + outcome.what);
    case ChildOutcome::Kind::Failed:
      break;
  }
  return Result::failure(file + ": the child process reading it as hwloc XML failed: " + outcome.what);
}

}  // namespace symmem

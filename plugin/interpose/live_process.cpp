// SPDX-License-Identifier: Apache-2.0
#include "plugin/interpose/live_process.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "core/bounded_file.h"

namespace symmem {

uint64_t processStartTicks(pid_t pid) {
  if (pid <= 0) return 0;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so fields count from the last ')'.
  const BoundedFileText stat = readBoundedFile("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat.ok()) return 0;
  const size_t close = stat.text.rfind(')');
  if (close == std::string::npos) return 0;
  size_t at = close + 1;
  for (int field = 3; field <= 22; ++field) {  // field 3 (state) follows the ')'
    while (at < stat.text.size() && stat.text[at] == ' ') ++at;
    if (at >= stat.text.size()) return 0;
    if (field == 22) {
      char* end = nullptr;
      const unsigned long long ticks = std::strtoull(stat.text.c_str() + at, &end, 10);
      return end != stat.text.c_str() + at ? static_cast<uint64_t>(ticks) : 0;
    }
    while (at < stat.text.size() && stat.text[at] != ' ') ++at;
  }
  return 0;
}

ProcessMark thisProcessMark() {
  static thread_local ProcessMark cached;
  const pid_t pid = getpid();
  if (cached.pid != pid) cached = {pid, processStartTicks(pid)};
  return cached;
}

bool stillRunning(const ProcessMark& mark) {
  if (mark.pid <= 0) return false;
  if (kill(mark.pid, 0) != 0 && errno == ESRCH) return false;
  if (mark.startTicks == 0) return true;
  const uint64_t now = processStartTicks(mark.pid);
  return now == 0 || now == mark.startTicks;  // unreadable: the pid's word is all there is
}

}  // namespace symmem

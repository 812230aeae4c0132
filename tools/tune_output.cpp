// SPDX-License-Identifier: Apache-2.0
#include "tools/tune_output.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace symmem {

std::string tuneOutputProblem(const std::string& path) {
  if (path.empty()) return "no file name";
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return path + " is a directory";
    if (access(path.c_str(), W_OK) != 0) return path + ": " + std::strerror(errno);
    return {};
  }
  if (errno != ENOENT) return path + ": " + std::strerror(errno);
  // A new file: its directory must exist and take new files.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (stat(dir.c_str(), &st) != 0) return "directory " + dir + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (access(dir.c_str(), W_OK | X_OK) != 0) return "directory " + dir + ": " + std::strerror(errno);
  return {};
}

}  // namespace symmem

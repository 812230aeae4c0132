// SPDX-License-Identifier: Apache-2.0
#include "tools/common/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace symmem {

namespace {

// The directory part and the last name of `path` ("." for a bare name).
void splitPath(const std::string& path, std::string& dir, std::string& name) {
  const size_t slash = path.rfind('/');
  dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  name = slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

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
  std::string dir, name;
  splitPath(path, dir, name);
  if (stat(dir.c_str(), &st) != 0) return "directory " + dir + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (access(dir.c_str(), W_OK | X_OK) != 0) return "directory " + dir + ": " + std::strerror(errno);
  return {};
}

bool sameOutputFile(const std::string& a, const std::string& b) {
  if (a == b) return true;
  struct stat sa {
  }, sb{};
  const bool aExists = stat(a.c_str(), &sa) == 0;
  const bool bExists = stat(b.c_str(), &sb) == 0;
  if (aExists && bExists) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (aExists != bExists) return false;
  // Neither exists yet: the same name in the same directory.
  std::string dirA, nameA, dirB, nameB;
  splitPath(a, dirA, nameA);
  splitPath(b, dirB, nameB);
  if (nameA != nameB) return false;
  if (stat(dirA.c_str(), &sa) != 0 || stat(dirB.c_str(), &sb) != 0) return dirA == dirB;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::string writeFileByRename(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp-" + std::to_string(getpid());
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create " + temp + ": " + std::strerror(errno);
  std::string error;
  size_t done = 0;
  while (error.empty() && done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = "cannot write " + temp + ": " + std::strerror(n < 0 ? errno : ENOSPC);
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (error.empty() && fsync(fd) != 0) error = "cannot write " + temp + ": " + std::strerror(errno);
  if (close(fd) != 0 && error.empty()) error = "cannot write " + temp + ": " + std::strerror(errno);
  if (error.empty() && rename(temp.c_str(), path.c_str()) != 0)
    error = "cannot rename " + temp + " to " + path + ": " + std::strerror(errno);
  if (!error.empty()) unlink(temp.c_str());
  return error;
}

}  // namespace symmem

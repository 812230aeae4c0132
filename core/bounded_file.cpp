// SPDX-License-Identifier: Apache-2.0
#include "core/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace symmem {

namespace {

using Failure = BoundedFileText::Failure;

// What a path that is not a regular file is, for the message.
const char* kindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

BoundedFileText failure(BoundedFileText::Failure why, const std::string& path, const std::string& reason) {
  BoundedFileText r;
  r.failure = why;
  r.error = path + ": " + reason;
  return r;
}

// Closes the descriptor on every way out.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

BoundedFileText readBoundedFile(const std::string& path, size_t maxBytes) {
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait for one, for ever.
  const Descriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return failure(Failure::CannotOpen, path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return failure(Failure::ReadError, path, std::string("cannot stat: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return failure(Failure::NotARegularFile, path, "is a directory, not a file");
  if (!S_ISREG(st.st_mode))
    return failure(Failure::NotARegularFile, path, std::string("is ") + kindOf(st.st_mode) + ", not a regular file");
  const std::string tooLarge = "larger than the limit of " + std::to_string(maxBytes) + " bytes for this file";
  if (static_cast<unsigned long long>(st.st_size) > maxBytes) return failure(Failure::TooLarge, path, tooLarge);

  // The size the file system reports is a hint only (0 for /proc files, and the file may grow): read
  // until the end, but never more than one byte past the limit.
  BoundedFileText r;
  char buffer[64 * 1024];
  while (r.text.size() <= maxBytes) {
    const size_t want = std::min(sizeof(buffer), maxBytes + 1 - r.text.size());
    const ssize_t got = ::read(fd.get(), buffer, want);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return failure(Failure::ReadError, path, std::string("read error: ") + std::strerror(errno));
    if (got == 0) return r;
    r.text.append(buffer, static_cast<size_t>(got));
  }
  return failure(Failure::TooLarge, path, tooLarge);
}

}  // namespace symmem

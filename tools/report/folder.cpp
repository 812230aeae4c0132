// SPDX-License-Identifier: Apache-2.0
#include "tools/report/folder.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

namespace symmem::report {

namespace {

std::string errnoText(int err) { return std::strerror(err); }

std::string octalMode(uint32_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777u);
  return buf;
}

// A name of the folder: one component, no separator, not "." or "..".
bool plainName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

std::string currentDirectory() {
  char cwd[PATH_MAX];
  return getcwd(cwd, sizeof cwd) != nullptr ? std::string(cwd) : std::string();
}

// The path the kernel knows an open descriptor by (where the folder is now, links resolved).
std::string pathOfFd(int fd) {
  char buf[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<size_t>(n));
}

bool readWhole(int fd, const std::string& name, size_t maxBytes, std::string& text, std::string& error) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = name + ": not a regular file";
    close(fd);
    return false;
  }
  text.clear();
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = name + ": read error: " + errnoText(errno);
      close(fd);
      return false;
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > maxBytes) {
      error = name + ": larger than the limit of " + std::to_string(maxBytes) + " bytes";
      text.clear();
      close(fd);
      return false;
    }
  }
  close(fd);
  return true;
}

// Whether the folder's entry `name` is the directory that `fd` holds (and not something put in its
// place since).
bool entryIsHeldDirectory(int folderFd, const char* name, int fd) {
  struct stat entry {
  }, held{};
  if (fstatat(folderFd, name, &entry, AT_SYMLINK_NOFOLLOW) != 0 || fstat(fd, &held) != 0) return false;
  return S_ISDIR(entry.st_mode) && entry.st_dev == held.st_dev && entry.st_ino == held.st_ino;
}

}  // namespace

std::string foreignFolderProblem(uint32_t ownerUid, uint32_t mode, uint32_t uid) {
  if (ownerUid != uid)
    return "is owned by another user (uid " + std::to_string(ownerUid) +
           "), who could change what it holds while the report runs: name a folder of your own";
  if ((mode & (S_IWGRP | S_IWOTH)) != 0)
    return "can be written by other users (mode " + octalMode(mode) +
           "), who could change what it holds while the report runs: chmod go-w it, or name another folder";
  return {};
}

ReportFolder::~ReportFolder() {
  if (stagingFd_ >= 0) close(stagingFd_);
  if (inheritedFolderFd_ >= 0) close(inheritedFolderFd_);
  if (folderFd_ >= 0) close(folderFd_);
}

bool ReportFolder::open(const std::string& given, std::string& error) {
  std::string path = given;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  absolute_ = path.front() == '/' ? path : currentDirectory() + "/" + path;
  const size_t slash = path.rfind('/');
  const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);

  bool created = false;
  if (plainName(name)) {
    const int parentFd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parentFd < 0) {
      error = "cannot create " + given + ": " + parent + ": " + errnoText(errno);
      return false;
    }
    if (mkdirat(parentFd, name.c_str(), 0755) == 0) {
      created = true;
    } else if (errno != EEXIST) {
      error = "cannot create " + given + ": " + errnoText(errno);
      close(parentFd);
      return false;
    }
    folderFd_ = openat(parentFd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int openErr = errno;
    struct stat st {};
    const bool isLink =
        folderFd_ < 0 && fstatat(parentFd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
    close(parentFd);
    if (folderFd_ < 0) {
      error = isLink               ? given + " is a symbolic link: name the folder itself"
              : openErr == ENOTDIR ? given + " exists and is not a folder"
                                   : "cannot open " + given + ": " + errnoText(openErr);
      return false;
    }
  } else {
    // "." or "..": the directory itself (no entry of a parent to create or swap).
    folderFd_ = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (folderFd_ < 0) {
      error =
          errno == ENOTDIR ? given + " exists and is not a folder" : "cannot open " + given + ": " + errnoText(errno);
      return false;
    }
  }

  struct stat st {};
  if (fstat(folderFd_, &st) != 0) {
    error = "cannot inspect " + given + ": " + errnoText(errno);
    return false;
  }
  if (const std::string why = foreignFolderProblem(st.st_uid, st.st_mode, geteuid()); !why.empty()) {
    error = given + " " + why;
    return false;
  }
  if (!created) {
    const int listFd = openat(folderFd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* dir = listFd >= 0 ? fdopendir(listFd) : nullptr;
    if (dir == nullptr) {
      error = given + ": cannot list: " + errnoText(errno);
      if (listFd >= 0) close(listFd);
      return false;
    }
    bool empty = true;
    while (const dirent* e = readdir(dir))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) empty = false;
    closedir(dir);
    if (!empty) {
      error = given + " exists and is not empty (nothing is overwritten; name a new folder with --out)";
      return false;
    }
  }
  resolved_ = pathOfFd(folderFd_);
  if (resolved_.empty()) resolved_ = absolute_;

  if (mkdirat(folderFd_, kStagingName, 0700) != 0) {
    error = "cannot create " + given + "/" + kStagingName + ": " + errnoText(errno);
    return false;
  }
  // Not close-on-exec: the tools reach the staging folder through this handle.
  stagingFd_ = openat(folderFd_, kStagingName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (stagingFd_ < 0) {
    error = "cannot open " + given + "/" + kStagingName + ": " + errnoText(errno);
    return false;
  }
  stagingHandle_ = "/proc/self/fd/" + std::to_string(stagingFd_);
  inheritedFolderFd_ = dup(folderFd_);  // dup() leaves close-on-exec off
  if (inheritedFolderFd_ < 0) {
    error = "cannot hold " + given + " open: " + errnoText(errno);
    return false;
  }
  folderHandle_ = "/proc/self/fd/" + std::to_string(inheritedFolderFd_);
  return true;
}

bool ReportFolder::stagedExists(const std::string& name) const {
  struct stat st {};
  return stagingFd_ >= 0 && plainName(name) && fstatat(stagingFd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

bool ReportFolder::readStaged(const std::string& name, size_t maxBytes, std::string& text, std::string& error) const {
  error.clear();
  if (stagingFd_ < 0 || !plainName(name)) {
    error = name + ": not a name of the staging folder";
    return false;
  }
  const int fd = openat(stagingFd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) error = name + ": cannot open: " + errnoText(errno);
    return false;
  }
  return readWhole(fd, name, maxBytes, text, error);
}

bool ReportFolder::readFile(const std::string& name, size_t maxBytes, std::string& text, std::string& error) const {
  error.clear();
  if (!plainName(name)) {
    error = name + ": not a name of the folder";
    return false;
  }
  const int fd = openat(folderFd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = name + ": cannot open: " + errnoText(errno);
    return false;
  }
  return readWhole(fd, name, maxBytes, text, error);
}

std::string ReportFolder::writeNew(const std::string& name, const std::string& text) const {
  if (!plainName(name)) return "cannot create " + name + ": not a name of the folder";
  const int fd = openat(folderFd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create " + name + ": " + errnoText(errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string e = "cannot write " + name + ": " + errnoText(n < 0 ? errno : ENOSPC);
      close(fd);
      return e;
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0) return "cannot write " + name + ": " + errnoText(errno);
  return {};
}

std::string ReportFolder::remove(const std::string& name) const {
  if (!plainName(name)) return "cannot remove " + name + ": not a name of the folder";
  if (unlinkat(folderFd_, name.c_str(), 0) != 0) return "cannot remove " + name + ": " + errnoText(errno);
  return {};
}

void ReportFolder::removeStaging() {
  if (stagingFd_ < 0) return;
  const int listFd = openat(stagingFd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (DIR* dir = listFd >= 0 ? fdopendir(listFd) : nullptr) {
    while (const dirent* e = readdir(dir)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      if (unlinkat(stagingFd_, e->d_name, 0) != 0)
        std::fprintf(stderr, "symmem-report: cannot remove %s/%s: %s\n", kStagingName, e->d_name,
                     errnoText(errno).c_str());
    }
    closedir(dir);
  } else if (listFd >= 0) {
    close(listFd);
  }
  // Only the folder this report made: a name swapped in since (a link, another folder) is left alone.
  struct stat st {};
  if (fstatat(folderFd_, kStagingName, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) {
    // Removed already (a signal handler's cleanup).
  } else if (entryIsHeldDirectory(folderFd_, kStagingName, stagingFd_)) {
    if (unlinkat(folderFd_, kStagingName, AT_REMOVEDIR) != 0)
      std::fprintf(stderr, "symmem-report: cannot remove %s: %s\n", kStagingName, errnoText(errno).c_str());
  } else {
    std::fprintf(stderr, "symmem-report: %s was replaced during the run; what stands there now is left alone\n",
                 kStagingName);
  }
  close(stagingFd_);
  stagingFd_ = -1;
}

void ReportFolder::removeStagingNow() const {
  const int fd = stagingFd_;
  if (fd < 0) return;
  // getdents64 on the held handle: opendir allocates, which a signal handler must not.
  struct LinuxDirent64 {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[1];
  };
  alignas(8) char buf[4096];
  for (int pass = 0; pass < 8; ++pass) {
    bool removed = false;
    if (lseek(fd, 0, SEEK_SET) != 0) break;
    for (;;) {
      const long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long at = 0; at < n;) {
        const auto* e = reinterpret_cast<const LinuxDirent64*>(buf + at);
        at += e->reclen;
        const char* name = e->name;
        if ((name[0] == '.' && name[1] == '\0') || (name[0] == '.' && name[1] == '.' && name[2] == '\0')) continue;
        if (unlinkat(fd, name, 0) == 0) removed = true;
      }
    }
    if (!removed) break;
  }
  if (entryIsHeldDirectory(folderFd_, kStagingName, fd)) unlinkat(folderFd_, kStagingName, AT_REMOVEDIR);
}

std::vector<FolderEntry> ReportFolder::files() const {
  std::vector<FolderEntry> files;
  const int listFd = openat(folderFd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (DIR* dir = listFd >= 0 ? fdopendir(listFd) : nullptr) {
    while (const dirent* e = readdir(dir)) {
      struct stat st {};
      if (fstatat(folderFd_, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
        files.push_back({e->d_name, static_cast<uint64_t>(st.st_size)});
    }
    closedir(dir);
  } else if (listFd >= 0) {
    close(listFd);
  }
  std::sort(files.begin(), files.end(), [](const FolderEntry& a, const FolderEntry& b) { return a.name < b.name; });
  return files;
}

}  // namespace symmem::report

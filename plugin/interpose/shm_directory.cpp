// SPDX-License-Identifier: Apache-2.0
#include "plugin/interpose/shm_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace symmem {

std::string shmDirectoryCandidate(const std::string& root, uid_t uid, int k) {
  std::string path = root + "/nccl-symmem-" + std::to_string(uid);
  if (k > 0) path.append(".").append(std::to_string(k));
  return path;
}

namespace {

enum class Candidate { Ours, Free, Taken, Broken };

// lstat: a link is never followed, whoever made it.
Candidate look(const std::string& path, uid_t uid) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return errno == ENOENT ? Candidate::Free : Candidate::Broken;
  if (!S_ISDIR(st.st_mode) || st.st_uid != uid) return Candidate::Taken;
  // The user's own, with other bits set (made by hand, or a umask-trimmed mkdir of an older build):
  // tightened, since nobody else can have put anything in it that the next look does not check.
  if ((st.st_mode & 0777) != 0700 && chmod(path.c_str(), 0700) != 0) return Candidate::Taken;
  return Candidate::Ours;
}

}  // namespace

std::string privateShmDirectory(std::string* why, const std::string& root) {
  const uid_t uid = geteuid();
  std::string taken;
  for (int k = 0; k < kShmDirectoryCandidates; ++k) {
    const std::string path = shmDirectoryCandidate(root, uid, k);
    for (int attempt = 0; attempt < 2; ++attempt) {  // a peer may make it between the look and mkdir
      Candidate c = look(path, uid);
      if (c == Candidate::Free) {
        if (mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) {
          c = look(path, uid);
        } else {
          *why = "cannot make " + path + ": " + std::strerror(errno);
          return "";
        }
      }
      if (c == Candidate::Ours) return path;
      if (c == Candidate::Broken) {
        *why = "cannot look at " + path + ": " + std::strerror(errno);
        return "";
      }
      if (c == Candidate::Taken) break;
    }
    taken += (taken.empty() ? "" : ", ") + path;
  }
  *why = "every name for this user's directory in " + root + " is another user's, or not a directory (" + taken + ")";
  return "";
}

}  // namespace symmem

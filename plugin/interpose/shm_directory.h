// SPDX-License-Identifier: Apache-2.0
#pragma once
// This user's own directory in /dev/shm, where the plugin keeps what the processes of one job share
// (the agreement segments, plugin/interpose/rendezvous.h). /dev/shm is every user's: anyone can make a file,
// FIFO or link under any name not yet taken there, see every name, and fill it. Inside a directory
// that is this user's, mode 0700, nobody else can list, make, take or remove a name, and so cannot
// learn a communicator's id from a name, take a name ahead of a job, or hand it a file of theirs.
//
// The directory is /dev/shm/nccl-symmem-<uid>; where another user got that name first (anyone may
// make it before this user does), the first of .../nccl-symmem-<uid>.1 to .7 that is this user's or
// free. Every process of the user looks through the same names in the same order and takes the first
// that is a real directory (not a link) owned by the user with mode 0700, making it where the name is
// free, so every process of a job that sees the same /dev/shm finds the same one. It is never removed:
// one empty directory per user, as /run/user keeps.
#include <sys/types.h>

#include <string>

namespace symmem {

inline constexpr int kShmDirectoryCandidates = 8;

// The directory's path, made where needed, or "" with `why` (all candidates taken by other users,
// /dev/shm missing or full, read-only). `root` is /dev/shm but for tests.
std::string privateShmDirectory(std::string* why, const std::string& root = "/dev/shm");

// Candidate `k` (0 to kShmDirectoryCandidates - 1) of `uid` under `root`.
std::string shmDirectoryCandidate(const std::string& root, uid_t uid, int k);

}  // namespace symmem

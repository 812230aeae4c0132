// SPDX-License-Identifier: Apache-2.0
#pragma once
// The cache of real libnccl.so.2 builds, one folder per release (<version>-<wheel>/libnccl.so.2), that
// tests/nccl_releases/fetch_libnccl.py fills and NCCL_SYMMEM_TEST_RELEASES names.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace symmem::testing {

// The release folders, sorted; none with `*why` set where the variable is unset, or the folder cannot
// be read or holds no release (`*unset` tells the first case, a skip, from the others, failures).
inline std::vector<std::filesystem::path> ncclReleaseFolders(std::string* why, bool* unset) {
  *unset = false;
  const char* dir = std::getenv("NCCL_SYMMEM_TEST_RELEASES");
  if (dir == nullptr || *dir == '\0') {
    *unset = true;
    *why = "NCCL_SYMMEM_TEST_RELEASES is unset (tests/nccl_releases/fetch_libnccl.py fills a folder for it)";
    return {};
  }
  std::vector<std::filesystem::path> folders;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (std::filesystem::is_regular_file(entry.path() / "libnccl.so.2")) folders.push_back(entry.path());
  if (ec)
    *why = std::string(dir) + ": " + ec.message();
  else if (folders.empty())
    *why = std::string(dir) + " holds no <version>/libnccl.so.2";
  std::sort(folders.begin(), folders.end());
  return ec ? std::vector<std::filesystem::path>{} : folders;
}

}  // namespace symmem::testing

// SPDX-License-Identifier: Apache-2.0
#include "core/installed_table.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "core/table_file.h"

namespace symmem {

namespace {

constexpr const char* kFilePrefix = "table-";
constexpr const char* kFileSuffix = ".txt";
// Tables of other machines read per directory, only to name what differs: a bound on the cost a
// crowded shared directory could add to every process's start.
constexpr size_t kOtherTablesRead = 8;

InstalledTableFile readInstalled(const std::string& path) {
  InstalledTableFile f;
  f.path = path;
  const TableFileResult file = readTableFile(path);
  if (!file.ok()) {
    f.error = file.error;
    return f;
  }
  for (const std::string& m : file.meta)
    if (auto machine = parseMachineLine(m)) {
      f.machine = std::move(machine);
      break;
    }
  return f;
}

bool isTableName(const std::string& name) {
  const std::string prefix = kFilePrefix, suffix = kFileSuffix;
  return name.size() > prefix.size() + suffix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string userTableDirectory(const std::string& userConfigHome) {
  return userConfigHome.empty() ? std::string() : userConfigHome + "/nccl-symmem";
}

std::vector<std::string> installedTableDirectories(const std::string& userConfigHome) {
  std::vector<std::string> dirs;
  if (const std::string user = userTableDirectory(userConfigHome); !user.empty()) dirs.push_back(user);
  dirs.push_back(kSystemTableDirectory);
  return dirs;
}

std::string installedTablePath(const std::string& directory, const MachineFingerprint& machine) {
  return directory + "/" + kFilePrefix + machineKey(machine) + kFileSuffix;
}

std::vector<InstalledTableFile> findInstalledTables(const std::vector<std::string>& directories,
                                                    const MachineFingerprint& here) {
  namespace fs = std::filesystem;
  std::vector<InstalledTableFile> found;
  for (const std::string& dir : directories) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    const std::string mine = installedTablePath(dir, here);
    if (fs::exists(mine, ec)) found.push_back(readInstalled(mine));
    std::vector<std::string> others;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (isTableName(name) && it->path().string() != mine) others.push_back(it->path().string());
    }
    std::sort(others.begin(), others.end());  // the same order on every rank and every run
    if (others.size() > kOtherTablesRead) others.resize(kOtherTablesRead);
    for (const std::string& path : others) found.push_back(readInstalled(path));
  }
  return found;
}

}  // namespace symmem

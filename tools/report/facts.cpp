// SPDX-License-Identifier: Apache-2.0
#include "tools/report/facts.h"

#include <cuda_runtime_api.h>
#include <dirent.h>
#include <pwd.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <string_view>

#include "core/bounded_file.h"
#include "symmem/version.h"
#include "tools/common/nccl_library.h"
#include "tools/common/version_text.h"

namespace symmem::report {

namespace {

constexpr size_t kProcFileMaxBytes = size_t{64} << 10;

void addIfSet(std::vector<std::string>& to, const char* value) {
  if (value != nullptr && *value != '\0') to.emplace_back(value);
}

// The path and, where it differs, the path with its links resolved: either may appear in a text.
void addDirWithRealPath(std::vector<std::string>& to, const std::string& dir) {
  if (dir.empty()) return;
  to.push_back(dir);
  char resolved[PATH_MAX];
  if (realpath(dir.c_str(), resolved) != nullptr && dir != resolved) to.emplace_back(resolved);
}

std::string collapseSpaces(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string firstLine(const std::string& text) { return collapseSpaces(text.substr(0, text.find('\n'))); }

std::string ncclVersion() {
  const std::string built = std::string("built against ") + SYMMEM_BUILT_NCCL_VERSION;
  for (const char* name : {"libnccl.so.2", SYMMEM_BUILT_NCCL_LIBRARY}) {
    NcclLibrary nccl = loadNcclLibrary(name);
    if (nccl.handle == nullptr) continue;
    int code = 0;
    const bool known = nccl.getVersion && nccl.getVersion(&code) == ncclSuccess;
    unloadNcclLibrary(nccl);
    return (known ? ncclVersionText(code) : std::string("unknown version")) + " loaded (" + name + "); " + built;
  }
  return "not loadable here (libnccl.so.2 not on the library path); " + built;
}

// The GPUs the NVIDIA driver lists (/proc/driver/nvidia/gpus/<bus id>/information), by model.
std::string gpuModels() {
  const char* root = "/proc/driver/nvidia/gpus";
  DIR* dir = opendir(root);
  if (dir == nullptr) return "none listed by the driver (/proc/driver/nvidia/gpus absent)";
  std::map<std::string, std::vector<std::string>> busesByModel;
  while (const dirent* e = readdir(dir)) {
    const std::string bus = e->d_name;
    if (bus == "." || bus == "..") continue;
    const BoundedFileText info = readBoundedFile(std::string(root) + "/" + bus + "/information", kProcFileMaxBytes);
    std::string model = "unknown model";
    if (info.ok()) {
      const size_t at = info.text.find("Model:");
      if (at != std::string::npos) model = firstLine(info.text.substr(at + 6));
    }
    busesByModel[model].push_back(bus);
  }
  closedir(dir);
  if (busesByModel.empty()) return "none listed by the driver";
  std::string out;
  for (auto& [model, buses] : busesByModel) {
    std::sort(buses.begin(), buses.end());
    std::string list;
    for (const std::string& b : buses) list += (list.empty() ? "" : ", ") + b;
    out += (out.empty() ? "" : "; ") + std::to_string(buses.size()) + "x " + model + " (" + list + ")";
  }
  return out;
}

std::string osName() {
  const BoundedFileText release = readBoundedFile("/etc/os-release", kProcFileMaxBytes);
  if (!release.ok()) return "unknown (" + release.error + ")";
  const size_t at = release.text.find("PRETTY_NAME=");
  if (at == std::string::npos) return "unknown (no PRETTY_NAME in /etc/os-release)";
  std::string value = firstLine(release.text.substr(at + 12));
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
  return value;
}

}  // namespace

Identity gatherIdentity(const std::vector<std::string>& reportDirs) {
  Identity id;
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof host - 1) == 0) addIfSet(id.hostNames, host);
  utsname names{};
  if (uname(&names) == 0) addIfSet(id.hostNames, names.nodename);
  addIfSet(id.hostNames, std::getenv("HOSTNAME"));

  for (uid_t uid : {getuid(), geteuid()}) {
    if (const passwd* pw = getpwuid(uid)) {
      addIfSet(id.userNames, pw->pw_name);
      if (pw->pw_dir != nullptr) addDirWithRealPath(id.homeDirs, pw->pw_dir);
    }
  }
  for (const char* var : {"USER", "LOGNAME", "SUDO_USER"}) addIfSet(id.userNames, std::getenv(var));
  if (const char* sudoUser = std::getenv("SUDO_USER")) {
    if (const passwd* pw = getpwnam(sudoUser); pw != nullptr && pw->pw_dir != nullptr)
      addDirWithRealPath(id.homeDirs, pw->pw_dir);
  }
  if (const char* home = std::getenv("HOME")) addDirWithRealPath(id.homeDirs, home);

  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) != nullptr) addDirWithRealPath(id.currentDirs, cwd);
  if (const char* pwd = std::getenv("PWD")) addDirWithRealPath(id.currentDirs, pwd);
  for (const std::string& d : reportDirs) addDirWithRealPath(id.reportDirs, d);
  return id;
}

std::vector<Row> gatherVersions() {
  std::vector<Row> rows;
  rows.push_back({"nccl-symmem", SYMMEM_VERSION_STRING});
  const BoundedFileText driver = readBoundedFile("/proc/driver/nvidia/version", kProcFileMaxBytes);
  const std::string driverVersion = driver.ok() ? nvidiaDriverVersion(driver.text) : std::string();
  rows.push_back({"NVIDIA driver", !driver.ok()            ? "none (" + driver.error + ")"
                                   : driverVersion.empty() ? firstLine(driver.text) + " (/proc/driver/nvidia/version)"
                                                           : driverVersion + " (/proc/driver/nvidia/version)"});
  int runtime = 0;
  const std::string built = "built with " + cudaVersionText(CUDART_VERSION);
  rows.push_back({"CUDA runtime", cudaRuntimeGetVersion(&runtime) == cudaSuccess
                                      ? cudaVersionText(runtime) + " (static, in the tools; " + built + ")"
                                      : "unknown (" + built + ")"});
  int driverApi = 0;
  const cudaError_t driverErr = cudaDriverGetVersion(&driverApi);
  rows.push_back({"CUDA driver", driverErr == cudaSuccess && driverApi > 0
                                     ? cudaVersionText(driverApi) + " (libcuda)"
                                     : std::string("none (no CUDA driver library found)")});
  rows.push_back({"NCCL", ncclVersion()});
  rows.push_back({"GPUs", gpuModels()});
  utsname u{};
  rows.push_back({"OS kernel", uname(&u) == 0 ? std::string(u.sysname) + " " + u.release + " " + u.machine
                                              : std::string("unknown (uname failed)")});
  rows.push_back({"OS", osName()});
  return rows;
}

std::vector<Row> reportedEnvironment(const char* const* environ) {
  std::vector<Row> rows;
  for (const char* const* e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry = *e;
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = entry.substr(0, eq);
    if (name.starts_with("SYMMEM_") || name.starts_with("NCCL_") || name == "CUDA_VISIBLE_DEVICES")
      rows.push_back({std::string(name), std::string(entry.substr(eq + 1))});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.name < b.name; });
  return rows;
}

}  // namespace symmem::report

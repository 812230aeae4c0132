// SPDX-License-Identifier: Apache-2.0
#include "plugin/interpose/nccl_copies.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <vector>

namespace symmem {

namespace {

// The pncclAllReduce of the loaded object `object` (or of its dependencies), or null when neither is an
// NCCL (a test's logger, none at all).
const void* allReduceOf(const std::string& object) {
  void* handle = object == "unknown" ? nullptr : dlopen(object.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return nullptr;
  const void* f = dlsym(handle, "pncclAllReduce");
  dlclose(handle);
  return f;
}

}  // namespace

NcclCopies::NcclCopies(RealNccl linked) {
  Copy& first = copies_[0];
  first.real = linked;
  first.key = reinterpret_cast<const void*>(linked.allReduce);
  first.path = first.key ? objectName(first.key) : "libnccl.so.2";
  count_.store(1, std::memory_order_release);
}

std::string NcclCopies::objectName(const void* address) {
  Dl_info info{};
  return address && dladdr(address, &info) && info.dli_fname ? info.dli_fname : "unknown";
}

int NcclCopies::copiesLoaded() {
  std::vector<std::string> objects;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name && *info->dlpi_name)
          static_cast<std::vector<std::string>*>(data)->push_back(info->dlpi_name);
        return 0;
      },
      &objects);
  std::vector<const void*> copies;
  for (const std::string& path : objects) {  // dlopen cannot run inside dl_iterate_phdr
    const void* f = allReduceOf(path);
    if (f && std::find(copies.begin(), copies.end(), f) == copies.end()) copies.push_back(f);
  }
  return static_cast<int>(copies.size());
}

int NcclCopies::versionCode(int copy) {
  if (copy < 0 || copy >= count()) return 0;
  const RealNccl& real = at(copy);
  int version = 0;
  return real.getVersion && real.getVersion(&version) == ncclSuccess ? version : 0;
}

std::optional<int> NcclCopies::find(const void* key) const {
  const int n = count();
  for (int i = 0; i < n; ++i)
    if (copies_[static_cast<size_t>(i)].key == key) return i;
  return std::nullopt;
}

std::optional<int> NcclCopies::copyThatLoaded(NcclLoggerFn logger, std::string* why) {
  const std::string object = objectName(reinterpret_cast<const void*>(logger));
  const void* key = allReduceOf(object);
  if (key == nullptr) {
    // A logger that names no NCCL (a test's, a wrapper's, a statically linked NCCL's) proves nothing:
    // then one NCCL must be loaded, the one the plugin is linked against.
    const int loaded = copiesLoaded();
    if (loaded <= 1) return 0;
    *why = std::to_string(loaded) + " NCCL copies are loaded and the logger NCCL gave the plugin (in " + object +
           ") does not say which one loaded it";
    return std::nullopt;
  }
  if (const std::optional<int> known = find(key)) return known;
  std::lock_guard<std::mutex> lock(mutex_);
  if (const std::optional<int> known = find(key)) return known;
  const int n = count();
  if (n >= kMaxNcclCopies) {
    *why = "the NCCL that loaded the plugin (" + object + ") would be NCCL copy " + std::to_string(n + 1) +
           " in this process, and the plugin serves at most " + std::to_string(kMaxNcclCopies);
    return std::nullopt;
  }
  // Kept open for the life of the process: its functions are called until exit.
  void* handle = dlopen(object.c_str(), RTLD_NOW | RTLD_NOLOAD);
  Copy& copy = copies_[static_cast<size_t>(n)];
  copy.real = resolveNccl(handle, NcclNames::AliasesInCopy);
  if (handle == nullptr || !copy.real.usable()) {
    copy.real = RealNccl{};
    *why = "the NCCL that loaded the plugin (" + object + ") is another copy than the one it is linked against (" +
           copies_[0].path + "), and lacks functions the plugin forwards to";
    return std::nullopt;
  }
  copy.key = key;
  copy.path = object;
  copy.real.library = copy.path.c_str();
  count_.store(n + 1, std::memory_order_release);
  SYMMEM_INFO(kLogInit,
              "NCCL copy %d (%s) loaded the plugin too, next to %s: its communicators forward to its own "
              "functions",
              n, object.c_str(), copies_[0].path.c_str());
  return n;
}

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include "tools/nccl_library.h"

#include <dlfcn.h>

#include <type_traits>

namespace symmem {

NcclLibrary loadNcclLibrary(const std::string& library) {
  NcclLibrary nccl;
  nccl.handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (nccl.handle == nullptr) {
    const char* why = dlerror();
    nccl.error = "cannot load NCCL (" + library + "): " + (why ? why : "dlopen failed");
    return nccl;
  }
  auto resolve = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(nccl.handle, name));
    if (fn == nullptr && nccl.error.empty()) nccl.error = library + " has no " + name + ": not a usable NCCL 2.x";
  };
  resolve(nccl.getVersion, "ncclGetVersion");
  resolve(nccl.getUniqueId, "ncclGetUniqueId");
  resolve(nccl.commInitRank, "ncclCommInitRank");
  resolve(nccl.allReduce, "ncclAllReduce");
  resolve(nccl.allGather, "ncclAllGather");
  resolve(nccl.commDestroy, "ncclCommDestroy");
  resolve(nccl.getErrorString, "ncclGetErrorString");
  return nccl;
}

void unloadNcclLibrary(NcclLibrary& nccl) {
  if (nccl.handle != nullptr) dlclose(nccl.handle);
  nccl = NcclLibrary();
  nccl.error = "unloaded";
}

std::string ncclVersionText(int version) {
  // NCCL_VERSION_CODE: major*10000 + minor*100 + patch from 2.9 on, major*1000 + minor*100 + patch before.
  if (version >= 10000)
    return std::to_string(version / 10000) + "." + std::to_string((version % 10000) / 100) + "." +
           std::to_string(version % 100);
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 100) + "." +
         std::to_string(version % 100);
}

}  // namespace symmem

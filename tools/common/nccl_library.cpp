// SPDX-License-Identifier: Apache-2.0
#include "tools/common/nccl_library.h"

#include <dlfcn.h>

#include <utility>

namespace symmem {

NcclLibrary loadNcclLibrary(const std::string& library) {
  NcclLibrary nccl;
  nccl.handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (nccl.handle == nullptr) {
    const char* why = dlerror();
    nccl.error = "cannot load NCCL (" + library + "): " + (why ? why : "dlopen failed");
    return nccl;
  }
  static_cast<RealNccl&>(nccl) = resolveNccl(nccl.handle, NcclNames::Plain);
  // What the tools call, in the order a missing one is reported.
  const std::pair<const void*, const char*> needed[] = {
      {reinterpret_cast<const void*>(nccl.getVersion), "ncclGetVersion"},
      {reinterpret_cast<const void*>(nccl.getUniqueId), "ncclGetUniqueId"},
      {reinterpret_cast<const void*>(nccl.commInitRank), "ncclCommInitRank"},
      {reinterpret_cast<const void*>(nccl.allReduce), "ncclAllReduce"},
      {reinterpret_cast<const void*>(nccl.allGather), "ncclAllGather"},
      {reinterpret_cast<const void*>(nccl.commDestroy), "ncclCommDestroy"},
      {reinterpret_cast<const void*>(nccl.getErrorString), "ncclGetErrorString"},
  };
  for (const auto& [fn, name] : needed) {
    if (fn == nullptr) {
      nccl.error = library + " has no " + name + ": not a usable NCCL 2.x";
      break;
    }
  }
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

#include "tools/tune_nccl_library.h"

#include <dlfcn.h>

#include <type_traits>

namespace symmem {

NcclLibrary loadNcclLibrary(const std::string& library) {
  NcclLibrary nccl;
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    nccl.error = "cannot load NCCL (" + library + "): " + (why ? why : "dlopen failed") +
                 ". Install NCCL 2.x, put its lib directory on LD_LIBRARY_PATH, or pass --nccl-lib PATH";
    return nccl;
  }
  auto resolve = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
    if (fn == nullptr && nccl.error.empty()) nccl.error = library + " has no " + name + ": not a usable NCCL 2.x";
  };
  resolve(nccl.getVersion, "ncclGetVersion");
  resolve(nccl.getUniqueId, "ncclGetUniqueId");
  resolve(nccl.commInitRank, "ncclCommInitRank");
  resolve(nccl.allReduce, "ncclAllReduce");
  resolve(nccl.allGather, "ncclAllGather");
  resolve(nccl.commDestroy, "ncclCommDestroy");
  resolve(nccl.getErrorString, "ncclGetErrorString");
  return nccl;  // the handle stays open for the life of the process
}

}  // namespace symmem

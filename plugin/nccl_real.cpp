// SPDX-License-Identifier: Apache-2.0
#include "plugin/nccl_real.h"

#include <dlfcn.h>

#include <string>
#include <type_traits>

#include "core/log.h"

namespace symmem {

namespace {

template <typename Fn>
void resolve(void* handle, const char* name, Fn& out) {
  // pncclX is NCCL's strong alias for exactly this purpose; ncclX on the same handle would be the
  // same function, but through the handle it can never be our own wrapper.
  const std::string p = std::string("p") + name;
  // Only the pncclX aliases: the plugin defines ncclX itself, and a lookup by that name could
  // come back to the plugin. pncclX exists in libnccl alone.
  void* sym = handle ? dlsym(handle, p.c_str()) : nullptr;
  if (!sym) sym = dlsym(RTLD_DEFAULT, p.c_str());
  out = reinterpret_cast<Fn>(sym);
}

}  // namespace

RealNccl loadRealNccl() {
  RealNccl r;
  // The plugin depends on libnccl.so.2, so it is loaded by the time this runs; RTLD_NOLOAD finds the
  // copy the application uses (matched by soname) without loading a second one.
  void* handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
  if (!handle) handle = dlopen("libnccl.so", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
  if (!handle) {
    SYMMEM_WARN("no libnccl.so.2 is loaded in this process; the interposer forwards nothing");
    return r;
  }
  r.library = "libnccl.so.2";
  resolve(handle, "ncclAllReduce", r.allReduce);
  resolve(handle, "ncclAllGather", r.allGather);
  resolve(handle, "ncclCommDestroy", r.commDestroy);
  resolve(handle, "ncclCommFinalize", r.commFinalize);
  resolve(handle, "ncclCommAbort", r.commAbort);
  resolve(handle, "ncclCommRevoke", r.commRevoke);
  resolve(handle, "ncclGroupStart", r.groupStart);
  resolve(handle, "ncclGroupEnd", r.groupEnd);
  resolve(handle, "ncclCommCount", r.commCount);
  resolve(handle, "ncclCommUserRank", r.commUserRank);
  resolve(handle, "ncclCommCuDevice", r.commCuDevice);
  resolve(handle, "ncclCommGetAsyncError", r.commGetAsyncError);
  // The handle stays open for the life of the process: the functions are used until exit.
  return r;
}

void forwardThrough(RealNccl& real, void* function, void* original) {
  // Plain pointer-sized stores, atomic on every target: a concurrent call reads the old or the new one.
  auto swap = [&](auto& field) {
    if (reinterpret_cast<void*>(field) == function)
      __atomic_store_n(&field, reinterpret_cast<std::remove_reference_t<decltype(field)>>(original), __ATOMIC_RELEASE);
  };
  swap(real.allReduce);
  swap(real.allGather);
  swap(real.commDestroy);
  swap(real.commFinalize);
  swap(real.commAbort);
  swap(real.commRevoke);
  swap(real.groupStart);
  swap(real.groupEnd);
  swap(real.commCount);
  swap(real.commUserRank);
  swap(real.commCuDevice);
  swap(real.commGetAsyncError);
}

}  // namespace symmem

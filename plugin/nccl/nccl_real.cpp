// SPDX-License-Identifier: Apache-2.0
#include "plugin/nccl/nccl_real.h"

#include <dlfcn.h>

#include <string>
#include <type_traits>

#include "core/log.h"

namespace symmem {

RealNccl resolveNccl(void* handle, NcclNames names) {
  RealNccl r;
  forEachNcclFunction(r, [&](auto& out, const char* name) {
    void* sym = nullptr;
    if (names != NcclNames::Plain) {
      // pncclX is NCCL's strong alias for exactly this purpose, and exists in libnccl alone: a lookup
      // of ncclX could come back to the plugin, which defines several ncclX itself. A second copy's
      // function is never another copy's: no global lookup for it.
      const std::string p = std::string("p") + name;
      sym = handle ? dlsym(handle, p.c_str()) : nullptr;
      if (!sym && names == NcclNames::Aliases) sym = dlsym(RTLD_DEFAULT, p.c_str());
    } else if (handle) {
      sym = dlsym(handle, name);
    }
    out = reinterpret_cast<std::remove_reference_t<decltype(out)>>(sym);
  });
  return r;
}

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
  r = resolveNccl(handle, NcclNames::Aliases);
  r.library = "libnccl.so.2";
  // The handle stays open for the life of the process: the functions are used until exit.
  return r;
}

void forwardThrough(RealNccl& real, void* function, void* original) {
  // Plain pointer-sized stores, atomic on every target: a concurrent call reads the old or the new one.
  auto swap = [&](auto& field) {
    if (reinterpret_cast<void*>(field) == function)
      __atomic_store_n(&field, reinterpret_cast<std::remove_reference_t<decltype(field)>>(original), __ATOMIC_RELEASE);
  };
  forEachNcclFunction(real, [&](auto& field, const char*) { swap(field); });
}

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include "plugin/hooks/self_pin.h"

#include <cxxabi.h>
#include <dlfcn.h>

namespace symmem {

bool pinLoadedObject(const void* anyAddressInside, std::string* path, std::string* why) {
  Dl_info info{};
  if (!dladdr(anyAddressInside, &info) || !info.dli_fname) {
    if (why) *why = "the loader does not know which object holds the plugin";
    return false;
  }
  if (path) *path = info.dli_fname;
  // RTLD_NOLOAD: only an object already loaded; RTLD_NODELETE marks it never to be unmapped. The
  // reference this takes is never dropped, which is the point.
  if (!dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) {
    const char* err = dlerror();
    if (why) *why = std::string("dlopen(RTLD_NODELETE) of ") + info.dli_fname + " failed: " + (err ? err : "?");
    return false;
  }
  return true;
}

bool carriesItsOwnCxxRuntime(const void* anyAddressInside) {
  // The address of a C++ runtime function as this object's code sees it: libstdc++.so's where the
  // runtime is shared, this object's own copy where it was linked in.
  const void* runtime = reinterpret_cast<const void*>(&abi::__cxa_allocate_exception);
  Dl_info self{}, owner{};
  if (!dladdr(anyAddressInside, &self) || !dladdr(runtime, &owner)) return false;
  return self.dli_fbase == owner.dli_fbase;
}

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// Keeps a loaded shared object mapped until the process exits, whatever dlclose calls follow. NCCL
// dlcloses its tuner after the last communicator; once the plugin has rebound GOT slots or hooked
// libnccl's code, those still lead into it, so it pins itself first (docs/attach.md, "Staying loaded").
#include <string>

namespace symmem {

// Pins the object that holds `anyAddressInside` (dlopen RTLD_NOLOAD | RTLD_NODELETE on its own path).
// Idempotent. False, with `why`, when it cannot: then nothing may be made to point into it.
bool pinLoadedObject(const void* anyAddressInside, std::string* path, std::string* why);

// Whether the object that holds `anyAddressInside` carries its own copy of the C++ runtime (a
// toolchain that links libstdc++ statically into shared objects). That runtime's load allocates what
// no unload frees (libstdc++'s emergency exception pool, 72 KiB with GCC 13), so such an object must
// not be loaded again and again: it pins itself at its first tuner init (docs/attach.md).
bool carriesItsOwnCxxRuntime(const void* anyAddressInside);

}  // namespace symmem

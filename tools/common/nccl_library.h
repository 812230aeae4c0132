// SPDX-License-Identifier: Apache-2.0
#pragma once
// NCCL as the tools call it without linking it: loaded with dlopen, so a machine without NCCL gets a
// message that says so instead of the loader's "error while loading shared libraries". symmem-tune
// runs its measurements through it; symmem-info asks it for the version.
#include <nccl.h>

#include <string>

#include "plugin/nccl/nccl_real.h"

namespace symmem {

// The plugin's table of NCCL functions (plugin/nccl/nccl_real.h), resolved by their ncclX names from a
// library the tool opened itself.
struct NcclLibrary : RealNccl {
  void* handle = nullptr;  // dlopen's; null when the library did not load
  std::string error;       // why it cannot be used; empty when every function the tools call was found
  bool ok() const { return error.empty(); }
};

// Loads `library` (a soname searched on the library path, or a path) and resolves the functions.
// Does not initialise CUDA: safe in the parent before fork. The library stays loaded until
// unloadNcclLibrary, if ever.
NcclLibrary loadNcclLibrary(const std::string& library);

// dlclose of what loadNcclLibrary opened; afterwards every function is null and ok() is false.
void unloadNcclLibrary(NcclLibrary& nccl);

// "2.28.9" from NCCL's version code 22809 (and from the codes of NCCL before 2.9: 2804 is "2.8.4").
std::string ncclVersionText(int version);

}  // namespace symmem

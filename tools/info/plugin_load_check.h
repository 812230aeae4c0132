// SPDX-License-Identifier: Apache-2.0
#pragma once
// Loads the plugin shared object exactly as NCCL does (dlopen RTLD_NOW | RTLD_LOCAL, then dlsym of
// ncclTunerPlugin_v7 .. _v2) and runs one init / getCollInfo / finalize cycle on a cost table
// seeded the way NCCL seeds it. Proof that the .so is usable by NCCL, on a machine without GPUs.
#include <string>

namespace symmem {

struct PluginLoadReport {
  bool ok = false;
  std::string text;  // what was loaded, which versions were found, what the cycle did
};

PluginLoadReport checkPluginLoads(const std::string& path);

// Where the plugin is expected next to the running tool (build tree or install prefix), or "".
std::string defaultPluginPath();

}  // namespace symmem

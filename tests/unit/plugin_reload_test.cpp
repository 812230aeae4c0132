// SPDX-License-Identifier: Apache-2.0
// NCCL loads its tuner at a communicator's creation and unloads it after the last one (finalize +
// dlclose): a job that creates communicators one after another loads the plugin again and again.
// With attach off nothing keeps it mapped, so whatever it allocated must go with it.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "plugin/tuner_abi.h"
#include "tests/unit/forked_check.h"

namespace {

void quiet(int, unsigned long, const char*, int, const char*, ...) {}

long residentKiB() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (f) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * 4;
}

// One cycle as NCCL makes it: dlopen, init, finalize, dlclose. False: the plugin did not load.
bool loadInitFinalizeUnload() {
  void* lib = dlopen(SYMMEM_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  const auto* v5 = lib ? static_cast<const symmem::abi::TunerV5*>(dlsym(lib, "ncclTunerPlugin_v5")) : nullptr;
  void* ctx = nullptr;
  const bool ok = v5 && v5->init(&ctx, 42, 2, 1, quiet, nullptr, nullptr) == symmem::abi::kSuccess;
  if (v5) v5->finalize(ctx);
  if (lib) dlclose(lib);
  return ok;
}

TEST(PluginReload, ThreeHundredLoadsWithAttachOffKeepResidentMemoryFlat) {
  const std::string problems = symmem::testing::runForkedCheck([]() -> std::string {
    setenv("SYMMEM_ATTACH", "0", 1);
    for (int i = 0; i < 50; ++i)  // what stays for good (libraries the plugin loads once) is in by now
      if (!loadInitFinalizeUnload()) return "the plugin did not load\n";
    const long before = residentKiB();
    for (int i = 0; i < 250; ++i)
      if (!loadInitFinalizeUnload()) return "the plugin did not load\n";
    const long grown = residentKiB() - before;
    std::printf("[ info ] resident memory over 250 load/unload cycles: %+ld KiB\n", grown);
    std::fflush(stdout);
    // 115 KiB a cycle would be 28 MiB; allocator noise stays far below 2 MiB.
    return grown < 2048 ? "" : "resident memory grew by " + std::to_string(grown) + " KiB over 250 cycles\n";
  });
  EXPECT_EQ(problems, "");
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// NCCL loads its tuner at a communicator's creation and unloads it after the last one (finalize +
// dlclose): a job that creates communicators one after another loads the plugin again and again.
// With attach off nothing keeps it mapped, so whatever it allocated must go with it, and what it set
// up outside itself must be given back or set up once for the process: NVML, which the driver's
// library does not fully give back at a shutdown, stays initialised once for the process
// (topology/nvml_library.cpp), every other init of it is shut down at unload.
//
// The GPU machine's case runs here too: a stand-in libnvidia-ml.so.1 (tests/unit/fake_nvml/), loaded
// before the plugin, answers for one GPU and keeps memory at every full set-up, as the driver's does.
//
// A build with libstdc++ linked in (some toolchains link it into every shared object; the GPU
// machine's did) cannot unload cleanly: that runtime's load allocates its emergency exception pool,
// which no unload frees (72 KiB a load with GCC 13: 18 MiB over 250 reloads there). Such a build pins
// itself at its first init; nccl-tuner-symmem-own-runtime is the plugin built that way.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "plugin/nccl/tuner_abi.h"
#include "symmem/fake_nvml_path.h"
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
bool loadInitFinalizeUnload(const char* plugin = SYMMEM_PLUGIN_PATH) {
  void* lib = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
  const auto* v5 = lib ? static_cast<const symmem::abi::TunerV5*>(dlsym(lib, "ncclTunerPlugin_v5")) : nullptr;
  void* ctx = nullptr;
  const bool ok = v5 && v5->init(&ctx, 42, 2, 1, quiet, nullptr, nullptr) == symmem::abi::kSuccess;
  if (v5) v5->finalize(ctx);
  if (lib) dlclose(lib);
  return ok;
}

bool pluginMapped(const char* plugin = SYMMEM_PLUGIN_PATH) {
  void* h = dlopen(plugin, RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != nullptr;
}

// 50 cycles to settle (what stays for good, libraries the plugin loads once, is in by then), then the
// growth of resident memory over 250 more. "" when it stays flat.
std::string residentGrowthOverCycles(const char* plugin = SYMMEM_PLUGIN_PATH) {
  for (int i = 0; i < 50; ++i)
    if (!loadInitFinalizeUnload(plugin)) return "the plugin did not load\n";
  const long before = residentKiB();
  for (int i = 0; i < 250; ++i)
    if (!loadInitFinalizeUnload(plugin)) return "the plugin did not load\n";
  const long grown = residentKiB() - before;
  std::printf("[ info ] resident memory over 250 load/unload cycles: %+ld KiB\n", grown);
  std::fflush(stdout);
  // 72 KiB a cycle (NVML set up afresh at every load) would be 18 MiB; allocator noise stays far below 2 MiB.
  return grown < 2048 ? "" : "resident memory grew by " + std::to_string(grown) + " KiB over 250 cycles\n";
}

// Whether the shared object `path` needs the shared C++ runtime (a DT_NEEDED libstdc++), read from
// its dynamic section once loaded; in a child, so that this process does not load the plugin. A
// plugin that cannot be loaded counts as needing it: the tests then run, and fail saying why.
bool needsTheSharedCxxRuntime(const char* path) {
  const std::string answer = symmem::testing::runForkedCheck([path]() -> std::string {
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    link_map* map = nullptr;
    if (!lib || dlinfo(lib, RTLD_DI_LINKMAP, &map) != 0 || !map) return "cannot load";
    const char* strings = nullptr;
    for (const ElfW(Dyn)* d = map->l_ld; d->d_tag != DT_NULL; ++d)
      if (d->d_tag == DT_STRTAB) strings = reinterpret_cast<const char*>(d->d_un.d_ptr);
    for (const ElfW(Dyn)* d = map->l_ld; strings && d->d_tag != DT_NULL; ++d)
      if (d->d_tag == DT_NEEDED && std::strncmp(strings + d->d_un.d_val, "libstdc++.so", 12) == 0) return "";
    return "no";
  });
  return answer != "no";
}

TEST(PluginReload, ThreeHundredLoadsWithAttachOffKeepResidentMemoryFlat) {
  const std::string problems = symmem::testing::runForkedCheck([]() -> std::string {
    setenv("SYMMEM_ATTACH", "0", 1);
    return residentGrowthOverCycles();
  });
  EXPECT_EQ(problems, "");
}

// Built with libstdc++ linked in, the plugin stays loaded from its first init on (attach off: nothing
// else pins it), so that runtime's load-time memory is kept once, not once per reload.
TEST(PluginReload, ABuildCarryingItsOwnCxxRuntimeStaysLoadedAndFlat) {
  if (std::string(SYMMEM_OWN_RUNTIME_PLUGIN_PATH).empty())
    GTEST_SKIP() << "no nccl-tuner-symmem-own-runtime in a sanitizer build";
  ASSERT_FALSE(needsTheSharedCxxRuntime(SYMMEM_OWN_RUNTIME_PLUGIN_PATH)) << "the test's build links libstdc++ in";
  const std::string problems = symmem::testing::runForkedCheck([]() -> std::string {
    setenv("SYMMEM_ATTACH", "0", 1);
    if (!loadInitFinalizeUnload(SYMMEM_OWN_RUNTIME_PLUGIN_PATH)) return "the plugin did not load\n";
    std::string out;
    if (!pluginMapped(SYMMEM_OWN_RUNTIME_PLUGIN_PATH)) out += "unloaded after its first init\n";
    return out + residentGrowthOverCycles(SYMMEM_OWN_RUNTIME_PLUGIN_PATH);
  });
  EXPECT_EQ(problems, "");
}

// ---- With the stand-in NVML ----

struct NvmlCounts {
  int inits = 0, shutdowns = 0, setUps = 0, tearDowns = 0;
};
using CountsFn = void (*)(int*, int*, int*, int*);

// The stand-in's counts, through the handle the test holds.
NvmlCounts countsOf(CountsFn counts) {
  NvmlCounts c;
  counts(&c.inits, &c.shutdowns, &c.setUps, &c.tearDowns);
  return c;
}

std::string describe(const NvmlCounts& c) {
  return std::to_string(c.inits) + " inits, " + std::to_string(c.shutdowns) + " shutdowns, " +
         std::to_string(c.setUps) + " set-ups, " + std::to_string(c.tearDowns) + " tear-downs";
}

class PluginReloadWithNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!needsTheSharedCxxRuntime(SYMMEM_PLUGIN_PATH))
      GTEST_SKIP() << "this build of the plugin carries its own C++ runtime, so it stays loaded after its first init: "
                      "there are no reloads to check (PluginReload.ABuildCarryingItsOwnCxxRuntimeStaysLoadedAndFlat)";
    // The plugin must find the stand-in under NVML's soname. A process that loaded the driver's
    // library already (an earlier test of the same run, on a GPU machine) would hand it that one.
    if (void* loaded = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD)) {
      const bool standIn = dlsym(loaded, "symmemFakeNvmlCounts") != nullptr;
      dlclose(loaded);
      if (!standIn)
        GTEST_SKIP() << "libnvidia-ml.so.1 of the driver is loaded in this process already; run this test in a "
                        "process of its own (as ctest does)";
    }
  }

  // Runs `check` in a forked child whose NVML is the stand-in, with attach off (nothing pins the plugin).
  static std::string inChildWithStandIn(const std::function<std::string(CountsFn)>& check) {
    return symmem::testing::runForkedCheck([&check]() -> std::string {
      setenv("SYMMEM_ATTACH", "0", 1);
      void* nvml = dlopen(SYMMEM_FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
      const auto counts = nvml ? reinterpret_cast<CountsFn>(dlsym(nvml, "symmemFakeNvmlCounts")) : nullptr;
      if (!counts) return std::string("cannot load the stand-in NVML ") + SYMMEM_FAKE_NVML_PATH + "\n";
      void* asThePluginAsks = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
      if (asThePluginAsks != nvml) return "libnvidia-ml.so.1 is not the stand-in in this process\n";
      dlclose(asThePluginAsks);
      return check(counts);
    });
  }
};

// The GPU machine's case: NVML answers, and a full set-up of it costs memory the tear-down keeps.
TEST_F(PluginReloadWithNvml, ThreeHundredLoadsKeepResidentMemoryFlat) {
  const std::string problems = inChildWithStandIn([](CountsFn counts) -> std::string {
    std::string out = residentGrowthOverCycles();
    const NvmlCounts c = countsOf(counts);
    if (c.inits != 300) out += "the plugin did not ask NVML at every load (" + describe(c) + ")\n";
    if (c.setUps != 1 || c.tearDowns != 0) out += "NVML was set up more than once (" + describe(c) + ")\n";
    return out;
  });
  EXPECT_EQ(problems, "");
}

TEST_F(PluginReloadWithNvml, EveryInitButTheOneKeptForTheProcessIsShutDownAndThePluginUnloads) {
  const std::string problems = inChildWithStandIn([](CountsFn counts) -> std::string {
    std::string out;
    for (int i = 1; i <= 5; ++i) {
      if (!loadInitFinalizeUnload()) return "the plugin did not load\n";
      if (pluginMapped()) out += "cycle " + std::to_string(i) + ": the plugin stayed loaded\n";
      const NvmlCounts c = countsOf(counts);
      if (c.inits != i || c.shutdowns != i - 1 || c.setUps != 1)
        out += "cycle " + std::to_string(i) + ": " + describe(c) + "; want " + std::to_string(i) + " inits, " +
               std::to_string(i - 1) + " shutdowns, 1 set-up\n";
    }
    return out;
  });
  EXPECT_EQ(problems, "");
}

TEST_F(PluginReloadWithNvml, AnNvmlTheApplicationInitialisedIsLeftAsFound) {
  const std::string problems = inChildWithStandIn([](CountsFn counts) -> std::string {
    void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
    const auto init = nvml ? reinterpret_cast<int (*)()>(dlsym(nvml, "nvmlInit_v2")) : nullptr;
    const auto shutdown = nvml ? reinterpret_cast<int (*)()>(dlsym(nvml, "nvmlShutdown")) : nullptr;
    if (!init || !shutdown || init() != 0) return "cannot initialise the stand-in NVML\n";
    for (int i = 0; i < 5; ++i)
      if (!loadInitFinalizeUnload()) return "the plugin did not load\n";
    NvmlCounts c = countsOf(counts);
    std::string out;
    if (c.inits != 6 || c.shutdowns != 5) out += "the plugin kept an NVML it found initialised: " + describe(c) + "\n";
    shutdown();  // the application's
    c = countsOf(counts);
    if (c.setUps != 1 || c.tearDowns != 1) out += "NVML not torn down by its owner's shutdown: " + describe(c) + "\n";
    dlclose(nvml);
    return out;
  });
  EXPECT_EQ(problems, "");
}

}  // namespace

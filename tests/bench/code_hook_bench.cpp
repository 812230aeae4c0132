// SPDX-License-Identifier: Apache-2.0
// What a code hook adds to every call: a call through a pointer cached before the hook, to a function
// of tests/hook_fixture/hook_shapes.S, unhooked and hooked (jump, relay, a replacement that forwards
// through the trampoline). A benchmark, not a test: it reports, it does not pass or fail.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstddef>
#include <cstdint>

#include "plugin/hooks/code_hook.h"

#if __has_include("symmem/hook_fixture_paths.h") && defined(__x86_64__)
#include "symmem/hook_fixture_paths.h"

namespace {

using Seven = long (*)(long, long, long, long, long, long, long);
Seven gOriginal = nullptr;

long replacement(long a, long b, long c, long d, long e, long f, long g) { return gOriginal(a, b, c, d, e, f, g); }
void remember(void*, void* to) { gOriginal = reinterpret_cast<Seven>(to); }

Seven fixture() {
  static Seven seven = [] {
    void* lib = dlopen(SYMMEM_HOOK_SHAPES_PATH, RTLD_NOW | RTLD_LOCAL);
    return lib ? reinterpret_cast<Seven>(dlsym(lib, "shapeSeven")) : nullptr;
  }();
  return seven;
}

void run(benchmark::State& state, bool hooked) {
  Seven seven = fixture();
  if (!seven) {
    state.SkipWithError("hook fixture not loadable");
    return;
  }
  const symmem::CodeHook hook{"shapeSeven", reinterpret_cast<void*>(seven), reinterpret_cast<void*>(&replacement)};
  symmem::CodeHookOptions options;
  options.retarget = &remember;
  if (hooked && !symmem::installCodeHooks({&hook, 1}, options).installed) {
    state.SkipWithError("hook refused");
    return;
  }
  long x = 1;
  for (auto _ : state) {
    x = seven(x & 0xff, 1, 2, 3, 4, 5, 6);
    benchmark::DoNotOptimize(x);
  }
  symmem::undoCodeHooks();
}

void BM_CallUnhooked(benchmark::State& state) { run(state, false); }
void BM_CallHooked(benchmark::State& state) { run(state, true); }
BENCHMARK(BM_CallUnhooked);
BENCHMARK(BM_CallHooked);

// An NCCL call the plugin does not change: NCCL's own ncclCommGetAsyncError through its PLT (as every
// enqueue's readiness check makes it), in the stand-in libnccl, before the plugin loads and after it
// hooked libnccl (those calls then go straight to the trampoline). Beside it, an application's call
// of the same function, which does pass the plugin.
struct StandIn {
  int (*fromInside)(void*) = nullptr;
  int (*fromOutside)(void*, int*) = nullptr;
};
StandIn& standIn() {
  static StandIn s = [] {
    StandIn r;
    void* lib = dlopen(SYMMEM_STAND_IN_NCCL_PATH, RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      r.fromInside = reinterpret_cast<int (*)(void*)>(dlsym(lib, "standInAsyncErrorFromInside"));
      r.fromOutside = reinterpret_cast<int (*)(void*, int*)>(dlsym(lib, "ncclCommGetAsyncError"));
    }
    return r;
  }();
  return s;
}

void quietLog(int, unsigned long, const char*, int, const char*, ...) {}

bool pluginLoadedAsTuner() {
  static const bool loaded = [] {
    using Init = int (*)(void**, uint64_t, size_t, size_t, decltype(&quietLog), void*, void*);
    struct V5 {
      const char* name;
      Init init;
      void* getCollInfo;
      void* finalize;
    };
    void* lib = dlopen(SYMMEM_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    const auto* v5 = lib ? static_cast<const V5*>(dlsym(lib, "ncclTunerPlugin_v5")) : nullptr;
    void* ctx = nullptr;
    return v5 && v5->init(&ctx, 7, 2, 1, &quietLog, nullptr, nullptr) == 0;
  }();
  return loaded;
}

void BM_NcclOwnCallUnhooked(benchmark::State& state) {
  if (!standIn().fromInside) return state.SkipWithError("stand-in not loadable");
  for (auto _ : state) benchmark::DoNotOptimize(standIn().fromInside(nullptr));
}
void BM_NcclOwnCallHooked(benchmark::State& state) {
  if (!standIn().fromInside || !pluginLoadedAsTuner()) return state.SkipWithError("plugin not loadable");
  for (auto _ : state) benchmark::DoNotOptimize(standIn().fromInside(nullptr));
}
void BM_ApplicationCallHooked(benchmark::State& state) {
  if (!standIn().fromOutside || !pluginLoadedAsTuner()) return state.SkipWithError("plugin not loadable");
  int e = 0;
  for (auto _ : state) benchmark::DoNotOptimize(standIn().fromOutside(nullptr, &e));
}
BENCHMARK(BM_NcclOwnCallUnhooked);
BENCHMARK(BM_NcclOwnCallHooked);
BENCHMARK(BM_ApplicationCallHooked);

}  // namespace
#endif

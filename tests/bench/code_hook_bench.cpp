// SPDX-License-Identifier: Apache-2.0
// What a code hook adds to every call: a call through a pointer cached before the hook, to a function
// of tests/hook_fixture/hook_shapes.S, unhooked and hooked (jump, relay, a replacement that forwards
// through the trampoline). A benchmark, not a test: it reports, it does not pass or fail.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include "plugin/code_hook.h"

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

}  // namespace
#endif

// SPDX-License-Identifier: Apache-2.0
// The plugin's code hooks end to end, on CPU: a stand-in libnccl.so.2 (tests/hook_fixture) whose entry
// points start the way real NCCL builds do; a caller that caches dlsym pointers into it before the
// plugin exists (as vLLM's and SGLang's pynccl do); then the plugin loads as NCCL loads it, and the
// cached pointers must reach the interposer and forward with arguments and results intact. Then NCCL's
// unload of the tuner (finalize + dlclose, also from inside an abort) must leave every hooked entry
// point working. Each scenario runs in a forked child: hooks are process-wide.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "plugin/nccl/tuner_abi.h"
#include "tests/hook_fixture/stand_in_record.h"
#include "tests/unit/forked_check.h"
#include "tests/unit/hook_fixture.h"
#include "tests/unit/nccl_releases.h"

namespace {

using AllReduceFn = int (*)(const void*, void*, size_t, int, int, void*, void*);
using CommFn = int (*)(void*);
using RevokeFn = int (*)(void*, int);
using VoidFn = int (*)();

constexpr int kFloat32 = 7, kSum = 0, kRemoteError = 6;
void* const kComm = reinterpret_cast<void*>(0x3000);
void* const kSend = reinterpret_cast<void*>(0x1000);
void* const kRecv = reinterpret_cast<void*>(0x2000);

std::vector<std::string> gLog;
std::vector<std::string> gProblems;
#define CHILD_CHECK(cond, msg)                                           \
  do {                                                                   \
    if (!(cond)) gProblems.push_back(std::string(msg) + " [" #cond "]"); \
  } while (0)

void captureLog(int level, unsigned long, const char*, int, const char* fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  gLog.push_back(std::to_string(level) + ": " + buf);
}

int logCount(const std::string& needle) {
  int n = 0;
  for (const std::string& l : gLog) n += l.find(needle) != std::string::npos;
  return n;
}

// The caller: pointers into the stand-in, taken before any plugin is loaded.
struct Caller {
  void* nccl = nullptr;
  AllReduceFn allReduce = nullptr, pAllReduce = nullptr;
  VoidFn groupStart = nullptr, groupEnd = nullptr;
  CommFn destroy = nullptr, abort = nullptr, finalize = nullptr;
  RevokeFn revoke = nullptr;
  int (*asyncError)(void*, int*) = nullptr;
  int (*asyncErrorFromInside)(void*) = nullptr;
  int (*allReduceConfig)(const void*, void*, size_t, int, int, void*, void*, const void*) = nullptr;
  int (*simulateEnd)(void*) = nullptr;
  StandInRecord* record = nullptr;
  int (*groupStartCount)() = nullptr;
  void (*setAbortCallback)(void (*)()) = nullptr;

  symmem::abi::Logger log = nullptr;  // the stand-in's logger, as NCCL hands its own to the tuner
  const char* (*logText)() = nullptr;

  bool open(const char* path = SYMMEM_STAND_IN_NCCL_PATH) {
    nccl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!nccl) return false;
    auto get = [&](const char* name, auto& out) {
      out = reinterpret_cast<std::remove_reference_t<decltype(out)>>(dlsym(nccl, name));
      return out != nullptr;
    };
    StandInRecord* (*recordFn)() = nullptr;
    const bool ok =
        get("ncclAllReduce", allReduce) && get("pncclAllReduce", pAllReduce) && get("ncclGroupStart", groupStart) &&
        get("ncclGroupEnd", groupEnd) && get("ncclCommDestroy", destroy) && get("ncclCommAbort", abort) &&
        get("ncclCommFinalize", finalize) && get("ncclCommRevoke", revoke) && get("standInRecord", recordFn) &&
        get("standInGroupStartCount", groupStartCount) && get("standInSetAbortCallback", setAbortCallback) &&
        get("ncclCommGetAsyncError", asyncError) && get("standInAsyncErrorFromInside", asyncErrorFromInside) &&
        get("ncclAllReduceConfig", allReduceConfig) && get("ncclGroupSimulateEnd", simulateEnd) &&
        get("standInLog", log) && get("standInLogText", logText);
    if (ok) record = recordFn();
    return ok;
  }
};

// The plugin, driven as NCCL drives it.
struct Tuner {
  void* lib = nullptr;
  const symmem::abi::TunerV5* v5 = nullptr;
  void* ctx = nullptr;

  bool load() {
    lib = dlopen(SYMMEM_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    v5 = lib ? static_cast<const symmem::abi::TunerV5*>(dlsym(lib, "ncclTunerPlugin_v5")) : nullptr;
    return v5 && v5->init(&ctx, 42, 2, 1, captureLog, nullptr, nullptr) == symmem::abi::kSuccess;
  }
  void unload() {  // what NCCL does after the last communicator
    if (v5) v5->finalize(ctx);
    if (lib) dlclose(lib);
    lib = nullptr;
    v5 = nullptr;
  }
};

bool pluginMapped() {
  void* h = dlopen(SYMMEM_PLUGIN_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != nullptr;
}

// Loads things and maps memory where an unmapped plugin used to be.
void takeTheOldAddresses() {
  dlopen(SYMMEM_HOOK_SHAPES_PATH, RTLD_NOW | RTLD_LOCAL);
  for (int i = 0; i < 16; ++i) {
    void* p = mmap(nullptr, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) std::memset(p, 0xcc, 4096);  // int3 everywhere: a jump here would trap
  }
}

// Every entry point the plugin took over, through the cached pointers; `interposed`: each call must
// show in the plugin's trace; either way it must reach the stand-in with its arguments.
void callEveryEntryPoint(const Caller& c, bool interposed, const std::string& when) {
  const StandInRecord before = *c.record;
  const int tracesBefore = logCount("allreduce 5 elements on comm 0x3000: NCCL");
  const int groupTracesBefore = logCount("group start");
  CHILD_CHECK(c.allReduce(kSend, kRecv, 5, kFloat32, kSum, kComm, nullptr) == kRemoteError, when + ": result lost");
  CHILD_CHECK(c.pAllReduce(kSend, kRecv, 5, kFloat32, kSum, kComm, nullptr) == kRemoteError, when + ": result lost");
  CHILD_CHECK(c.record->allReduces == before.allReduces + 2, when + ": each all-reduce reaches NCCL once");
  CHILD_CHECK(c.record->send == kSend && c.record->recv == kRecv && c.record->count == 5 &&
                  c.record->dtype == kFloat32 && c.record->op == kSum && c.record->comm == kComm &&
                  c.record->stream == nullptr,
              when + ": arguments changed on the way");
  CHILD_CHECK(c.groupStart() == 0 && c.groupEnd() == 0, when + ": group calls failed");
  CHILD_CHECK(c.record->groupStartBodies == before.groupStartBodies + 1, when + ": group start lost");
  CHILD_CHECK(c.groupStartCount() == before.groupStartBodies + 1,
              when + ": the moved RIP-relative lea counted somewhere else");
  CHILD_CHECK(c.record->groupEnds == before.groupEnds + 1, when + ": group end lost");
  CHILD_CHECK(c.finalize(kComm) == 0 && c.revoke(kComm, 3) == 0 && c.destroy(kComm) == 0,
              when + ": teardown calls failed");
  CHILD_CHECK(c.record->finalizes == before.finalizes + 1 && c.record->revokes == before.revokes + 1 &&
                  c.record->revokeFlags == 3 && c.record->destroys == before.destroys + 1,
              when + ": teardown calls lost");
  const int traces = logCount("allreduce 5 elements on comm 0x3000: NCCL") - tracesBefore;
  const int groupTraces = logCount("group start") - groupTracesBefore;
  CHILD_CHECK(traces == (interposed ? 2 : 0), when + ": " + std::to_string(traces) + " all-reduces seen by the plugin");
  CHILD_CHECK(groupTraces == (interposed ? 1 : 0), when + ": group start seen " + std::to_string(groupTraces) + "x");
}

std::string runInChild(const std::map<std::string, std::string>& env, const std::function<void()>& body) {
  return symmem::testing::runForkedCheck([&] {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    body();
    std::string out;
    for (const std::string& p : gProblems) out += "problem: " + p + "\n";
    if (!gProblems.empty())
      for (const std::string& l : gLog) out += "  log " + l + "\n";
    return out;
  });
}

const std::map<std::string, std::string> kTrace = {{"SYMMEM_LOG", "trace"}};

// A child with the caller's pointers cached and the plugin then loaded as NCCL's tuner, with `extraEnv`
// on top of trace logging; `body` checks what follows.
std::string withCallerAndTuner(const std::map<std::string, std::string>& extraEnv,
                               const std::function<void(Caller&, Tuner&)>& body) {
  auto env = kTrace;
  env.insert(extraEnv.begin(), extraEnv.end());
  return runInChild(env, [&] {
    Caller c;
    CHILD_CHECK(c.open(), "stand-in libnccl.so.2 not loadable");
    if (!gProblems.empty()) return;
    Tuner t;
    CHILD_CHECK(t.load(), "the plugin did not load as NCCL loads it");
    if (gProblems.empty()) body(c, t);
  });
}

class PluginHooks : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string unavailable = symmem::testing::codeHooksUnavailable();
    if (!unavailable.empty()) GTEST_SKIP() << unavailable;
  }
};

// The GOT fallback needs only the stand-in: these run in a build without code hooks too.
class PluginGotFallback : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string unavailable = symmem::testing::hookFixtureUnavailable();
    if (!unavailable.empty()) GTEST_SKIP() << unavailable;
  }
};

// Tuner abort of the last communicator: NCCL finalizes and dlcloses the tuner inside ncclCommAbort,
// so the interposer's commAbort returns into a plugin NCCL has just closed.
Tuner* gAbortTuner = nullptr;
void unloadTunerInsideAbort() { gAbortTuner->unload(); }

TEST_F(PluginHooks, CachedPointersReachThePluginAndSurviveItsUnload) {
  const std::string problems = runInChild(kTrace, [] {
    Caller c;
    CHILD_CHECK(c.open(), "stand-in libnccl.so.2 not loadable");
    if (!gProblems.empty()) return;
    callEveryEntryPoint(c, /*interposed=*/false, "before the plugin loads");
    Tuner t;
    CHILD_CHECK(t.load(), "the plugin did not load as NCCL loads it");
    if (!gProblems.empty()) return;
    void* nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    CHILD_CHECK(nccl == c.nccl, "the plugin bound to another libnccl.so.2 than the stand-in");
    CHILD_CHECK(logCount("hooked 10 libnccl entry points") == 1, "no hook line");
    CHILD_CHECK(logCount("stays loaded for the life of the process") == 1, "no pin line");
    callEveryEntryPoint(c, true, "hooked");
    // Inside a group the all-reduce goes to NCCL (and is seen going there).
    c.groupStart();
    CHILD_CHECK(c.allReduce(kSend, kRecv, 5, kFloat32, kSum, kComm, nullptr) == kRemoteError, "grouped call");
    c.groupEnd();

    t.unload();
    CHILD_CHECK(pluginMapped(), "NCCL's dlclose unmapped the plugin while hooked code leads into it");
    takeTheOldAddresses();
    callEveryEntryPoint(c, true, "after NCCL unloaded the tuner");

    // A second communicator: the tuner loads again; nothing is hooked twice.
    CHILD_CHECK(t.load(), "the plugin did not load a second time");
    CHILD_CHECK(logCount("hooked 10 libnccl entry points") == 1, "hooked again");
    callEveryEntryPoint(c, true, "second load");
    // Abort of the last communicator, with NCCL unloading the tuner inside it.
    gAbortTuner = &t;
    c.setAbortCallback(&unloadTunerInsideAbort);
    CHILD_CHECK(c.abort(kComm) == 0, "abort failed");
    CHILD_CHECK(c.record->aborts == 1 && c.record->lastTeardownComm == kComm, "abort lost");
    CHILD_CHECK(logCount("abort comm 0x3000") == 1, "the abort did not pass the plugin");
    c.setAbortCallback(nullptr);
    takeTheOldAddresses();
    callEveryEntryPoint(c, true, "after the last communicator was aborted");
  });
  EXPECT_EQ(problems, "");
}

// What XLA does: its own dlsym'd pointers, every collective inside its own group; and NCCL 2.31's
// ncclAllReduceConfig: plain configurations are decided like ncclAllReduce, forcing ones reach NCCL
// with their configuration, and a simulated group end reaches NCCL's.
TEST_F(PluginHooks, GroupedCallsAndTheConfigEntryPointReachThePlugin) {
  const std::string problems = withCallerAndTuner({}, [](Caller& c, Tuner&) {
    CHILD_CHECK(logCount("hooked 10 libnccl entry points") == 1, "the 2.31 entry points were not hooked");
    const StandInRecord before = *c.record;
    for (int i = 0; i < 3; ++i) {
      CHILD_CHECK(c.groupStart() == 0, "group start");
      CHILD_CHECK(c.allReduce(kSend, kRecv, 5, kFloat32, kSum, kComm, nullptr) == kRemoteError,
                  "a grouped call's result is NCCL's");
      CHILD_CHECK(c.groupEnd() == 0, "group end");
    }
    CHILD_CHECK(c.record->allReduces == before.allReduces + 3, "grouped all-reduces lost");
    CHILD_CHECK(logCount("group start (depth 0)") == 3 && logCount("group end (depth 1)") == 3,
                "the groups did not pass the plugin");
    CHILD_CHECK(logCount("allreduce 5 elements on comm 0x3000: NCCL") == 3, "grouped calls not seen");

    // A configuration asking nothing: decided like ncclAllReduce (here: NCCL, one rank).
    struct {
      size_t size;
      unsigned magic, version;
      void* ext;
      int minCTAs, maxCTAs, nvlsCTAs, cga;
      const char* alg;
      int force, policy;
      unsigned long long tag;
      void* event;
    } config = {72, 0xcafebeef, 23200, nullptr, INT_MIN, INT_MIN, INT_MIN, INT_MIN, nullptr, 1, INT_MIN, 7, nullptr};
    CHILD_CHECK(c.allReduceConfig(kSend, kRecv, 5, kFloat32, kSum, kComm, nullptr, &config) == kRemoteError,
                "config call's result lost");
    CHILD_CHECK(c.record->allReduceConfigs == before.allReduceConfigs + 1 && c.record->config == &config &&
                    c.record->count == 5 && c.record->comm == kComm,
                "a plain configured call did not reach NCCL's ncclAllReduceConfig with its configuration");
    CHILD_CHECK(logCount("allreduce 5 elements on comm 0x3000: NCCL") == 4,
                "the plain configured call was not decided");
    // One forcing an algorithm goes to NCCL unchanged, and says why.
    config.alg = "RING";
    CHILD_CHECK(c.allReduceConfig(kSend, kRecv, 5, kFloat32, kSum, kComm, nullptr, &config) == kRemoteError,
                "forced config call's result lost");
    CHILD_CHECK(c.record->allReduceConfigs == before.allReduceConfigs + 2, "the forced call did not reach NCCL");
    CHILD_CHECK(logCount("allreduce with a configuration (an algorithm selection) on comm 0x3000: NCCL") == 1,
                "the forced call was not seen going to NCCL");
    // A simulated end closes the plugin's group too: the next group starts at depth 0.
    CHILD_CHECK(c.groupStart() == 0 && c.simulateEnd(nullptr) == 0, "simulated group");
    CHILD_CHECK(c.record->simulateEnds == before.simulateEnds + 1, "the simulated end did not reach NCCL");
    CHILD_CHECK(c.groupStart() == 0 && c.groupEnd() == 0, "group after a simulated one");
    CHILD_CHECK(logCount("group start (depth 0)") == 5, "a simulated end left the plugin's group open");
  });
  EXPECT_EQ(problems, "");
}

TEST_F(PluginHooks, AttachOffLeavesCallersAloneAndThePluginUnloadable) {
  const std::string problems = withCallerAndTuner({{"SYMMEM_ATTACH", "0"}}, [](Caller& c, Tuner& t) {
    CHILD_CHECK(logCount("hooked") == 0, "hooked although SYMMEM_ATTACH=0");
    callEveryEntryPoint(c, false, "attach off");
    t.unload();
    // A build with libstdc++ linked in stays loaded for that runtime's sake, and says so (docs/attach.md).
    CHILD_CHECK(!pluginMapped() || logCount("carries its own C++ runtime") == 1,
                "pinned although nothing points into it");
    callEveryEntryPoint(c, false, "attach off, unloaded");
  });
  EXPECT_EQ(problems, "");
}

// Every mapping of the object at `path` (as /proc/self/maps names it), each as its address range and
// permissions followed by its bytes where it can be read: code, read-only data, the GOT and the data
// of that object. A code hook, a GOT slot written or a protection changed shows as a difference.
std::vector<std::string> imageOf(const std::string& path) {
  std::vector<std::string> image;
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (!maps) return image;
  char line[4096];
  while (std::fgets(line, sizeof(line), maps)) {
    unsigned long start = 0, end = 0;
    char perms[8] = {};
    int pathAt = 0;
    if (std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end, perms, &pathAt) < 3 || pathAt == 0) continue;
    std::string mapped = line + pathAt;
    while (!mapped.empty() && (mapped.back() == '\n' || mapped.back() == ' ')) mapped.pop_back();
    if (mapped != path) continue;
    std::string entry = std::string(line, static_cast<size_t>(pathAt));
    if (perms[0] == 'r') entry.append(reinterpret_cast<const char*>(start), end - start);
    image.push_back(std::move(entry));
  }
  std::fclose(maps);
  return image;
}

// The entry points the code hooks patch, as the caller holds them, with the first bytes of each.
std::vector<std::pair<std::string, std::string>> entryBytes(const Caller& c) {
  const std::pair<const char*, const void*> points[] = {
      {"ncclAllReduce", reinterpret_cast<const void*>(c.allReduce)},
      {"pncclAllReduce", reinterpret_cast<const void*>(c.pAllReduce)},
      {"ncclGroupStart", reinterpret_cast<const void*>(c.groupStart)},
      {"ncclGroupEnd", reinterpret_cast<const void*>(c.groupEnd)},
      {"ncclCommDestroy", reinterpret_cast<const void*>(c.destroy)},
      {"ncclCommAbort", reinterpret_cast<const void*>(c.abort)},
      {"ncclCommFinalize", reinterpret_cast<const void*>(c.finalize)},
      {"ncclCommRevoke", reinterpret_cast<const void*>(c.revoke)},
      {"ncclCommGetAsyncError", reinterpret_cast<const void*>(c.asyncError)},
      {"ncclAllReduceConfig", reinterpret_cast<const void*>(c.allReduceConfig)},
      {"ncclGroupSimulateEnd", reinterpret_cast<const void*>(c.simulateEnd)}};
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, at] : points) out.emplace_back(name, std::string(static_cast<const char*>(at), 32));
  return out;
}

// The off switch: with SYMMEM_ENABLE=0 the plugin, loaded as NCCL's tuner, leaves every byte of
// libnccl as it was (entry points, the rest of its code, its GOT and data, the protections), pins
// nothing, and the cached pointers stay on NCCL.
TEST_F(PluginGotFallback, DisabledLeavesEveryByteOfLibncclAsItWas) {
  const std::string problems = runInChild({{"SYMMEM_ENABLE", "0"}, {"SYMMEM_LOG", "trace"}}, [] {
    Caller c;
    CHILD_CHECK(c.open(), "stand-in libnccl.so.2 not loadable");
    if (!gProblems.empty()) return;
    const std::string libnccl = std::filesystem::canonical(SYMMEM_STAND_IN_NCCL_PATH).string();
    const std::vector<std::string> imageBefore = imageOf(libnccl);
    const auto entriesBefore = entryBytes(c);
    CHILD_CHECK(imageBefore.size() >= 2, "the stand-in's mappings were not found in /proc/self/maps");
    Tuner t;
    CHILD_CHECK(t.load(), "the plugin did not load as NCCL loads it");
    if (!gProblems.empty()) return;
    // A second communicator: attach is tried at every tuner init.
    void* second = nullptr;
    CHILD_CHECK(t.v5->init(&second, 43, 2, 1, captureLog, nullptr, nullptr) == symmem::abi::kSuccess,
                "second init failed");
    const auto entriesAfter = entryBytes(c);
    for (size_t i = 0; i < entriesBefore.size(); ++i)
      CHILD_CHECK(entriesBefore[i] == entriesAfter[i], entriesBefore[i].first + ": its bytes changed");
    const std::vector<std::string> imageAfter = imageOf(libnccl);
    CHILD_CHECK(imageAfter.size() == imageBefore.size(), "libnccl's mappings changed in number");
    for (size_t i = 0; i < std::min(imageBefore.size(), imageAfter.size()); ++i)
      CHILD_CHECK(
          imageBefore[i] == imageAfter[i],
          "libnccl changed in " + imageBefore[i].substr(0, imageBefore[i].find(' ', imageBefore[i].find(' ') + 1)));
    CHILD_CHECK(logCount("SYMMEM_ENABLE=0: libnccl left untouched") == 1, "no line for the off switch");
    CHILD_CHECK(logCount("hooked") == 0 && logCount("stays loaded") == 0, "attached although SYMMEM_ENABLE=0");
    callEveryEntryPoint(c, false, "disabled");
    t.v5->finalize(second);
    t.unload();
    CHILD_CHECK(!pluginMapped() || logCount("carries its own C++ runtime") == 1, "pinned although SYMMEM_ENABLE=0");
  });
  EXPECT_EQ(problems, "");
}

TEST_F(PluginGotFallback, HooksOffMeansGotAttachOnly) {
  const std::string problems = withCallerAndTuner({{"SYMMEM_HOOKS", "0"}}, [](Caller& c, Tuner& t) {
    CHILD_CHECK(logCount("code hooks off (SYMMEM_HOOKS=0): GOT attach only") == 1, "no line for hooks off");
    // dlsym pointers never go through a GOT: they stay on NCCL, as documented.
    callEveryEntryPoint(c, false, "hooks off");
    t.unload();
    CHILD_CHECK(pluginMapped(), "GOT attach ran, so the plugin must stay loaded");
  });
  EXPECT_EQ(problems, "");
}

TEST_F(PluginGotFallback, MissingDisassemblerFallsBackToGotAttachAndSaysWhy) {
  const std::string problems =
      withCallerAndTuner({{"SYMMEM_DISASSEMBLER", "/nonexistent/libZydis.so.4.0"}}, [](Caller& c, Tuner& t) {
        CHILD_CHECK(logCount("code hooks not used:") == 1 && logCount("falling back to GOT attach") == 1,
                    "no fallback line");
        CHILD_CHECK(logCount("/nonexistent/libZydis.so.4.0") + logCount("without the Zydis headers") >= 1,
                    "the fallback line does not name the reason");
        callEveryEntryPoint(c, false, "no disassembler");
      });
  EXPECT_EQ(problems, "");
}

// Two NCCL copies, as when a ctypes client loads one by path and PyTorch its own: the plugin is bound
// to the first, and each loads it as its tuner (each hands over a logger of its own). Every copy that
// loads it is hooked, and each copy's calls reach the plugin and then that same copy, never the other;
// each copy's groups are its own.
int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

TEST_F(PluginHooks, EveryNcclCopyThatLoadsThePluginIsServed) {
  const std::string problems = runInChild(kTrace, [] {
    Caller a, b;
    CHILD_CHECK(a.open(), "stand-in not loadable");
    CHILD_CHECK(b.open(SYMMEM_OTHER_NCCL_PATH) && b.nccl != a.nccl, "the second copy did not load as its own object");
    if (!gProblems.empty()) return;
    void* lib = dlopen(SYMMEM_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    auto* v5 = lib ? static_cast<const symmem::abi::TunerV5*>(dlsym(lib, "ncclTunerPlugin_v5")) : nullptr;
    void* ctxB = nullptr;
    void* ctxA = nullptr;
    // The second copy first: the process's log is its logger's from here on.
    CHILD_CHECK(v5 && v5->init(&ctxB, 42, 2, 1, b.log, nullptr, nullptr) == 0, "init from the second copy failed");
    if (!gProblems.empty()) return;
    auto log = [&] { return std::string(b.logText()); };
    CHILD_CHECK(count(log(), "NCCL copy 1 (" SYMMEM_OTHER_NCCL_PATH ") loaded the plugin too") == 1,
                "no line for the second copy: " + log());
    CHILD_CHECK(count(log(), "hooked 10 entry points of NCCL copy 1 (" SYMMEM_OTHER_NCCL_PATH ")") == 1,
                "the second copy was not hooked: " + log());
    CHILD_CHECK(count(log(), "hooked 10 libnccl entry points") == 0, "the first copy was hooked for the second");
    const std::string traced = "allreduce 5 elements on comm 0x3000: NCCL";
    const StandInRecord beforeA = *a.record, beforeB = *b.record;
    CHILD_CHECK(b.allReduce(kSend, kRecv, 5, kFloat32, kSum, kComm, nullptr) == kRemoteError, "result lost");
    CHILD_CHECK(b.record->allReduces == beforeB.allReduces + 1 && a.record->allReduces == beforeA.allReduces,
                "the second copy's all-reduce did not reach that copy alone");
    CHILD_CHECK(count(log(), traced) == 1, "the second copy's all-reduce did not pass the plugin");
    // The first copy has not loaded the plugin yet: its calls go straight to it.
    CHILD_CHECK(a.allReduce(kSend, kRecv, 5, kFloat32, kSum, kComm, nullptr) == kRemoteError, "result lost");
    CHILD_CHECK(a.record->allReduces == beforeA.allReduces + 1 && count(log(), traced) == 1,
                "the first copy's all-reduce passed the plugin before that copy loaded it");

    // Now the first copy loads it too: both are served, each call reaching its own copy once.
    CHILD_CHECK(v5->init(&ctxA, 43, 2, 1, a.log, nullptr, nullptr) == 0, "init from the first copy failed");
    CHILD_CHECK(count(log(), "hooked 10 libnccl entry points") == 1, "the first copy was not hooked: " + log());
    CHILD_CHECK(count(log(), "loaded the plugin too") == 1, "the second copy was added twice");
    for (Caller* c : {&a, &b}) {
      Caller* other = c == &a ? &b : &a;
      const std::string which = c == &a ? "first copy: " : "second copy: ";
      const StandInRecord mine = *c->record, theirs = *other->record;
      const int traces = count(log(), traced);
      CHILD_CHECK(c->allReduce(kSend, kRecv, 5, kFloat32, kSum, kComm, nullptr) == kRemoteError, which + "result lost");
      CHILD_CHECK(c->groupStart() == 0 && c->groupEnd() == 0, which + "group calls failed");
      CHILD_CHECK(c->finalize(kComm) == 0 && c->revoke(kComm, 3) == 0 && c->destroy(kComm) == 0,
                  which + "teardown failed");
      CHILD_CHECK(c->record->allReduces == mine.allReduces + 1 &&
                      c->record->groupStartBodies == mine.groupStartBodies + 1 &&
                      c->record->groupEnds == mine.groupEnds + 1 && c->record->destroys == mine.destroys + 1 &&
                      c->record->revokes == mine.revokes + 1 && c->record->finalizes == mine.finalizes + 1,
                  which + "a call did not reach its own copy");
      CHILD_CHECK(other->record->allReduces == theirs.allReduces && other->record->groupEnds == theirs.groupEnds &&
                      other->record->destroys == theirs.destroys,
                  which + "a call reached the other copy");
      CHILD_CHECK(count(log(), traced) == traces + 1, which + "the all-reduce did not pass the plugin");
    }
    // Each copy's groups are its own: a group open on one copy leaves the other's outside it.
    const int outermost = count(log(), "group start (depth 0)");
    CHILD_CHECK(a.groupStart() == 0 && b.groupStart() == 0, "group starts failed");
    CHILD_CHECK(count(log(), "group start (depth 0)") == outermost + 2, "the copies share one group depth");
    CHILD_CHECK(b.groupEnd() == 0 && a.groupEnd() == 0, "group ends failed");
    CHILD_CHECK(a.record->groupEnds == b.record->groupEnds, "a group end reached the other copy");
  });
  EXPECT_EQ(problems, "");
}

// Loaded in place of libnccl (the application calls the plugin's ncclAllReduce) and also as the
// tuner, which hooks libnccl: every call is still seen once and reaches NCCL once.
TEST_F(PluginHooks, InPlaceOfLibncclAndTunerWrapOnce) {
  const std::string problems = runInChild(kTrace, [] {
    Caller c;
    CHILD_CHECK(c.open(), "stand-in not loadable");
    void* inPlace = dlopen(SYMMEM_PLUGIN_PATH, RTLD_NOW | RTLD_GLOBAL);
    auto viaPlugin = inPlace ? reinterpret_cast<AllReduceFn>(dlsym(inPlace, "ncclAllReduce")) : nullptr;
    CHILD_CHECK(viaPlugin != nullptr && reinterpret_cast<void*>(viaPlugin) != reinterpret_cast<void*>(c.allReduce),
                "the plugin's own ncclAllReduce not found");
    if (!gProblems.empty()) return;
    Tuner t;
    CHILD_CHECK(t.load(), "the plugin did not load as the tuner");
    const int before = c.record->allReduces;
    const int traces = logCount("allreduce 5 elements");
    CHILD_CHECK(viaPlugin(kSend, kRecv, 5, kFloat32, kSum, kComm, nullptr) == kRemoteError, "result lost");
    CHILD_CHECK(c.record->allReduces == before + 1, "reached NCCL more than once");
    CHILD_CHECK(logCount("allreduce 5 elements") == traces + 1, "seen more than once");
    callEveryEntryPoint(c, true, "in place and tuner");
  });
  EXPECT_EQ(problems, "");
}

// A real libnccl.so.2 at `path`, loaded as the pynccl wrappers load it, then the plugin as NCCL's tuner:
// its real entry points take the hooks, and calls through pointers cached before the plugin loaded
// reach the interposer. Without a GPU only calls that need no communicator run: the group calls, and
// an all-reduce NCCL refuses (no comm). Runs inside a forked child.
void checkHooksOnRealLibnccl(const std::string& path) {
  void* nccl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  CHILD_CHECK(nccl != nullptr, "cannot load " + path + ": " + dlerror());
  if (!nccl) return;
  auto groupStart = reinterpret_cast<VoidFn>(dlsym(nccl, "ncclGroupStart"));
  auto groupEnd = reinterpret_cast<VoidFn>(dlsym(nccl, "ncclGroupEnd"));
  auto allReduce = reinterpret_cast<AllReduceFn>(dlsym(nccl, "ncclAllReduce"));
  CHILD_CHECK(groupStart && groupEnd && allReduce, "NCCL entry points missing");
  if (!gProblems.empty()) return;
  const int refused = allReduce(kSend, kRecv, 5, kFloat32, kSum, nullptr, nullptr);
  Tuner t;
  CHILD_CHECK(t.load(), "the plugin did not load");
  if (!gProblems.empty()) return;
  // The count of entry points differs per release (ncclCommRevoke from 2.28.9, ...): one line says it.
  CHILD_CHECK(logCount("libnccl entry points (") == 1, "the real NCCL's entry points were not hooked");
  for (int round = 0; round < 2; ++round) {
    const std::string when = round ? "after NCCL unloaded the tuner" : "hooked";
    const int starts = logCount("group start"), ends = logCount("group end");
    const int reduces = logCount("allreduce 5 elements on comm (nil)");
    CHILD_CHECK(groupStart() == 0 && groupEnd() == 0, when + ": NCCL's group calls failed");
    CHILD_CHECK(logCount("group start") == starts + 1 && logCount("group end") == ends + 1,
                when + ": the group calls did not pass the plugin");
    CHILD_CHECK(allReduce(kSend, kRecv, 5, kFloat32, kSum, nullptr, nullptr) == refused,
                when + ": NCCL's answer changed on the way");
    CHILD_CHECK(logCount("allreduce 5 elements on comm (nil)") == reduces + 1,
                when + ": the all-reduce did not pass the plugin");
    t.unload();
  }
}

// The NCCL this build found (2.28.9 with CUDA 13 here).
TEST_F(PluginHooks, RealLibncclEntryPointsAreHooked) {
  EXPECT_EQ(runInChild(kTrace, [] { checkHooksOnRealLibnccl(SYMMEM_NCCL_LIBRARY_PATH); }), "");
}

// The tuner symbol each NCCL looks for first (its src/plugin/tuner.cc): v2 in 2.21, v3 in 2.22-2.23,
// v4 in 2.24-2.27, v5 in 2.28-2.29, v6 in 2.30-2.31, v7 from 2.32.
const char* tunerSymbolFor(int version) {
  const int minor = version / 100 % 100;
  if (minor <= 21) return "ncclTunerPlugin_v2";
  if (minor <= 23) return "ncclTunerPlugin_v3";
  if (minor <= 27) return "ncclTunerPlugin_v4";
  if (minor <= 29) return "ncclTunerPlugin_v5";
  if (minor <= 31) return "ncclTunerPlugin_v6";
  return "ncclTunerPlugin_v7";
}

// Every release in NCCL_SYMMEM_TEST_RELEASES (a folder of <version>-<wheel>/libnccl.so.2, as
// tests/nccl_releases/fetch_libnccl.py leaves it; CI sets it): the version is what the folder says,
// the plugin exports the tuner symbol that release looks for, and the hooks go in on its real entry
// points as on the build's own NCCL. Skipped, saying why, where the variable is unset.
TEST_F(PluginHooks, EveryNcclReleaseTakesTheHooks) {
  std::string why;
  bool unset = false;
  const std::vector<std::filesystem::path> libs = symmem::testing::ncclReleaseFolders(&why, &unset);
  if (unset) GTEST_SKIP() << why;
  ASSERT_FALSE(libs.empty()) << why;
  for (const auto& folder : libs) {
    const std::string release = folder.filename().string();  // e.g. 2.27.7-cu12
    const std::string problems = runInChild(kTrace, [&] {
      const std::string path = (folder / "libnccl.so.2").string();
      void* nccl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      CHILD_CHECK(nccl != nullptr, "cannot load " + path);
      if (!nccl) return;
      auto getVersion = reinterpret_cast<int (*)(int*)>(dlsym(nccl, "ncclGetVersion"));
      int version = 0;
      CHILD_CHECK(getVersion && getVersion(&version) == 0, "ncclGetVersion failed");
      const std::string dotted = std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
                                 std::to_string(version % 100);
      CHILD_CHECK(release.rfind(dotted + "-", 0) == 0, "the library says it is " + dotted);
      checkHooksOnRealLibnccl(path);  // loads the plugin after this NCCL, as NCCL does
      void* plugin = dlopen(SYMMEM_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
      CHILD_CHECK(plugin && dlsym(plugin, tunerSymbolFor(version)),
                  std::string("the plugin does not export ") + tunerSymbolFor(version));
      CHILD_CHECK(logCount("of libnccl's own calls to hooked entry points go straight to NCCL") == 1,
                  "no line for NCCL's own calls to its hooked entry points");
      for (const std::string& l : gLog)
        if (l.find("libnccl's own calls") != std::string::npos || l.find("libnccl entry points (") != std::string::npos)
          std::printf("[ info ] NCCL %s:%s\n", release.c_str(), l.substr(l.find(':', 3) + 1).c_str());
      std::fflush(stdout);
    });
    EXPECT_EQ(problems, "") << "NCCL " << release;
  }
}

// NCCL calls its own ncclCommGetAsyncError through its PLT on every enqueue: those calls go straight
// to NCCL (nothing of the plugin on the stock path), while an application's call still reaches it.
TEST_F(PluginHooks, NcclsOwnCallsToAHookedEntryPointSkipThePlugin) {
  const std::string problems = withCallerAndTuner({}, [](Caller& c, Tuner&) {
    CHILD_CHECK(logCount("of libnccl's own calls to hooked entry points go straight to NCCL") == 1, "no line");
    const int queries = logCount("async error query");
    const int bodies = c.record->asyncErrorBodies;
    int e = -1;
    CHILD_CHECK(c.asyncError(kComm, &e) == 0 && e == 0, "the application's query failed");
    CHILD_CHECK(logCount("async error query") == queries + 1, "the application's query did not reach the plugin");
    CHILD_CHECK(c.asyncErrorFromInside(kComm) == 0, "NCCL's own query failed");
    CHILD_CHECK(logCount("async error query") == queries + 1, "NCCL's own query went through the plugin");
    CHILD_CHECK(c.record->asyncErrorBodies == bodies + 2, "a query did not reach NCCL's body");
  });
  EXPECT_EQ(problems, "");
}

// Two copies of the plugin in one process (one preloaded or loaded globally from one path, NCCL's
// tuner from another): one interposer, and one line saying why the second steps aside.
std::string copyOfThePlugin() {
  const std::string dir = "/tmp/symmem-copy-" + std::to_string(getpid());
  const std::string path = dir + "/libnccl-tuner-symmem.so";
  const std::string cmd = "mkdir -p " + dir + " && cp '" SYMMEM_PLUGIN_PATH "' " + path;
  return std::system(cmd.c_str()) == 0 ? path : "";
}

void loadSecondCopyAsTuner(const std::string& path) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  auto* v5 = lib ? static_cast<const symmem::abi::TunerV5*>(dlsym(lib, "ncclTunerPlugin_v5")) : nullptr;
  void* ctx = nullptr;
  CHILD_CHECK(v5 && v5->init(&ctx, 43, 2, 1, captureLog, nullptr, nullptr) == 0, "the second copy did not load");
}

TEST_F(PluginHooks, ASecondCopyOfThePluginStepsAside) {
  const std::string problems = withCallerAndTuner({}, [](Caller& c, Tuner&) {
    const std::string copy = copyOfThePlugin();
    CHILD_CHECK(!copy.empty(), "could not copy the plugin");
    if (copy.empty()) return;
    loadSecondCopyAsTuner(copy);
    CHILD_CHECK(logCount("another copy of the plugin already hooks libnccl") == 1, "no step-aside line");
    CHILD_CHECK(logCount("hooked 10 libnccl entry points") == 1, "hooked twice");
    CHILD_CHECK(logCount("(static NCCL?)") == 0, "the second copy mistook the first for a static NCCL");
    callEveryEntryPoint(c, true, "two copies");  // each call seen once, reaching NCCL once
    std::filesystem::remove_all(copy.substr(0, copy.rfind('/')));
  });
  EXPECT_EQ(problems, "");
}

TEST_F(PluginHooks, ASecondCopyUnderAGlobalFirstCopyStepsAside) {
  const std::string problems = runInChild(kTrace, [] {
    Caller c;
    CHILD_CHECK(c.open(), "stand-in not loadable");
    void* global = dlopen(SYMMEM_PLUGIN_PATH, RTLD_NOW | RTLD_GLOBAL);  // as LD_PRELOAD would
    const std::string copy = copyOfThePlugin();
    CHILD_CHECK(global && !copy.empty(), "setup failed");
    if (!gProblems.empty()) return;
    loadSecondCopyAsTuner(copy);
    CHILD_CHECK(logCount("interposes NCCL for the whole process: this copy") == 1, "no step-aside line");
    CHILD_CHECK(logCount("hooked") == 0, "the second copy hooked libnccl under the first one's interposer");
    std::filesystem::remove_all(copy.substr(0, copy.rfind('/')));
  });
  EXPECT_EQ(problems, "");
}

// Two NCCLs loaded and a logger that names neither (the plugin cannot tell which one loaded it):
// attach is refused, never a guess.
TEST_F(PluginHooks, TwoNcclsAndALoggerOutsideBothIsARefusal) {
  const std::string problems = runInChild(kTrace, [] {
    Caller c;
    CHILD_CHECK(c.open(), "stand-in not loadable");
    CHILD_CHECK(dlopen(SYMMEM_OTHER_NCCL_PATH, RTLD_NOW | RTLD_LOCAL) != nullptr, "second NCCL not loadable");
    Tuner t;
    CHILD_CHECK(t.load(), "the plugin did not load");
    CHILD_CHECK(logCount("attach skipped: 2 NCCL copies are loaded and the logger") == 1, "no refusal line");
    CHILD_CHECK(logCount("hooked") == 0, "hooked although it could not tell the NCCLs apart");
  });
  EXPECT_EQ(problems, "");
}

// Exit: an application's atexit handler (registered before the plugin loaded, so it runs after the
// plugin's static destructors would have) still calls NCCL through the hooks; and a forked child
// calls through them while its parent's threads held the plugin's locks.
Caller* gExitCaller = nullptr;
int gExitPipe = -1;
void destroyAtExit() {
  const int before = gExitCaller->record->destroys;
  const bool ok = gExitCaller->destroy(kComm) == 0 && gExitCaller->record->destroys == before + 1;
  if (write(gExitPipe, ok ? "ok" : "no", 2) != 2) _exit(5);
}

TEST_F(PluginHooks, ExitHandlersAndForkedChildrenCallThroughTheHooks) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    gExitPipe = fds[1];
    std::atexit(&destroyAtExit);
    static Caller c;
    static Tuner t;
    if (!c.open() || !t.load()) _exit(3);
    gExitCaller = &c;
    // A thread that keeps taking the plugin's locks while the process forks.
    std::atomic<bool> stop{false};
    std::thread busy([&] {
      while (!stop) c.destroy(kComm);
    });
    bool forkOk = true;
    for (int i = 0; i < 20 && forkOk; ++i) {
      const pid_t child = fork();
      if (child == 0) {
        alarm(10);  // a lock inherited held would hang here
        _exit(c.destroy(kComm) == 0 && c.allReduce(kSend, kRecv, 5, kFloat32, kSum, kComm, nullptr) == kRemoteError
                  ? 0
                  : 4);
      }
      int status = 0;
      forkOk = child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    stop = true;
    busy.join();
    if (!forkOk) _exit(6);
    std::exit(0);  // runs destroyAtExit after the plugin's statics' destructors
  }
  close(fds[1]);
  char buf[3] = {};
  const ssize_t n = read(fds[0], buf, 2);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "child "
      << (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                            : "signal " + std::to_string(WTERMSIG(status)));
  EXPECT_EQ(n, 2);
  EXPECT_STREQ(buf, "ok") << "the atexit handler's call did not reach NCCL through the hooks";
}

// A fork while tuner inits fill the communicator tables (tickets, names, creation records) and no NCCL
// copy is served yet (attach off: nothing hooked, nothing interposed): the tables' locks are guarded
// from the plugin's load, so a child never inherits one held and its own tuner init goes through.
// The plugin keeps the first logger NCCL hands it, so every init here logs through that one: it takes
// no lock and allocates nothing (the test's usual log, a vector, is neither thread- nor fork-safe).
std::atomic<int> gHookedLines{0};
void forkSafeLog(int, unsigned long, const char*, int, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (std::strstr(buf, "hooked") != nullptr) gHookedLines.fetch_add(1, std::memory_order_relaxed);
}

std::string describeStatus(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "signal " + std::to_string(WTERMSIG(status)) + (WTERMSIG(status) == SIGALRM ? " (hung)" : "");
  return "status " + std::to_string(status);
}

TEST_F(PluginHooks, AForkWhileTunerInitsFillTheTablesBeforeAnyCopyIsServed) {
  const std::string problems = runInChild({{"SYMMEM_ATTACH", "0"}}, [] {
    void* lib = dlopen(SYMMEM_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    const auto* v5 = lib ? static_cast<const symmem::abi::TunerV5*>(dlsym(lib, "ncclTunerPlugin_v5")) : nullptr;
    void* first = nullptr;
    CHILD_CHECK(v5 != nullptr && v5->init(&first, 42, 2, 1, forkSafeLog, nullptr, nullptr) == symmem::abi::kSuccess,
                "the plugin did not load");
    if (!gProblems.empty()) return;
    std::atomic<bool> stop{false};
    std::thread busy([&] {
      for (uint64_t id = 1000; !stop; ++id) {
        void* ctx = nullptr;
        if (v5->init(&ctx, id, 1, 1, forkSafeLog, nullptr, nullptr) == symmem::abi::kSuccess) v5->finalize(ctx);
      }
    });
    std::string firstFailure;
    for (int i = 0; i < 1000 && firstFailure.empty(); ++i) {
      const pid_t child = fork();
      if (child == 0) {
        alarm(10);  // a table's lock inherited held would hang here
        void* ctx = nullptr;
        const bool ok = v5->init(&ctx, 7, 1, 1, forkSafeLog, nullptr, nullptr) == symmem::abi::kSuccess &&
                        v5->finalize(ctx) == symmem::abi::kSuccess;
        _exit(ok ? 0 : 4);
      }
      int status = 0;
      if (child < 0)
        firstFailure = "fork " + std::to_string(i) + " failed";
      else if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        firstFailure = "child " + std::to_string(i) + ": " + describeStatus(status);
    }
    stop = true;
    busy.join();
    v5->finalize(first);
    CHILD_CHECK(firstFailure.empty(), "a forked child's tuner init hung or failed: " + firstFailure);
    CHILD_CHECK(gHookedLines.load() == 0, "attach off, yet something was hooked");
  });
  EXPECT_EQ(problems, "");
}

}  // namespace

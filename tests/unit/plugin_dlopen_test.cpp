// SPDX-License-Identifier: Apache-2.0
// Loads the built plugin the way NCCL does (dlopen RTLD_NOW | RTLD_LOCAL, dlsym of each
// ncclTunerPlugin_vN) and drives init / getCollInfo / finalize on cost tables seeded like NCCL's.
// Each scenario runs in a forked child so the plugin starts with a fresh process state and the
// environment of that scenario.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "plugin/nccl/tuner_abi.h"
#include "tests/unit/forked_check.h"
#include "tests/unit/nccl_cost_table.h"
#include "tests/unit/temp_file.h"

namespace symmem {
namespace {

constexpr float kIgnore = -1.0f;
constexpr int kAllReduce = 4;
const std::string kTopo =
    std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt";

// NCCL's table and choice rule; choice()/ignored() read as the checks below use them.
struct Table : testing::NcclCostTable {
  std::pair<int, int> choice() const { return ncclChoice(); }
  int ignored() const { return ignoredCount(); }
};

// Failures found in the child, written to a pipe for the parent to report.
std::vector<std::string>* gProblems = nullptr;
std::vector<std::string>* gLogLines = nullptr;
#define CHILD_CHECK(cond, msg)                                            \
  do {                                                                    \
    if (!(cond)) gProblems->push_back(std::string(msg) + " [" #cond "]"); \
  } while (0)

void captureLog(int level, unsigned long flags, const char*, int, const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  gLogLines->push_back(std::to_string(level) + ":" + std::to_string(flags) + ":" + buf);
}

std::string runInChild(const std::map<std::string, std::string>& env, const std::function<void(void*)>& body) {
  return testing::runForkedCheck([&] {
    std::vector<std::string> problems, logs;
    gProblems = &problems;
    gLogLines = &logs;
    for (const char* v : {"SYMMEM_TABLE", "SYMMEM_TOPO_FILE", "SYMMEM_CC", "SYMMEM_ENABLE", "SYMMEM_TUNER"})
      unsetenv(v);
    for (auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    void* handle = dlopen(SYMMEM_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      problems.push_back(std::string("dlopen failed: ") + dlerror());
    } else {
      body(handle);
    }
    std::string out;
    for (auto& p : problems) out += p + "\n";
    return out;
  });
}

template <typename T>
const T* symbol(void* handle, const char* name) {
  return static_cast<const T*>(dlsym(handle, name));
}

// NCCL's v7 constants with a canary on each side: every slot holds a distinct value, so a member
// copied to the wrong place, a lost Rubin row or a write past the struct all show.
struct GuardedConstantsV7 {
  static constexpr double kCanary = -4242.25;
  double before[4];
  abi::TunerConstantsV7 c;
  double after[8];

  GuardedConstantsV7() {
    for (double& d : before) d = kCanary;
    for (double& d : after) d = kCanary;
    for (size_t i = 0; i < count(); ++i) slots()[i] = expected(i);
  }
  static constexpr size_t count() { return sizeof(abi::TunerConstantsV7) / sizeof(double); }
  static double expected(size_t i) { return 100.0 + static_cast<double>(i) / 4; }
  double* slots() { return reinterpret_cast<double*>(&c); }
  // Empty when NCCL's values are all where NCCL put them and nothing around the struct changed.
  std::string damage() {
    std::string out;
    for (double d : before)
      if (d != kCanary) out += "written before the struct; ";
    for (double d : after)
      if (d != kCanary) out += "written past the struct; ";
    size_t changed = 0, first = 0;
    for (size_t i = 0; i < count(); ++i)
      if (slots()[i] != expected(i) && changed++ == 0) first = i;
    if (changed) out += std::to_string(changed) + " slots changed, the first at " + std::to_string(first) + "; ";
    return out;
  }
};
static_assert(offsetof(GuardedConstantsV7, c) == 4 * sizeof(double) &&
              sizeof(GuardedConstantsV7) == sizeof(abi::TunerConstantsV7) + 12 * sizeof(double));

void checkEveryVersionLeavesTableAlone(void* handle) {
  const auto* v7 = symbol<abi::TunerV7>(handle, "ncclTunerPlugin_v7");
  const auto* v6 = symbol<abi::TunerV6>(handle, "ncclTunerPlugin_v6");
  const auto* v5 = symbol<abi::TunerV5>(handle, "ncclTunerPlugin_v5");
  const auto* v4 = symbol<abi::TunerV4>(handle, "ncclTunerPlugin_v4");
  const auto* v3 = symbol<abi::TunerV3>(handle, "ncclTunerPlugin_v3");
  const auto* v2 = symbol<abi::TunerV2>(handle, "ncclTunerPlugin_v2");
  CHILD_CHECK(v7 && v6 && v5 && v4 && v3 && v2, "every ncclTunerPlugin_vN is exported");
  if (!(v7 && v6 && v5 && v4 && v3 && v2)) return;
  CHILD_CHECK(std::strcmp(v5->name, "symmem") == 0, "v5 name");
  CHILD_CHECK(std::strcmp(v7->name, "symmem") == 0, "v7 name");
  CHILD_CHECK(v6->getChunkSize == nullptr, "v6 chunk-size hook is optional and unused");
  CHILD_CHECK(v7->getChunkSize == nullptr, "v7 chunk-size hook is optional and unused");

  // v7 with NCCL's five-compcap constants: init, getCollInfo, finalize, and the struct intact.
  {
    abi::NvlDomainInfoV5 nvl7{1, 8, 8};
    GuardedConstantsV7 constants7;
    void* c7 = nullptr;
    CHILD_CHECK(v7->init(&c7, 0x77, 8, 1, captureLog, &nvl7, &constants7.c) == abi::kSuccess, "v7 init succeeds");
    CHILD_CHECK(c7 != nullptr, "v7 init makes a context");
    const std::string damage = constants7.damage();
    CHILD_CHECK(damage.empty(), "v7 constants intact: " + damage);
    Table t7;
    int ch7 = 0;
    CHILD_CHECK(v7->getCollInfo(c7, kAllReduce, 65536, 1, t7.raw(), 7, 3, 0, &ch7) == abi::kSuccess, "v7 getCollInfo");
    CHILD_CHECK(t7.choice() == std::make_pair(1, 0) && t7.ignored() == 17 && ch7 == 0, "v7 table untouched");
    CHILD_CHECK(v7->finalize(c7) == abi::kSuccess, "v7 finalize");
    void* n7 = nullptr;
    CHILD_CHECK(v7->init(&n7, 0x78, 8, 1, captureLog, nullptr, nullptr) == abi::kSuccess && n7,
                "v7 init, no constants");
    CHILD_CHECK(v7->finalize(n7) == abi::kSuccess, "v7 finalize");
  }

  abi::NvlDomainInfoV5 nvl{1, 8, 8};
  abi::TunerConstantsV5 constants{};
  void* ctx = nullptr;
  CHILD_CHECK(v5->init(&ctx, 0x1234, 8, 1, captureLog, &nvl, &constants) == abi::kSuccess, "v5 init succeeds");
  CHILD_CHECK(ctx != nullptr, "v5 init makes a context");
  for (int coll = 0; coll <= 4; ++coll)
    for (size_t bytes : {size_t{8}, size_t{65536}, size_t{1} << 26}) {
      Table t;
      int nChannels = 0;
      CHILD_CHECK(v5->getCollInfo(ctx, coll, bytes, 1, t.raw(), 7, 3, 0, &nChannels) == abi::kSuccess, "success");
      CHILD_CHECK(t.choice() == std::make_pair(1, 0) && t.ignored() == 17, "table untouched");
      CHILD_CHECK(nChannels == 0, "nChannels untouched");
    }
  CHILD_CHECK(v5->finalize(ctx) == abi::kSuccess, "v5 finalize");

  // Older shapes through their adapters.
  void* c4 = nullptr;
  CHILD_CHECK(v4->init(8, 1, captureLog, &c4) == abi::kSuccess && c4, "v4 init");
  Table t4;
  int ch = 0;
  CHILD_CHECK(v4->getCollInfo(c4, kAllReduce, 1024, 1, t4.raw(), 7, 3, 0, &ch) == abi::kSuccess, "v4 getCollInfo");
  CHILD_CHECK(v4->destroy(c4) == abi::kSuccess, "v4 destroy");
  void* c3 = nullptr;
  CHILD_CHECK(v3->init(8, 1, captureLog, &c3) == abi::kSuccess && c3, "v3 init");
  Table t3;
  CHILD_CHECK(v3->getCollInfo(c3, kAllReduce, 1024, 1, t3.raw(), 7, 3, &ch) == abi::kSuccess, "v3 getCollInfo");
  CHILD_CHECK(v3->destroy(c3) == abi::kSuccess, "v3 destroy");
  void* c2 = nullptr;
  CHILD_CHECK(v2->init(8, 1, captureLog, &c2) == abi::kSuccess && c2, "v2 init");
  int algo = -1, proto = -1;
  CHILD_CHECK(v2->getCollInfo(c2, kAllReduce, 1024, 0, 0, 1, &algo, &proto, &ch) == abi::kSuccess, "v2 getCollInfo");
  CHILD_CHECK(algo == -1 && proto == -1, "v2 leaves NCCL's choice");
  CHILD_CHECK(v2->destroy(c2) == abi::kSuccess, "v2 destroy");
  // A null context (init failed elsewhere) is harmless.
  Table tn;
  CHILD_CHECK(v5->getCollInfo(nullptr, kAllReduce, 8, 1, tn.raw(), 7, 3, 0, &ch) == abi::kSuccess, "null ctx");
}

TEST(PluginDlopen, EveryVersionLoadsAndLeavesNcclAloneWithoutFacts) {
  EXPECT_EQ(runInChild({}, checkEveryVersionLeavesTableAlone), "");
}

TEST(PluginDlopen, InitLogsOneTuningInfoLine) {
  std::string problems = runInChild({}, [](void* handle) {
    const auto* v5 = symbol<abi::TunerV5>(handle, "ncclTunerPlugin_v5");
    void* ctx = nullptr;
    v5->init(&ctx, 7, 4, 1, captureLog, nullptr, nullptr);
    v5->finalize(ctx);
    int infos = 0;
    for (const std::string& l : *gLogLines)
      if (l.starts_with("3:65:") && l.find("nccl-symmem") != std::string::npos &&
          l.find("nRanks 4") != std::string::npos)
        ++infos;  // level INFO (3), flags TUNING|INIT (0x41)
    CHILD_CHECK(infos == 1, "exactly one INFO line from init, got " + std::to_string(infos));
  });
  EXPECT_EQ(problems, "");
}

// With known facts and a table file carrying a band, the tuner steers NCCL, within NCCL's rules.
TEST(PluginDlopen, AppliesTableBandsWithinNcclsRules) {
  testing::TempFile table(
      "symmem-table 1\n"
      "entry cc=12.0 link=pcie-sys ranks=8 oneshot=32KiB twoshot=0\n"
      "band cc=12.0 link=pcie-sys ranks=8 coll=allreduce upto=4MiB algo=tree proto=simple channels=6\n");
  ASSERT_TRUE(table.ok());
  std::string problems = runInChild(
      {{"SYMMEM_TABLE", table.path()}, {"SYMMEM_TOPO_FILE", kTopo}, {"SYMMEM_CC", "12.0"}}, [](void* handle) {
        const auto* v5 = symbol<abi::TunerV5>(handle, "ncclTunerPlugin_v5");
        // The bands apply only once every rank's tuner declared the same ones (NCCL's ranks choosing
        // different algorithms hang): one rank of eight alone gets none.
        const uint64_t id = (static_cast<uint64_t>(getpid()) << 20) ^ 0x5eed;
        void* alone = nullptr;
        v5->init(&alone, id + 1, 8, 1, captureLog, nullptr, nullptr);
        Table lone;
        int chLone = 0;
        v5->getCollInfo(alone, kAllReduce, 65536, 1, lone.raw(), 7, 3, 0, &chLone);
        CHILD_CHECK(lone.choice() == std::make_pair(1, 0) && chLone == 0, "one rank of eight declared: no bands");
        v5->finalize(alone);
        // All eight ranks in this process, as ncclCommInitAll makes them: every declaration is in.
        std::vector<void*> ranks(8, nullptr);
        for (void*& r : ranks) v5->init(&r, id, 8, 1, captureLog, nullptr, nullptr);
        void* ctx = ranks[0];
        Table t;
        int nChannels = 0;
        v5->getCollInfo(ctx, kAllReduce, 65536, 1, t.raw(), 7, 3, 0, &nChannels);
        CHILD_CHECK(t.choice() == std::make_pair(0, 2), "band forces tree/simple");
        CHILD_CHECK(t.ignored() == 17, "no IGNORE entry validated");
        CHILD_CHECK(nChannels == 6, "band's channel count");

        // The user disabled tree (NCCL_ALGO=ring): the band cannot apply and NCCL's choice stays.
        Table noTree;
        noTree.cells[0][0] = noTree.cells[0][2] = kIgnore;
        int ch2 = 0;
        v5->getCollInfo(ctx, kAllReduce, 65536, 1, noTree.raw(), 7, 3, 0, &ch2);
        CHILD_CHECK(noTree.choice() == std::make_pair(1, 0) && noTree.ignored() == 19, "IGNORE respected");
        CHILD_CHECK(ch2 == 0, "no channel change when nothing applied");

        // Above the band and for other collectives: untouched.
        Table big;
        int ch3 = 0;
        v5->getCollInfo(ctx, kAllReduce, size_t{64} << 20, 1, big.raw(), 7, 3, 0, &ch3);
        CHILD_CHECK(big.choice() == std::make_pair(1, 0) && ch3 == 0, "above the band: untouched");
        Table ag;
        v5->getCollInfo(ctx, 2, 65536, 1, ag.raw(), 7, 3, 0, &ch3);
        CHILD_CHECK(ag.choice() == std::make_pair(1, 0), "all-gather has no band: untouched");
        for (void* r : ranks) v5->finalize(r);

        // Multi-node communicators are never touched.
        void* multi = nullptr;
        v5->init(&multi, 43, 16, 2, captureLog, nullptr, nullptr);
        Table m;
        int ch4 = 0;
        v5->getCollInfo(multi, kAllReduce, 65536, 1, m.raw(), 7, 3, 0, &ch4);
        CHILD_CHECK(m.choice() == std::make_pair(1, 0) && ch4 == 0, "multi-node untouched");
        v5->finalize(multi);

        // v7 (NCCL 2.32.6+) applies the same band, and leaves NCCL's constants where they were.
        const auto* v7 = symbol<abi::TunerV7>(handle, "ncclTunerPlugin_v7");
        GuardedConstantsV7 constants7;
        std::vector<void*> ranks7(8, nullptr);
        for (void*& r : ranks7) v7->init(&r, id + 2, 8, 1, captureLog, nullptr, &constants7.c);
        void* c7 = ranks7[0];
        const std::string damage = constants7.damage();
        CHILD_CHECK(damage.empty(), "v7 constants intact: " + damage);
        Table t7;
        int ch7 = 0;
        v7->getCollInfo(c7, kAllReduce, 65536, 1, t7.raw(), 7, 3, 0, &ch7);
        CHILD_CHECK(t7.choice() == std::make_pair(0, 2) && t7.ignored() == 17 && ch7 == 6, "v7 band: tree/simple/6");
        for (void* r : ranks7) v7->finalize(r);

        // v2 (NCCL 2.21; v3 and v4 alike, to 2.27) gives its tuner no communicator id, so no rank can
        // learn that the others apply the same bands: none are applied.
        const auto* v2 = symbol<abi::TunerV2>(handle, "ncclTunerPlugin_v2");
        void* c2 = nullptr;
        v2->init(8, 1, captureLog, &c2);
        int algo = -1, proto = -1, ch5 = 0;
        v2->getCollInfo(c2, kAllReduce, 65536, 0, 0, 1, &algo, &proto, &ch5);
        CHILD_CHECK(algo == -1 && proto == -1 && ch5 == 0, "v2 without an agreement: NCCL's own choice");
        v2->destroy(c2);
      });
  EXPECT_EQ(problems, "");
}

TEST(PluginDlopen, BadTableFileFallsBackToBuiltInAndSaysWhere) {
  testing::TempFile table("symmem-table 1\nentry cc=12.0 link=warp ranks=8 oneshot=1K twoshot=0\n");
  ASSERT_TRUE(table.ok());
  const std::string file = table.path();
  std::string problems =
      runInChild({{"SYMMEM_TABLE", file}, {"SYMMEM_TOPO_FILE", kTopo}, {"SYMMEM_CC", "12.0"}}, [file](void* handle) {
        checkEveryVersionLeavesTableAlone(handle);
        bool warned = false;
        for (const std::string& l : *gLogLines)
          warned |= l.starts_with("2:") && l.find(file + ":2:") != std::string::npos &&
                    l.find("built-in") != std::string::npos;
        CHILD_CHECK(warned, "WARN names the file and line");
      });
  EXPECT_EQ(problems, "");
}

// A typo in a setting's name is said, once, in NCCL's log, naming the setting meant.
TEST(PluginDlopen, AMisspelledSettingIsWarnedAbout) {
  std::string problems = runInChild({{"SYMMEM_ENABLED", "0"}, {"SYMMEM_TOPO_FILE", kTopo}}, [](void* handle) {
    checkEveryVersionLeavesTableAlone(handle);
    int warned = 0;
    for (const std::string& l : *gLogLines)
      warned += l.starts_with("2:") && l.find("SYMMEM_ENABLED") != std::string::npos &&
                l.find("SYMMEM_ENABLE?") != std::string::npos;
    CHILD_CHECK(warned == 1, "one WARN names SYMMEM_ENABLED and the setting meant");
  });
  EXPECT_EQ(problems, "");
}

// The shared object exports the tuner objects and nothing else.
TEST(PluginExports, OnlyTheAllowedDynamicSymbols) {
  const std::string cmd = std::string("nm -D --defined-only '") + SYMMEM_PLUGIN_PATH + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::vector<std::string> names;
  char line[1024];
  while (fgets(line, sizeof(line), p)) {
    std::string l(line);
    auto last = l.find_last_of(' ');
    names.push_back(l.substr(last + 1, l.size() - last - 2));
  }
  ASSERT_EQ(pclose(p), 0);
  const std::vector<std::string> allowed = {"ncclTunerPlugin_v2", "ncclTunerPlugin_v3",    "ncclTunerPlugin_v4",
                                            "ncclTunerPlugin_v5", "ncclTunerPlugin_v6",    "ncclTunerPlugin_v7",
                                            "ncclAllReduce",      "ncclCommDestroy",       "ncclCommFinalize",
                                            "ncclCommAbort",      "ncclCommRevoke",        "ncclGroupStart",
                                            "ncclGroupEnd",       "ncclCommGetAsyncError", "ncclGroupSimulateEnd"};
  for (const std::string& n : names)
    EXPECT_NE(std::find(allowed.begin(), allowed.end(), n), allowed.end()) << "unexpected export: " << n;
  for (const std::string& a : allowed)
    EXPECT_NE(std::find(names.begin(), names.end(), a), names.end()) << "missing export: " << a;
}

// NCCL loads the plugin on machines that may lack hwloc, NVML or the CUDA toolkit: it may only need
// NCCL itself and the C/C++ runtime at load time (hwloc and NVML are opened at run time if present).
TEST(PluginExports, LoadTimeDependenciesAreOnlyNcclAndTheRuntime) {
  const std::string cmd = std::string("readelf -dW '") + SYMMEM_PLUGIN_PATH + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::vector<std::string> needed;
  char line[1024];
  while (fgets(line, sizeof(line), p)) {
    std::string l(line);
    auto open = l.find("(NEEDED)");
    if (open == std::string::npos) continue;
    auto b = l.find('[', open), e = l.find(']', open);
    if (b != std::string::npos && e != std::string::npos) needed.push_back(l.substr(b + 1, e - b - 1));
  }
  ASSERT_EQ(pclose(p), 0);
  const std::vector<std::string> allowed = {"libnccl.so.2",
                                            "libstdc++.so.6",
                                            "libgcc_s.so.1",
                                            "libc.so.6",
                                            "libm.so.6",
                                            "libdl.so.2",
                                            "libpthread.so.0",
                                            "librt.so.1",
                                            "ld-linux-x86-64.so.2",
                                            "ld-linux-aarch64.so.1"};
  EXPECT_NE(std::find(needed.begin(), needed.end(), "libnccl.so.2"), needed.end());
  for (const std::string& n : needed) {
    if (n.starts_with("libasan.") || n.starts_with("libubsan.")) continue;  // sanitizer builds (CI)
    EXPECT_NE(std::find(allowed.begin(), allowed.end(), n), allowed.end()) << "load-time dependency: " << n;
  }
}

// The entry points' addresses the plugin hands to attach must be its own, even when a libnccl loaded
// globally before it defines the same names: no dynamic relocation of the plugin may refer to them.
TEST(PluginExports, OwnEntryPointsBindLocally) {
  const std::string cmd = std::string("readelf -rW '") + SYMMEM_PLUGIN_PATH + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char line[1024];
  while (fgets(line, sizeof(line), p)) out += line;
  ASSERT_EQ(pclose(p), 0);
  for (const char* name :
       {"ncclAllReduce", "ncclCommDestroy", "ncclCommAbort", "ncclCommFinalize", "ncclGroupStart", "ncclGroupEnd",
        "ncclCommRevoke", "ncclCommGetAsyncError", "ncclGroupSimulateEnd", "ncclAllReduceConfig"}) {
    std::string needle = std::string(" ") + name + " ";
    std::string needle2 = std::string(" ") + name + " +";
    EXPECT_EQ(out.find(std::string(" ") + name + "\n"), std::string::npos);
    size_t pos = 0;
    bool found = false;
    while ((pos = out.find(name, pos)) != std::string::npos) {
      const char after = out[pos + std::strlen(name)];
      const char before = pos ? out[pos - 1] : ' ';
      if ((after == ' ' || after == '\n' || after == '@') && before == ' ') found = true;
      pos += std::strlen(name);
    }
    EXPECT_FALSE(found) << name << " is bound through a dynamic relocation:\n" << out;
  }
}

}  // namespace
}  // namespace symmem

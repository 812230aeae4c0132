// SPDX-License-Identifier: Apache-2.0
#include "tools/info/plugin_load_check.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "plugin/nccl/tuner_abi.h"

namespace symmem {

namespace {
void quietLogger(int, unsigned long, const char*, int, const char*, ...) {}
}  // namespace

std::string defaultPluginPath() {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "";
  exe[n] = '\0';
  const std::filesystem::path dir = std::filesystem::path(exe).parent_path();
  for (const char* rel : {"../lib/libnccl-tuner-symmem.so", "../lib64/libnccl-tuner-symmem.so"}) {
    std::error_code ec;
    auto p = std::filesystem::weakly_canonical(dir / rel, ec);
    if (!ec && std::filesystem::exists(p)) return p.string();
  }
  return "";
}

PluginLoadReport checkPluginLoads(const std::string& path) {
  PluginLoadReport r;
  if (path.empty()) {
    r.text = "plugin: libnccl-tuner-symmem.so not found next to this tool (pass --plugin PATH)\n";
    return r;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    r.text = "plugin: dlopen(" + path + ", RTLD_NOW|RTLD_LOCAL) failed: " + dlerror() + "\n";
    return r;
  }
  r.text = "plugin: " + path + "\n  loads with dlopen(RTLD_NOW | RTLD_LOCAL) as NCCL loads it; exports:";
  for (int v = 7; v >= 2; --v) {
    const std::string name = "ncclTunerPlugin_v" + std::to_string(v);
    r.text += dlsym(handle, name.c_str()) ? " " + name : " (no " + name + ")";
  }
  r.text += "\n";
  const auto* v5 = static_cast<const abi::TunerV5*>(dlsym(handle, "ncclTunerPlugin_v5"));
  if (!v5) {
    r.text += "  ncclTunerPlugin_v5 missing: NCCL 2.28 would not use this plugin\n";
    return r;  // handle stays open: the process ends soon and the plugin may hold static state
  }
  // One communicator's cycle, with the cost table NCCL builds on a PCIe node: float[7][3], IGNORE
  // everywhere but TREE/RING x LL/SIMPLE.
  float table[7][3];
  for (auto& row : table) row[0] = row[1] = row[2] = abi::kAlgoProtoIgnore;
  table[0][0] = 12.0f;
  table[0][2] = 30.0f;
  table[1][0] = 10.0f;
  table[1][2] = 25.0f;
  void* ctx = nullptr;
  // The copy loaded here builds its state at this init: SYMMEM_LOG=quiet keeps its "nccl-symmem:" lines
  // (the plugin active, a fallback) off this tool's stderr. The caller's value comes back after.
  const char* logWas = std::getenv("SYMMEM_LOG");
  const std::string logBefore = logWas ? logWas : "";
  setenv("SYMMEM_LOG", "quiet", 1);
  const bool initOk = v5->init(&ctx, 0x5eed, 8, 1, quietLogger, nullptr, nullptr) == abi::kSuccess;
  if (logWas)
    setenv("SYMMEM_LOG", logBefore.c_str(), 1);
  else
    unsetenv("SYMMEM_LOG");
  int nChannels = 0;
  const bool collOk =
      v5->getCollInfo(ctx, 4, 4096, 1, reinterpret_cast<float**>(table), 7, 3, 0, &nChannels) == abi::kSuccess;
  int ignored = 0;
  for (auto& row : table)
    for (float c : row) ignored += c < 0;
  const bool finOk = v5->finalize(ctx) == abi::kSuccess;
  r.ok = initOk && collOk && finOk && ignored == 17;
  r.text += std::string("  v5 init(8 ranks, 1 node) ") + (initOk ? "ok" : "FAILED") + ", getCollInfo(allreduce 4KiB) " +
            (collOk ? "ok" : "FAILED") + ", IGNORE entries kept " + std::to_string(ignored) + "/17, finalize " +
            (finOk ? "ok" : "FAILED") + "\n";
  return r;
}

}  // namespace symmem

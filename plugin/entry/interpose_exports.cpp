// SPDX-License-Identifier: Apache-2.0
// The NCCL entry points the plugin defines (PMPI style): reached when the shared object is
// preloaded, loaded in place of libnccl (it depends on libnccl.so.2, so everything it does not
// define still resolves), or attached. Each forwards to the interposer, which forwards to NCCL's
// pnccl aliases for everything it does not take.
#include <dlfcn.h>
#include <nccl.h>

#include <mutex>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/settings.h"
#include "plugin/attach.h"
#include "plugin/code_hook.h"
#include "plugin/interposer.h"
#include "plugin/nccl_real.h"
#include "plugin/process.h"
#include "plugin/self_pin.h"
#include "plugin/tuner.h"

#define SYMMEM_EXPORT extern "C" __attribute__((visibility("default")))

using symmem::Process;

SYMMEM_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return Process::get().interposer().allReduce(sendbuff, recvbuff, count, datatype, op, comm, stream);
}

SYMMEM_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) { return Process::get().interposer().commDestroy(comm); }
SYMMEM_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) { return Process::get().interposer().commFinalize(comm); }
SYMMEM_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) { return Process::get().interposer().commAbort(comm); }
SYMMEM_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags) {
  return Process::get().interposer().commRevoke(comm, flags);
}
SYMMEM_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return Process::get().interposer().commGetAsyncError(comm, asyncError);
}
SYMMEM_EXPORT ncclResult_t ncclGroupStart() { return Process::get().interposer().groupStart(); }
SYMMEM_EXPORT ncclResult_t ncclGroupEnd() { return Process::get().interposer().groupEnd(); }

namespace {

using symmem::CodeHook;
using symmem::Rebinding;

void* fn(auto f) { return reinterpret_cast<void*>(f); }

// The entry points the interposer must see, as (name, our definition, NCCL's). All of them or none:
// an all-reduce seen without its group calls could run a kernel inside a group, and one seen without
// the teardown calls would outlive its communicator.
struct EntryPoint {
  const char* name;
  void* ours;
  void* real;
};

std::vector<EntryPoint> entryPoints(const symmem::RealNccl& real) {
  std::vector<EntryPoint> points = {
      {"ncclAllReduce", fn(&ncclAllReduce), fn(real.allReduce)},
      {"ncclCommDestroy", fn(&ncclCommDestroy), fn(real.commDestroy)},
      {"ncclCommAbort", fn(&ncclCommAbort), fn(real.commAbort)},
      {"ncclGroupStart", fn(&ncclGroupStart), fn(real.groupStart)},
      {"ncclGroupEnd", fn(&ncclGroupEnd), fn(real.groupEnd)},
  };
  // Entry points this NCCL may not have (Finalize 2.14+, Revoke 2.28.7+).
  if (real.commFinalize) points.push_back({"ncclCommFinalize", fn(&ncclCommFinalize), fn(real.commFinalize)});
  if (real.commRevoke) points.push_back({"ncclCommRevoke", fn(&ncclCommRevoke), fn(real.commRevoke)});
  return points;
}

// Entry points taken where they can be, not needed for the others: ncclCommGetAsyncError reports a
// symmetric kernel's timeout inside a replayed graph (without it, the next call or teardown does).
std::vector<EntryPoint> optionalEntryPoints(const symmem::RealNccl& real) {
  return {{"ncclCommGetAsyncError", fn(&ncclCommGetAsyncError), fn(real.commGetAsyncError)}};
}

// Code hooks on libnccl's own functions: every caller reaches the plugin, whatever pointer it holds.
bool hookEntryPoints(const std::vector<EntryPoint>& points, const symmem::Settings& settings, bool optional = false) {
  std::vector<CodeHook> hooks;
  for (const EntryPoint& p : points) hooks.push_back({p.name, p.real, p.ours});
  symmem::CodeHookOptions options;
  options.disassembler = settings.text(symmem::SettingId::Disassembler);
  // The interposer forwards through the trampolines.
  options.beforeWrite = [](void* function, void* original) {
    symmem::forwardThrough(Process::get().nccl(), function, original);
  };
  const symmem::CodeHookReport report = symmem::installCodeHooks(hooks, options);
  if (!report.installed) {
    SYMMEM_INFO(symmem::kLogInit,
                optional ? "optional code hook not used: %s" : "code hooks not used: %s; falling back to GOT attach",
                report.refusal.c_str());
    return false;
  }
  std::string moved;
  for (const symmem::InstalledHook& h : report.hooks) moved += (moved.empty() ? "" : "; ") + h.name + ": " + h.moved;
  if (optional) {
    SYMMEM_INFO(symmem::kLogInit, "hooked the optional entry point(s) too [%s]", moved.c_str());
    return true;
  }
  SYMMEM_INFO(symmem::kLogInit,
              "hooked %zu libnccl entry points (%d other threads parked, %d moved): every caller of them now "
              "reaches the plugin [%s]",
              report.hooks.size(), report.threadsParked, report.threadsMoved, moved.c_str());
  return true;
}

// GOT attach: the process's references to the entry points (what dynamically linked callers such as
// nccl-tests and libtorch_cuda.so call through) are rebound to the plugin.
void rebindEntryPoints(const std::vector<EntryPoint>& points) {
  // The forward targets are NCCL's pncclX aliases, already resolved: never looked up by the ncclX
  // name, which this object defines too.
  std::vector<Rebinding> rebindings;
  for (const EntryPoint& p : points) rebindings.push_back({p.name, p.ours, nullptr, p.real});
  symmem::AttachOptions options;
  options.definingLibrary = "libnccl.so.2";
  symmem::attachRebindings(rebindings, options);
}

std::string objectName(void* address) {
  Dl_info info{};
  return address && dladdr(address, &info) && info.dli_fname ? info.dli_fname : "unknown";
}

// The pncclAllReduce of the NCCL whose code holds `address` (NCCL's logger), or null when that object
// is not an NCCL (a test's logger, none at all).
void* ncclAllReduceOf(void* address) {
  Dl_info info{};
  if (!address || !dladdr(address, &info) || !info.dli_fname) return nullptr;
  void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return nullptr;
  void* f = dlsym(handle, "pncclAllReduce");
  dlclose(handle);
  return f;
}

// At every tuner init: NCCL loaded us only as its tuner, so the application's calls still lead to
// libnccl. The first time, hook libnccl's entry points (or, failing that, rebind GOT slots) so that
// the environment variable alone is enough.
void attachOnce() {
  static std::mutex mutex;
  static bool attached = false;
  static bool hooked = false;
  std::lock_guard<std::mutex> lock(mutex);
  const symmem::Settings& settings = Process::get().settings();
  // SYMMEM_ENABLE=0 and SYMMEM_SYMMETRIC=0 still attach: such a rank must take part in the setup vote
  // of each communicator (plugin/setup_vote.h), or its peers' setup would pair with its all-reduces.
  if (!settings.flag(symmem::SettingId::Attach)) {
    if (!attached) SYMMEM_INFO(symmem::kLogInit, "attach off (SYMMEM_ATTACH=0): only a preloaded plugin interposes");
    attached = true;
    return;
  }
  if (attached) {
    // New objects (an extension module loaded after the first communicator) get covered too; hooked
    // code already covers them.
    if (!hooked && symmem::loadedObjectsChangedSinceAttach()) symmem::reattachRebindings();
    return;
  }
  attached = true;
  const symmem::RealNccl& real = Process::get().nccl();
  if (!real.usable()) {
    SYMMEM_WARN("attach skipped: the NCCL functions to forward to could not be found");
    return;
  }
  // Two NCCL copies in one process (a ctypes client pointed at another libnccl than torch's, say): the
  // plugin forwards to the libnccl.so.2 it was linked against, which must be the one that loaded it
  // as its tuner (NCCL's logger lives there). Otherwise hooking or rebinding would pair one NCCL's
  // communicators with the other's functions.
  void* loadingNccl = ncclAllReduceOf(fn(symmem::ncclLogger()));
  if (loadingNccl && loadingNccl != fn(real.allReduce)) {
    SYMMEM_WARN(
        "attach skipped: the NCCL that loaded the plugin (%s) is not the libnccl.so.2 it forwards to (%s); "
        "all-reduces stay on NCCL",
        objectName(fn(symmem::ncclLogger())).c_str(), objectName(fn(real.allReduce)).c_str());
    return;
  }
  // Pinned before anything points into the plugin: NCCL dlcloses its tuner after the last
  // communicator, while hooked code and rebound slots would still lead here.
  std::string self, why;
  if (!symmem::pinLoadedObject(fn(&attachOnce), &self, &why)) {
    SYMMEM_WARN("attach skipped: the plugin cannot keep itself loaded (%s)", why.c_str());
    return;
  }
  SYMMEM_INFO(symmem::kLogInit, "%s stays loaded for the life of the process (RTLD_NODELETE)", self.c_str());
  const std::vector<EntryPoint> points = entryPoints(real);
  if (!settings.flag(symmem::SettingId::Hooks)) {
    SYMMEM_INFO(symmem::kLogInit, "code hooks off (SYMMEM_HOOKS=0): GOT attach only");
  } else if (hookEntryPoints(points, settings)) {
    hooked = true;
    hookEntryPoints(optionalEntryPoints(real), settings, /*optional=*/true);
    return;
  }
  std::vector<EntryPoint> all = points;
  for (const EntryPoint& p : optionalEntryPoints(real)) all.push_back(p);
  rebindEntryPoints(all);
}

// Registered when the shared object is loaded, before NCCL can call the tuner.
const bool kHookRegistered = [] {
  symmem::setTunerInitHook(&attachOnce);
  return true;
}();

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// The NCCL entry points the plugin defines (PMPI style): reached when the shared object is
// preloaded, loaded in place of libnccl (it depends on libnccl.so.2, so everything it does not
// define still resolves), or attached. Each forwards to the interposer, which forwards to NCCL's
// pnccl aliases for everything it does not take.
#include <dlfcn.h>
#include <link.h>
#include <nccl.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "core/comm_identity.h"
#include "core/log.h"
#include "core/settings.h"
#include "plugin/entry/copy_entries.h"
#include "plugin/hooks/attach.h"
#include "plugin/hooks/code_hook.h"
#include "plugin/hooks/self_pin.h"
#include "plugin/interpose/comm_names.h"
#include "plugin/interpose/comm_tickets.h"
#include "plugin/interpose/creation_calls.h"
#include "plugin/interpose/interposer.h"
#include "plugin/interpose/nccl_copies.h"
#include "plugin/interpose/served_copies.h"
#include "plugin/nccl/nccl_real.h"
#include "plugin/process/process.h"
#include "plugin/tuner/tuner.h"
#include "symmem/version.h"

#define SYMMEM_EXPORT extern "C" __attribute__((visibility("default")))

using symmem::Process;
using symmem::ServedCopies;
using symmem::entry::Entries;

// Copy 0's entry points (plugin/entry/copy_entries.h): the libnccl.so.2 this object is linked against.
SYMMEM_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return Entries<0>::allReduce(sendbuff, recvbuff, count, datatype, op, comm, stream);
}
SYMMEM_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) { return Entries<0>::commDestroy(comm); }
SYMMEM_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) { return Entries<0>::commFinalize(comm); }
SYMMEM_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) { return Entries<0>::commAbort(comm); }
SYMMEM_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags) { return Entries<0>::commRevoke(comm, flags); }
SYMMEM_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return Entries<0>::commGetAsyncError(comm, asyncError);
}
SYMMEM_EXPORT ncclResult_t ncclGroupStart() { return Entries<0>::groupStart(); }
SYMMEM_EXPORT ncclResult_t ncclGroupEnd() { return Entries<0>::groupEnd(); }
SYMMEM_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  return Entries<0>::groupSimulateEnd(simInfo);
}

namespace {

using symmem::CodeHook;
using symmem::Rebinding;

void* fn(auto f) { return reinterpret_cast<void*>(f); }

// The entry points the interposer must see, as (name, our definition, NCCL's). All of them or none:
// an all-reduce seen without its group calls could run a kernel inside a group (or hold one past a
// group's simulated end), and one seen without the teardown calls would outlive its communicator.
struct EntryPoint {
  const char* name;
  void* ours;
  void* real;
};

std::vector<EntryPoint> entryPoints(const symmem::RealNccl& real, int copy) {
  const symmem::entry::EntrySet& ours = symmem::entry::entrySet(copy);
  std::vector<EntryPoint> points = {
      {"ncclAllReduce", ours.allReduce, fn(real.allReduce)},
      {"ncclCommDestroy", ours.commDestroy, fn(real.commDestroy)},
      {"ncclCommAbort", ours.commAbort, fn(real.commAbort)},
      {"ncclGroupStart", ours.groupStart, fn(real.groupStart)},
      {"ncclGroupEnd", ours.groupEnd, fn(real.groupEnd)},
  };
  // Entry points this NCCL may not have (Finalize 2.14+, SimulateEnd 2.22+, Revoke 2.28.7+).
  if (real.commFinalize) points.push_back({"ncclCommFinalize", ours.commFinalize, fn(real.commFinalize)});
  if (real.groupSimulateEnd)
    points.push_back({"ncclGroupSimulateEnd", ours.groupSimulateEnd, fn(real.groupSimulateEnd)});
  if (real.commRevoke) points.push_back({"ncclCommRevoke", ours.commRevoke, fn(real.commRevoke)});
  return points;
}

// Entry points taken where they can be, not needed for the others: ncclCommGetAsyncError reports a
// symmetric kernel's timeout inside a replayed graph (without it, the next call or teardown does);
// ncclAllReduceConfig (NCCL 2.31+) is a second way to issue an all-reduce (without it, those calls
// stay on NCCL).
std::vector<EntryPoint> optionalEntryPoints(const symmem::RealNccl& real, int copy) {
  const symmem::entry::EntrySet& ours = symmem::entry::entrySet(copy);
  std::vector<EntryPoint> points = {{"ncclCommGetAsyncError", ours.commGetAsyncError, fn(real.commGetAsyncError)}};
  if (real.allReduceConfig) points.push_back({"ncclAllReduceConfig", ours.allReduceConfig, fn(real.allReduceConfig)});
  // The creation calls (plugin/interpose/comm_names.h): without them a communicator is found by its context slot.
  if (real.commInitRank) points.push_back({"ncclCommInitRank", ours.commInitRank, fn(real.commInitRank)});
  if (real.commInitRankConfig)
    points.push_back({"ncclCommInitRankConfig", ours.commInitRankConfig, fn(real.commInitRankConfig)});
  if (real.commInitRankScalable)
    points.push_back({"ncclCommInitRankScalable", ours.commInitRankScalable, fn(real.commInitRankScalable)});
  if (real.commSplit) points.push_back({"ncclCommSplit", ours.commSplit, fn(real.commSplit)});
  if (real.commGrow) points.push_back({"ncclCommGrow", ours.commGrow, fn(real.commGrow)});
  return points;
}

// The plugin as it names itself in the trampoline page, so that another copy can tell whose hooks
// it finds: "nccl-symmem 0.1.0 (/path/libnccl-tuner-symmem.so)".
std::string ownerName() {
  Dl_info info{};
  const char* path = dladdr(fn(&ncclAllReduce), &info) && info.dli_fname ? info.dli_fname : "?";
  return std::string("nccl-symmem ") + SYMMEM_VERSION_STRING + " (" + path + ")";
}

// Called while other threads are parked: atomic stores only. Every copy's table is offered the change:
// a function's address is its own copy's alone.
void retargetForwarding(void* from, void* to) {
  symmem::NcclCopies& copies = ServedCopies::get().ncclCopies();
  for (int i = 0; i < copies.count(); ++i) symmem::forwardThrough(copies.at(i), from, to);
}

// NCCL calls some of its own entry points through its PLT (ncclCommGetAsyncError from every
// enqueue's readiness check): those calls go straight to the trampolines, so NCCL's own work never
// passes through the plugin, under both of each function's names.
void keepNcclsOwnCallsOffTheHooks(const std::vector<symmem::InstalledHook>& hooks) {
  std::vector<std::string> names;
  names.reserve(hooks.size() * 2);
  std::vector<Rebinding> rebindings;
  for (const symmem::InstalledHook& h : hooks) {
    names.push_back(h.name);
    names.push_back("p" + h.name);
  }
  for (size_t i = 0; i < names.size(); ++i) rebindings.push_back({names[i].c_str(), hooks[i / 2].original, nullptr});
  if (!hooks.empty()) {
    const int slots = symmem::rebindOwnCalls(hooks[0].target, rebindings);
    SYMMEM_INFO(symmem::kLogInit, "%d of libnccl's own calls to hooked entry points go straight to NCCL", slots);
  }
}

enum class HookOutcome { Hooked, Refused, AnotherCopyHooked };

// Code hooks on libnccl's own functions, required and optional ones in one round: every caller
// reaches the plugin, whatever pointer it holds.
HookOutcome hookEntryPoints(int copy, const symmem::Settings& settings) {
  const symmem::RealNccl& real = ServedCopies::get().nccl(copy);
  const std::vector<EntryPoint> required = entryPoints(real, copy);
  const std::vector<EntryPoint> optional = optionalEntryPoints(real, copy);
  // Copy 0 is "libnccl"; another copy is named with its path (plugin/interpose/nccl_copies.h).
  const std::string whose =
      copy == 0 ? std::string("libnccl") : "NCCL copy " + std::to_string(copy) + " (" + real.library + ")";
  const std::string points = copy == 0 ? std::string("libnccl entry points") : "entry points of " + whose;
  std::vector<CodeHook> hooks;
  for (const EntryPoint& p : required) hooks.push_back({p.name, p.real, p.ours});
  for (const EntryPoint& p : optional) hooks.push_back({p.name, p.real, p.ours, /*optional=*/true});
  symmem::CodeHookOptions options;
  options.disassembler = settings.text(symmem::SettingId::Disassembler);
  options.owner = ownerName();
  options.retarget = &retargetForwarding;  // the interposer forwards through the trampolines
  const symmem::CodeHookReport report = symmem::installCodeHooks(hooks, options);
  if (!report.installed && !report.otherOwner.empty()) {
    SYMMEM_INFO(symmem::kLogInit,
                "another copy of the plugin already hooks libnccl (%s): this copy (%s) only tunes; load one copy "
                "(the same path in NCCL_TUNER_PLUGIN and LD_PRELOAD) to avoid two",
                report.otherOwner.c_str(), options.owner.c_str());
    return HookOutcome::AnotherCopyHooked;
  }
  if (!report.installed) {
    SYMMEM_WARN("code hooks not used%s: %s; %s (docs/troubleshooting.md, \"Code hooks not used\")",
                copy == 0 ? "" : (" on " + whose).c_str(), report.refusal.c_str(),
                copy == 0
                    ? "falling back to GOT attach, which dynamically linked callers (nccl-tests, PyTorch) go through "
                      "but ctypes clients (vLLM's and SGLang's pynccl) do not: their all-reduces stay on NCCL"
                    : "that copy's all-reduces stay on NCCL");
    SYMMEM_NOTICE_ONCE("hooks-refused",
                       "code hooks on libnccl refused (%s): ctypes clients (vLLM's and SGLang's pynccl) keep stock "
                       "NCCL's all-reduce; tried again at the next communicators (docs/troubleshooting.md, \"Code "
                       "hooks not used\")",
                       report.refusal.c_str());
    return HookOutcome::Refused;
  }
  std::string moved;
  for (const symmem::InstalledHook& h : report.hooks) moved += (moved.empty() ? "" : "; ") + h.name + ": " + h.moved;
  SYMMEM_INFO(symmem::kLogInit,
              "hooked %zu %s (%d other threads parked, %d in system calls, %d moved): every caller "
              "of them now reaches the plugin [%s]",
              report.hooks.size(), points.c_str(), report.threadsParked, report.threadsInSystemCall,
              report.threadsMoved, moved.c_str());
  for (const std::string& s : report.skipped)
    SYMMEM_INFO(symmem::kLogInit, "optional code hook not used: %s", s.c_str());
  for (const std::string& n : report.notes) SYMMEM_WARN("code hooks: %s", n.c_str());
  keepNcclsOwnCallsOffTheHooks(report.hooks);
  return HookOutcome::Hooked;
}

// What a GOT attach did: a summary line, each object rebound, and each thing not covered (once).
void logAttachReport(const symmem::AttachReport& report) {
  SYMMEM_INFO(symmem::kLogInit, "attach: %d GOT slot(s) in %zu object(s) lead to the plugin (%d rewritten now)",
              report.slotsPatched, report.patchedObjects.size(), report.slotsWritten);
  for (const std::string& object : report.patchedObjects)
    SYMMEM_INFO(symmem::kLogInit, "attach: rebound %s", object.c_str());
  for (const std::string& symbol : report.unreferenced)
    SYMMEM_INFO(symmem::kLogInit, "attach: no loaded object imports %s", symbol.c_str());
  for (const std::string& line : report.notCovered)
    SYMMEM_WARN_ONCE("attach:" + line, "attach: not covered: %s", line.c_str());
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
  logAttachReport(symmem::attachRebindings(rebindings, options));
}

// Every entry point of copy 0, required and optional, rebound in the process's GOT. Only copy 0's:
// references bound by the soname libnccl.so.2 lead to it (the first libnccl.so.2 loaded), and a
// second copy is reached by its path, through dlsym, which never reads a GOT.
void rebindAll() {
  const symmem::RealNccl& real = ServedCopies::get().nccl(0);
  std::vector<EntryPoint> all = entryPoints(real, 0);
  const std::vector<EntryPoint> optional = optionalEntryPoints(real, 0);
  all.insert(all.end(), optional.begin(), optional.end());
  rebindEntryPoints(all);
}

std::string objectName(const void* address) { return symmem::NcclCopies::objectName(address); }

// Another copy of this plugin whose ncclAllReduce is the process's global definition (preloaded, or
// loaded RTLD_GLOBAL from another path): it interposes every dynamically linked caller already, and
// hooks of this copy under it would put each call through two interposers. Its path, or "".
std::string globalCopyOfThePlugin() {
  void* global = dlsym(RTLD_DEFAULT, "ncclAllReduce");
  Dl_info info{};
  if (!global || global == fn(&ncclAllReduce) || !dladdr(global, &info) || !info.dli_fname) return "";
  void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return "";
  const auto* tuner = static_cast<const symmem::abi::TunerV5*>(dlsym(handle, "ncclTunerPlugin_v5"));
  const bool copy = tuner && tuner->name && std::strcmp(tuner->name, symmem::kPluginName) == 0;
  dlclose(handle);
  return copy ? info.dli_fname : "";
}

// A plugin built with libstdc++ linked in (some toolchains do that for every shared object) would
// leave that runtime's load-time allocations behind at every NCCL unload: it stays loaded instead.
// Changes nothing in libnccl, so SYMMEM_ENABLE=0 does not skip it.
bool pinIfItCarriesItsOwnCxxRuntime() {
  if (!symmem::carriesItsOwnCxxRuntime(fn(&pinIfItCarriesItsOwnCxxRuntime))) return false;
  std::string self, why;
  if (!symmem::pinLoadedObject(fn(&pinIfItCarriesItsOwnCxxRuntime), &self, &why)) {
    SYMMEM_INFO(symmem::kLogInit,
                "this build carries its own C++ runtime and cannot keep itself loaded (%s): each "
                "reload keeps that runtime's load-time memory (72 KiB with GCC 13)",
                why.c_str());
    return false;
  }
  SYMMEM_INFO(symmem::kLogInit,
              "%s carries its own C++ runtime (libstdc++ linked in): kept mapped until the process "
              "exits, since that runtime's load keeps memory no unload frees",
              self.c_str());
  return true;
}

// What one NCCL copy's attach came to (attachOnce).
struct CopyAttach {
  bool hooked = false;
  int hookAttempts = 0;
  bool rebound = false;  // copy 0's GOT slots rebound (hooks off, or the first refusal)
  std::string whyNotHooked;
};

// The part done once per process, the first time NCCL loads the plugin: pinned, and the reasons the
// process as a whole cannot attach. "" when it can.
std::string attachProcessOnce() {
  if (!ServedCopies::get().nccl(0).usable()) {
    SYMMEM_WARN("attach skipped: the NCCL functions to forward to could not be found");
    return "the NCCL functions to forward to could not be found";
  }
  if (const std::string other = globalCopyOfThePlugin(); !other.empty()) {
    SYMMEM_INFO(symmem::kLogInit,
                "another copy of the plugin (%s) interposes NCCL for the whole process: this copy (%s) only "
                "tunes; load one copy (the same path in NCCL_TUNER_PLUGIN and LD_PRELOAD) to avoid two",
                other.c_str(), objectName(fn(&attachProcessOnce)).c_str());
    return "another copy of the plugin interposes NCCL in this process";
  }
  // Pinned before anything points into the plugin: NCCL dlcloses its tuner after the last
  // communicator, while hooked code and rebound slots would still lead here.
  std::string self, why;
  if (!symmem::pinLoadedObject(fn(&attachProcessOnce), &self, &why)) {
    SYMMEM_WARN("attach skipped: the plugin cannot keep itself loaded (%s)", why.c_str());
    return "the plugin cannot keep itself loaded";
  }
  Process::get().markReachable();
  SYMMEM_INFO(symmem::kLogInit, "%s stays loaded for the life of the process (RTLD_NODELETE)", self.c_str());
  return "";
}

// Serialises attachOnce. Held around the hook install and the first use of the served copies: the
// outermost lock of a tuner init, so taken first around a fork (registerAttachForkHandlers).
std::mutex gAttachMutex;

// At every tuner init: NCCL loaded us only as its tuner, so the application's calls still lead to
// libnccl. Hook the entry points of the NCCL copy that loaded the plugin (`logger` is that copy's:
// plugin/interpose/nccl_copies.h), or, failing that, rebind GOT slots, so that the environment variable alone
// is enough. Returns whether every all-reduce of that copy now reaches the plugin (only code hooks
// promise that: a ctypes caller never passes through a GOT), and if not, why: the tuner declares it to
// the communicator's peers (plugin/interpose/rendezvous.h), so that a rank left unhooked keeps every rank on
// NCCL instead of hanging them. A refused install (threads that would not park in time) is tried again
// at the next communicators of that copy, a few times, before the process gives up on it.
bool attachOnce(symmem::abi::Logger logger, std::string* whyNot) {
  constexpr int kHookAttempts = 3;
  static bool attached = false;  // the once-per-process part is done
  static std::string processRefusal;
  static std::array<CopyAttach, symmem::kMaxNcclCopies> copies;
  std::lock_guard<std::mutex> lock(gAttachMutex);
  const symmem::Settings& settings = Process::get().settings();
  auto no = [&](std::string why) {
    *whyNot = std::move(why);
    return false;
  };
  static const bool pinnedForItsRuntime = pinIfItCarriesItsOwnCxxRuntime();
  (void)pinnedForItsRuntime;
  // Off means off: libnccl is left as it is, and the tuner tells this rank's peers to stay on NCCL.
  if (!settings.flag(symmem::SettingId::Enable)) {
    if (!attached) SYMMEM_INFO(symmem::kLogInit, "SYMMEM_ENABLE=0: libnccl left untouched, NCCL's own choices kept");
    attached = true;
    return no("SYMMEM_ENABLE=0 on this rank");
  }
  if (!settings.flag(symmem::SettingId::Attach)) {
    if (!attached) SYMMEM_INFO(symmem::kLogInit, "attach off (SYMMEM_ATTACH=0): only a preloaded plugin interposes");
    attached = true;
    return no("SYMMEM_ATTACH=0 on this rank");
  }
  if (!attached) {
    attached = true;
    processRefusal = attachProcessOnce();
  }
  if (!processRefusal.empty()) return no(processRefusal);
  std::string why;
  const std::optional<int> copy = ServedCopies::get().ncclCopies().copyThatLoaded(logger, &why);
  if (!copy) {
    SYMMEM_WARN_ONCE("attach:" + why, "attach skipped: %s; all-reduces stay on NCCL", why.c_str());
    return no(why);
  }
  CopyAttach& a = copies[static_cast<size_t>(*copy)];
  if (a.hooked) return true;
  // Copy 0's GOT slots cover objects loaded since they were rebound.
  if (a.rebound && symmem::loadedObjectsChangedSinceAttach()) logAttachReport(symmem::reattachRebindings());
  if (!settings.flag(symmem::SettingId::Hooks)) {
    if (*copy == 0 && !a.rebound) {
      SYMMEM_INFO(symmem::kLogInit, "code hooks off (SYMMEM_HOOKS=0): GOT attach only");
      rebindAll();
      a.rebound = true;
    }
    return no("code hooks off (SYMMEM_HOOKS=0): GOT rebinding does not reach ctypes callers");
  }
  if (a.hookAttempts >= kHookAttempts) return no(a.whyNotHooked);
  ++a.hookAttempts;
  switch (hookEntryPoints(*copy, settings)) {
    case HookOutcome::Hooked:
      a.hooked = true;
      // In at the first try, inside the first communicator's creation (each one's tuner init waits
      // here): no communicator of the process has had a child yet, so every child count starts at 0.
      // A later copy's hooks say nothing about communicators made before them.
      if (*copy == 0) symmem::setUnseenParentsCountedFromTheirStart(a.hookAttempts == 1);
      return true;
    case HookOutcome::AnotherCopyHooked:
      a.hookAttempts = kHookAttempts;
      a.whyNotHooked = "another copy of the plugin hooks libnccl in this process";
      return no(a.whyNotHooked);
    case HookOutcome::Refused:
      break;
  }
  // Dynamically linked callers of copy 0 are covered meanwhile; the next communicator tries the hooks
  // again.
  if (*copy == 0 && !a.rebound) {
    rebindAll();
    a.rebound = true;
  }
  a.whyNotHooked = "code hooks not installed";
  return no(a.whyNotHooked + (a.hookAttempts < kHookAttempts ? " (tried again at the next communicator)" : ""));
}

// A child forked while another thread is inside a tuner init must find no lock of it held: the child
// may make communicators of its own. glibc runs the prepare handlers in reverse order of
// registration, so the outermost lock (the attach policy's) is registered last and taken first, then
// the served copies' and the communicator tables', then the hook installer's.
void registerAttachForkHandlers() {
  symmem::registerCodeHookForkHandlers();
  ServedCopies::registerForkHandlers();  // the communicator tables a tuner init fills are guarded from the start
  pthread_atfork([] { gAttachMutex.lock(); }, [] { gAttachMutex.unlock(); },
                 [] { new (&gAttachMutex) std::mutex; });  // held by the forking thread, which the child lacks
}

// Registered when the shared object is loaded, before NCCL can call the tuner.
const bool kHookRegistered = [] {
  symmem::setTunerInitHook(&attachOnce);
  registerAttachForkHandlers();
  return true;
}();

// As the shared object is unloaded (NCCL's dlclose of an unpinned tuner, or the process's exit): the
// process state goes with it unless something outside can still reach it.
// The NCCL copies served go first (never while an interposer lives on them), then the process's facts.
__attribute__((destructor)) void releaseProcessState() {
  const bool tunerContexts = symmem::tuner::liveContexts() != 0;
  if (!symmem::ServedCopies::releaseIfUnused(tunerContexts || Process::reachable())) return;
  Process::releaseIfUnused(tunerContexts);
}

}  // namespace

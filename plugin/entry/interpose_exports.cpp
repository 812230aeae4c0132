// SPDX-License-Identifier: Apache-2.0
// The NCCL entry points the plugin defines (PMPI style): reached when the shared object is
// preloaded, loaded in place of libnccl (it depends on libnccl.so.2, so everything it does not
// define still resolves), or attached. Each forwards to the interposer, which forwards to NCCL's
// pnccl aliases for everything it does not take.
#include <dlfcn.h>
#include <link.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/comm_identity.h"
#include "core/log.h"
#include "core/settings.h"
#include "plugin/attach.h"
#include "plugin/code_hook.h"
#include "plugin/comm_names.h"
#include "plugin/comm_tickets.h"
#include "plugin/creation_calls.h"
#include "plugin/interposer.h"
#include "plugin/nccl_real.h"
#include "plugin/process.h"
#include "plugin/self_pin.h"
#include "plugin/tuner.h"
#include "symmem/version.h"

#define SYMMEM_EXPORT extern "C" __attribute__((visibility("default")))

using symmem::Process;

namespace {

// No exception may leave an entry point into the application's C caller (that would be
// std::terminate): a failure inside the plugin (an allocation, a thread that cannot start) is said once
// per entry point, and the call goes to NCCL as if the plugin were not there; unless the call had
// already passed its point of no return (symmem::PointOfNoReturn: a setup agreed on, a symmetric
// kernel launched, a group's end begun), where NCCL would run it a second time or pair it with
// nothing: it then returns ncclInternalError.
template <typename Ours, typename Nccls>
ncclResult_t guarded(std::once_flag& said, const char* name, Ours&& ours, Nccls&& nccls) {
  char what[192] = "unknown exception";
  bool begun = false;
  {
    const symmem::PointOfNoReturn point;
    try {
      return ours();
    } catch (const std::exception& e) {
      std::snprintf(what, sizeof(what), "%s", e.what());
    } catch (...) {
    }
    begun = point.passed();
  }
  try {
    if (begun) {
      std::call_once(said, [&] {
        SYMMEM_WARN(
            "%s: internal error (%s) after the call had begun; it returns ncclInternalError, and is not "
            "handed to NCCL",
            name, what);
      });
      return ncclInternalError;
    }
    std::call_once(said, [&] { SYMMEM_WARN("%s: internal error (%s); the call goes to NCCL", name, what); });
    return nccls(Process::get().nccl());
  } catch (...) {
    return ncclInternalError;
  }
}

#define SYMMEM_GUARDED(name, ours, nccls)                                                       \
  do {                                                                                          \
    static std::once_flag said;                                                                 \
    return guarded(                                                                             \
        said, name, [&] { return ours; }, [&](const symmem::RealNccl& real) { return nccls; }); \
  } while (0)

// A null function (an NCCL without it) answers as NCCL's own absence would.
template <typename F, typename... Args>
ncclResult_t callOrInvalid(F f, Args... args) {
  return f ? f(args...) : ncclInvalidUsage;
}

}  // namespace

SYMMEM_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  SYMMEM_GUARDED("ncclAllReduce",
                 Process::get().interposer().allReduce(sendbuff, recvbuff, count, datatype, op, comm, stream),
                 callOrInvalid(real.allReduce, sendbuff, recvbuff, count, datatype, op, comm, stream));
}
SYMMEM_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  symmem::forgetComm(comm);  // its address may be the next communicator's
  SYMMEM_GUARDED("ncclCommDestroy", Process::get().interposer().commDestroy(comm),
                 callOrInvalid(real.commDestroy, comm));
}
SYMMEM_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  SYMMEM_GUARDED("ncclCommFinalize", Process::get().interposer().commFinalize(comm),
                 callOrInvalid(real.commFinalize, comm));
}
SYMMEM_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  symmem::forgetComm(comm);
  SYMMEM_GUARDED("ncclCommAbort", Process::get().interposer().commAbort(comm), callOrInvalid(real.commAbort, comm));
}
SYMMEM_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags) {
  SYMMEM_GUARDED("ncclCommRevoke", Process::get().interposer().commRevoke(comm, flags),
                 callOrInvalid(real.commRevoke, comm, flags));
}
SYMMEM_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  SYMMEM_GUARDED("ncclCommGetAsyncError", Process::get().interposer().commGetAsyncError(comm, asyncError),
                 callOrInvalid(real.commGetAsyncError, comm, asyncError));
}
SYMMEM_EXPORT ncclResult_t ncclGroupStart() {
  SYMMEM_GUARDED("ncclGroupStart", Process::get().interposer().groupStart(), callOrInvalid(real.groupStart));
}
SYMMEM_EXPORT ncclResult_t ncclGroupEnd() {
  SYMMEM_GUARDED("ncclGroupEnd", Process::get().interposer().groupEnd(), callOrInvalid(real.groupEnd));
}
SYMMEM_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  SYMMEM_GUARDED("ncclGroupSimulateEnd", Process::get().interposer().groupSimulateEnd(simInfo),
                 callOrInvalid(real.groupSimulateEnd, simInfo));
}

namespace {
// NCCL 2.31's ncclAllReduceConfig (its config type is not in the headers built against): reached only
// through the code hooks and GOT rebinding, never exported (exports.map).
ncclResult_t allReduceConfigEntry(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const void* config) {
  SYMMEM_GUARDED(
      "ncclAllReduceConfig",
      Process::get().interposer().allReduceConfig(sendbuff, recvbuff, count, datatype, op, comm, stream, config),
      callOrInvalid(real.allReduceConfig, sendbuff, recvbuff, count, datatype, op, comm, stream, config));
}
}  // namespace

namespace {
// The calls that make communicators: each goes to NCCL unchanged, and the communicator it made is
// named from its arguments (plugin/comm_names.h). Reached only through the code hooks and GOT
// rebinding, never exported. Naming never fails the call: its own failure only leaves the
// communicator unnamed (found by its context slot, as before).
void nameCreated(ncclResult_t r, const ncclComm_t* newcomm, uint64_t identity, symmem::NamedBy by) noexcept {
  if ((r != ncclSuccess && r != ncclInProgress) || newcomm == nullptr || *newcomm == nullptr || identity == 0) return;
  try {
    symmem::nameComm(*newcomm, {identity, by});
  } catch (...) {
  }
}

// The caller's handle variable, as the creation record reads it (plugin/creation_calls.h).
const void* const* handleOf(const ncclComm_t* newcomm) { return reinterpret_cast<const void* const*>(newcomm); }

ncclResult_t commInitRankEntry(ncclComm_t* newcomm, int nranks, ncclUniqueId id, int rank) {
  const uint64_t identity = symmem::commIdentityFromUniqueId(&id);
  ncclResult_t r;
  {
    const symmem::CreationUnderWay underWay({identity, symmem::NamedBy::UniqueId}, nranks, handleOf(newcomm));
    r = callOrInvalid(Process::get().nccl().commInitRank, newcomm, nranks, id, rank);
  }
  nameCreated(r, newcomm, identity, symmem::NamedBy::UniqueId);
  return r;
}

ncclResult_t commInitRankConfigEntry(ncclComm_t* newcomm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  const uint64_t identity = symmem::commIdentityFromUniqueId(&id);
  ncclResult_t r;
  {
    const symmem::CreationUnderWay underWay({identity, symmem::NamedBy::UniqueId}, nranks, handleOf(newcomm));
    r = callOrInvalid(Process::get().nccl().commInitRankConfig, newcomm, nranks, id, rank, config);
  }
  nameCreated(r, newcomm, identity, symmem::NamedBy::UniqueId);
  return r;
}

ncclResult_t commInitRankScalableEntry(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* ids,
                                       ncclConfig_t* config) {
  // NCCL names it from the first id alone; read before the call, which may return before it is used.
  const uint64_t identity = nId >= 1 && ids != nullptr ? symmem::commIdentityFromUniqueId(ids) : 0;
  ncclResult_t r;
  {
    const symmem::CreationUnderWay underWay({identity, symmem::NamedBy::UniqueId}, nranks, handleOf(newcomm));
    r = callOrInvalid(Process::get().nccl().commInitRankScalable, newcomm, nranks, myrank, nId, ids, config);
  }
  nameCreated(r, newcomm, identity, symmem::NamedBy::UniqueId);
  return r;
}

// The parent's name: from its own creation call, else the id NCCL gave its tuner (tuner v5).
uint64_t parentIdentity(ncclComm_t parent) {
  if (const std::optional<symmem::CommName> name = symmem::commName(parent)) return name->identity;
  const std::shared_ptr<symmem::CommTicket> ticket = symmem::ticketFor(parent);
  return ticket ? ticket->commId : 0;
}

ncclResult_t commSplitEntry(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  // Counted before the call, as NCCL counts it, on every rank (NOCOLOR ones too).
  int count = 0;
  uint64_t parent = 0;
  try {
    count = symmem::countChild(comm);
    parent = count > 0 ? parentIdentity(comm) : 0;
  } catch (...) {
    count = 0;
  }
  const bool named = count > 0 && parent != 0 && color != NCCL_SPLIT_NOCOLOR;
  const uint64_t identity = named ? symmem::childCommIdentity(parent, count, color) : 0;
  ncclResult_t r;
  {
    // The child's rank count is known only once NCCL has gathered the colors.
    const symmem::CreationUnderWay underWay({identity, symmem::NamedBy::Split}, -1, handleOf(newcomm));
    r = callOrInvalid(Process::get().nccl().commSplit, comm, color, key, newcomm, config);
  }
  if (r != ncclSuccess && r != ncclInProgress) {
    symmem::loseChildCount(comm);
    return r;
  }
  // A split inside a group, or non-blocking, writes *newcomm only when it completes: left unnamed.
  if (named) nameCreated(r, newcomm, identity, symmem::NamedBy::Split);
  return r;
}

// NCCL 2.29+: a grow counts as a child of the communicator it grows (its existing ranks), so the
// splits after it are counted as NCCL counts them; the grown communicator itself is not named
// (NCCL combines its id from the parent's internals).
ncclResult_t commGrowEntry(ncclComm_t comm, int nRanks, const ncclUniqueId* id, int rank, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  if (comm != nullptr) {
    try {
      symmem::countChild(comm);
    } catch (...) {
    }
  }
  const ncclResult_t r = callOrInvalid(Process::get().nccl().commGrow, comm, nRanks, id, rank, newcomm, config);
  if (comm != nullptr && r != ncclSuccess && r != ncclInProgress) symmem::loseChildCount(comm);
  return r;
}
}  // namespace

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

std::vector<EntryPoint> entryPoints(const symmem::RealNccl& real) {
  std::vector<EntryPoint> points = {
      {"ncclAllReduce", fn(&ncclAllReduce), fn(real.allReduce)},
      {"ncclCommDestroy", fn(&ncclCommDestroy), fn(real.commDestroy)},
      {"ncclCommAbort", fn(&ncclCommAbort), fn(real.commAbort)},
      {"ncclGroupStart", fn(&ncclGroupStart), fn(real.groupStart)},
      {"ncclGroupEnd", fn(&ncclGroupEnd), fn(real.groupEnd)},
  };
  // Entry points this NCCL may not have (Finalize 2.14+, SimulateEnd 2.22+, Revoke 2.28.7+).
  if (real.commFinalize) points.push_back({"ncclCommFinalize", fn(&ncclCommFinalize), fn(real.commFinalize)});
  if (real.groupSimulateEnd)
    points.push_back({"ncclGroupSimulateEnd", fn(&ncclGroupSimulateEnd), fn(real.groupSimulateEnd)});
  if (real.commRevoke) points.push_back({"ncclCommRevoke", fn(&ncclCommRevoke), fn(real.commRevoke)});
  return points;
}

// Entry points taken where they can be, not needed for the others: ncclCommGetAsyncError reports a
// symmetric kernel's timeout inside a replayed graph (without it, the next call or teardown does);
// ncclAllReduceConfig (NCCL 2.31+) is a second way to issue an all-reduce (without it, those calls
// stay on NCCL).
std::vector<EntryPoint> optionalEntryPoints(const symmem::RealNccl& real) {
  std::vector<EntryPoint> points = {{"ncclCommGetAsyncError", fn(&ncclCommGetAsyncError), fn(real.commGetAsyncError)}};
  if (real.allReduceConfig)
    points.push_back({"ncclAllReduceConfig", fn(&allReduceConfigEntry), fn(real.allReduceConfig)});
  // The creation calls (plugin/comm_names.h): without them a communicator is found by its context slot.
  if (real.commInitRank) points.push_back({"ncclCommInitRank", fn(&commInitRankEntry), fn(real.commInitRank)});
  if (real.commInitRankConfig)
    points.push_back({"ncclCommInitRankConfig", fn(&commInitRankConfigEntry), fn(real.commInitRankConfig)});
  if (real.commInitRankScalable)
    points.push_back({"ncclCommInitRankScalable", fn(&commInitRankScalableEntry), fn(real.commInitRankScalable)});
  if (real.commSplit) points.push_back({"ncclCommSplit", fn(&commSplitEntry), fn(real.commSplit)});
  if (real.commGrow) points.push_back({"ncclCommGrow", fn(&commGrowEntry), fn(real.commGrow)});
  return points;
}

// The plugin as it names itself in the trampoline page, so that another copy can tell whose hooks
// it finds: "nccl-symmem 0.1.0 (/path/libnccl-tuner-symmem.so)".
std::string ownerName() {
  Dl_info info{};
  const char* path = dladdr(fn(&ncclAllReduce), &info) && info.dli_fname ? info.dli_fname : "?";
  return std::string("nccl-symmem ") + SYMMEM_VERSION_STRING + " (" + path + ")";
}

// Called while other threads are parked: atomic stores only.
void retargetForwarding(void* from, void* to) { symmem::forwardThrough(Process::get().nccl(), from, to); }

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
HookOutcome hookEntryPoints(const std::vector<EntryPoint>& required, const std::vector<EntryPoint>& optional,
                            const symmem::Settings& settings) {
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
    SYMMEM_WARN(
        "code hooks not used: %s; falling back to GOT attach, which dynamically linked callers (nccl-tests, "
        "PyTorch) go through but ctypes clients (vLLM's and SGLang's pynccl) do not: their all-reduces stay on "
        "NCCL (docs/troubleshooting.md, \"Code hooks not used\")",
        report.refusal.c_str());
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
              "hooked %zu libnccl entry points (%d other threads parked, %d in system calls, %d moved): every caller "
              "of them now reaches the plugin [%s]",
              report.hooks.size(), report.threadsParked, report.threadsInSystemCall, report.threadsMoved,
              moved.c_str());
  for (const std::string& s : report.skipped)
    SYMMEM_INFO(symmem::kLogInit, "optional code hook not used: %s", s.c_str());
  for (const std::string& n : report.notes) SYMMEM_WARN("code hooks: %s", n.c_str());
  keepNcclsOwnCallsOffTheHooks(report.hooks);
  return HookOutcome::Hooked;
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

// Every entry point, required and optional, rebound in the process's GOT.
void rebindAll(const symmem::RealNccl& real) {
  std::vector<EntryPoint> all = entryPoints(real);
  const std::vector<EntryPoint> optional = optionalEntryPoints(real);
  all.insert(all.end(), optional.begin(), optional.end());
  rebindEntryPoints(all);
}

std::string objectName(void* address) {
  Dl_info info{};
  return address && dladdr(address, &info) && info.dli_fname ? info.dli_fname : "unknown";
}

// The pncclAllReduce of the loaded object `object` (or of its dependencies), or null when neither is an
// NCCL (a test's logger, none at all).
void* ncclAllReduceOf(const std::string& object) {
  void* handle = object == "unknown" ? nullptr : dlopen(object.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return nullptr;
  void* f = dlsym(handle, "pncclAllReduce");
  dlclose(handle);
  return f;
}

// The distinct NCCLs loaded in the process (pncclAllReduce of each object, which dlsym on a handle
// also finds through the object's dependencies: counted by address).
int ncclCopiesLoaded() {
  std::vector<std::string> objects;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name && *info->dlpi_name)
          static_cast<std::vector<std::string>*>(data)->push_back(info->dlpi_name);
        return 0;
      },
      &objects);
  std::vector<void*> copies;
  for (const std::string& path : objects) {  // dlopen cannot run inside dl_iterate_phdr
    void* f = ncclAllReduceOf(path);
    if (f && std::find(copies.begin(), copies.end(), f) == copies.end()) copies.push_back(f);
  }
  return static_cast<int>(copies.size());
}

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

// Which NCCL loaded the plugin, and whether it is the one the plugin forwards to. "" when it is.
std::string wrongNccl(const symmem::RealNccl& real) {
  // Two NCCL copies in one process (a ctypes client pointed at another libnccl than torch's, say): the
  // plugin forwards to the libnccl.so.2 it was linked against, which must be the one that loaded it
  // as its tuner (NCCL's logger lives there). Otherwise hooking or rebinding would pair one NCCL's
  // communicators with the other's functions.
  const std::string logger = objectName(fn(symmem::ncclLogger()));
  void* loadingNccl = ncclAllReduceOf(logger);
  if (loadingNccl && loadingNccl != fn(real.allReduce))
    return "the NCCL that loaded the plugin (" + logger + ") is not the libnccl.so.2 it forwards to (" +
           objectName(fn(real.allReduce)) + ")";
  // A logger that names no NCCL (a test's, a wrapper's) proves nothing: then one NCCL must be loaded.
  if (!loadingNccl) {
    const int copies = ncclCopiesLoaded();
    if (copies > 1)
      return std::to_string(copies) + " NCCL copies are loaded and the logger NCCL gave the plugin (in " + logger +
             ") does not say which one loaded it";
  }
  return "";
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

// At every tuner init: NCCL loaded us only as its tuner, so the application's calls still lead to
// libnccl. Hook libnccl's entry points (or, failing that, rebind GOT slots) so that the environment
// variable alone is enough. Returns whether every all-reduce of the process now reaches the plugin
// (only code hooks promise that: a ctypes caller never passes through a GOT), and if not, why: the
// tuner declares it to the communicator's peers (plugin/rendezvous.h), so that a rank left unhooked
// keeps every rank on NCCL instead of hanging them. A refused install (threads that would not park in
// time) is tried again at the next communicators, a few times, before the process gives up.
bool attachOnce(std::string* whyNot) {
  constexpr int kHookAttempts = 3;
  static std::mutex mutex;
  static bool attached = false;  // the one-time part (pin, GOT rebinding) is done
  static bool hooked = false;
  static int hookAttempts = 0;
  static std::string whyNotHooked;
  std::lock_guard<std::mutex> lock(mutex);
  const symmem::Settings& settings = Process::get().settings();
  auto no = [&](std::string why) {
    whyNotHooked = std::move(why);
    *whyNot = whyNotHooked;
    return false;
  };
  if (hooked) return true;
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
  if (attached) {
    // New objects (an extension module loaded after the first communicator) get covered too.
    if (symmem::loadedObjectsChangedSinceAttach()) symmem::reattachRebindings();
    if (hookAttempts == 0 || hookAttempts >= kHookAttempts) return no(whyNotHooked);
  } else {
    attached = true;
    const symmem::RealNccl& real = Process::get().nccl();
    if (!real.usable()) {
      SYMMEM_WARN("attach skipped: the NCCL functions to forward to could not be found");
      return no("the NCCL functions to forward to could not be found");
    }
    if (const std::string wrong = wrongNccl(real); !wrong.empty()) {
      SYMMEM_WARN("attach skipped: %s; all-reduces stay on NCCL", wrong.c_str());
      return no(wrong);
    }
    if (const std::string other = globalCopyOfThePlugin(); !other.empty()) {
      SYMMEM_INFO(symmem::kLogInit,
                  "another copy of the plugin (%s) interposes NCCL for the whole process: this copy (%s) only "
                  "tunes; load one copy (the same path in NCCL_TUNER_PLUGIN and LD_PRELOAD) to avoid two",
                  other.c_str(), objectName(fn(&attachOnce)).c_str());
      return no("another copy of the plugin interposes NCCL in this process");
    }
    // Pinned before anything points into the plugin: NCCL dlcloses its tuner after the last
    // communicator, while hooked code and rebound slots would still lead here.
    std::string self, why;
    if (!symmem::pinLoadedObject(fn(&attachOnce), &self, &why)) {
      SYMMEM_WARN("attach skipped: the plugin cannot keep itself loaded (%s)", why.c_str());
      return no("the plugin cannot keep itself loaded");
    }
    Process::get().markReachable();
    SYMMEM_INFO(symmem::kLogInit, "%s stays loaded for the life of the process (RTLD_NODELETE)", self.c_str());
    if (!settings.flag(symmem::SettingId::Hooks)) {
      SYMMEM_INFO(symmem::kLogInit, "code hooks off (SYMMEM_HOOKS=0): GOT attach only");
      rebindAll(Process::get().nccl());
      return no("code hooks off (SYMMEM_HOOKS=0): GOT rebinding does not reach ctypes callers");
    }
  }
  ++hookAttempts;
  const symmem::RealNccl& real = Process::get().nccl();
  switch (hookEntryPoints(entryPoints(real), optionalEntryPoints(real), settings)) {
    case HookOutcome::Hooked:
      hooked = true;
      // In at the first try, inside the first communicator's creation (each one's tuner init waits
      // here): no communicator of the process has had a child yet, so every child count starts at 0.
      symmem::setUnseenParentsCountedFromTheirStart(hookAttempts == 1);
      return true;
    case HookOutcome::AnotherCopyHooked:
      hookAttempts = kHookAttempts;
      return no("another copy of the plugin hooks libnccl in this process");
    case HookOutcome::Refused:
      break;
  }
  // Dynamically linked callers are covered meanwhile; the next communicator tries the hooks again.
  if (hookAttempts == 1) rebindAll(real);
  return no(std::string("code hooks not installed") +
            (hookAttempts < kHookAttempts ? " (tried again at the next communicator)" : ""));
}

// Registered when the shared object is loaded, before NCCL can call the tuner.
const bool kHookRegistered = [] {
  symmem::setTunerInitHook(&attachOnce);
  return true;
}();

// As the shared object is unloaded (NCCL's dlclose of an unpinned tuner, or the process's exit): the
// process state goes with it unless something outside can still reach it.
__attribute__((destructor)) void releaseProcessState() { Process::releaseIfUnused(); }

}  // namespace

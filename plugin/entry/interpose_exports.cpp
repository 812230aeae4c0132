// The NCCL entry points the plugin defines (PMPI style): reached when the shared object is
// preloaded, loaded in place of libnccl (it depends on libnccl.so.2, so everything it does not
// define still resolves), or attached. Each forwards to the interposer, which forwards to NCCL's
// pnccl aliases for everything it does not take.
#include <dlfcn.h>
#include <nccl.h>

#include <vector>
#include <atomic>
#include <mutex>

#include "plugin/attach.h"
#include "plugin/interposer.h"
#include "plugin/log.h"
#include "plugin/settings.h"
#include "plugin/tuner.h"

#define SYMMEM_EXPORT extern "C" __attribute__((visibility("default")))

using symmem::processInterposer;

SYMMEM_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return processInterposer().allReduce(sendbuff, recvbuff, count, datatype, op, comm, stream);
}

SYMMEM_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) { return processInterposer().commDestroy(comm); }
SYMMEM_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) { return processInterposer().commFinalize(comm); }
SYMMEM_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) { return processInterposer().commAbort(comm); }
SYMMEM_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags) {
  return processInterposer().commRevoke(comm, flags);
}
SYMMEM_EXPORT ncclResult_t ncclGroupStart() { return processInterposer().groupStart(); }
SYMMEM_EXPORT ncclResult_t ncclGroupEnd() { return processInterposer().groupEnd(); }

namespace {

// Attach: NCCL loaded us only as its tuner, so the application's references to these symbols still
// lead to libnccl. Rebinding them (GOT slots) makes the environment variable alone enough.
void attachOnce() {
  static std::mutex mutex;
  static bool attached = false;
  std::lock_guard<std::mutex> lock(mutex);
  const symmem::Settings& settings = symmem::Settings::process();
  if (!settings.flag(symmem::SettingId::Enable) || !settings.flag(symmem::SettingId::Symmetric)) return;
  if (!settings.flag(symmem::SettingId::Attach)) {
    if (!attached) SYMMEM_INFO(symmem::kLogInit, "attach off (SYMMEM_ATTACH=0): only a preloaded plugin interposes");
    attached = true;
    return;
  }
  if (attached) {
    // New objects (an extension module loaded after the first communicator) get covered too.
    if (symmem::loadedObjectsChangedSinceAttach()) symmem::reattachRebindings();
    return;
  }
  attached = true;
  if (!symmem::realNccl().usable()) {
    SYMMEM_WARN("attach skipped: the NCCL functions to forward to could not be found");
    return;
  }
  // The real targets are NCCL's pncclX aliases, already resolved: the slots' forward target is
  // never looked up by the ncclX name, which this object defines too.
  const symmem::RealNccl& real = symmem::realNccl();
  auto fn = [](auto f) { return reinterpret_cast<void*>(f); };
  std::vector<symmem::Rebinding> rebindings = {
      {"ncclAllReduce", fn(&ncclAllReduce), nullptr, fn(real.allReduce)},
      {"ncclCommDestroy", fn(&ncclCommDestroy), nullptr, fn(real.commDestroy)},
      {"ncclCommAbort", fn(&ncclCommAbort), nullptr, fn(real.commAbort)},
      {"ncclGroupStart", fn(&ncclGroupStart), nullptr, fn(real.groupStart)},
      {"ncclGroupEnd", fn(&ncclGroupEnd), nullptr, fn(real.groupEnd)},
  };
  // Entry points this NCCL may not have (Finalize 2.18+, Revoke 2.28+).
  if (real.commFinalize) rebindings.push_back({"ncclCommFinalize", fn(&ncclCommFinalize), nullptr, fn(real.commFinalize)});
  if (real.commRevoke) rebindings.push_back({"ncclCommRevoke", fn(&ncclCommRevoke), nullptr, fn(real.commRevoke)});
  symmem::AttachOptions options;
  options.definingLibrary = "libnccl.so.2";
  symmem::attachRebindings(rebindings, options);
}

// Registered when the shared object is loaded, before NCCL can call the tuner.
const bool kHookRegistered = [] {
  symmem::setTunerInitHook(&attachOnce);
  return true;
}();

}  // namespace

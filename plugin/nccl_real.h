// SPDX-License-Identifier: Apache-2.0
#pragma once
// The real NCCL functions the interposer forwards to, resolved at run time from the loaded
// libnccl (its pncclX aliases), so one plugin binary works with every NCCL 2.21 - 2.32 even where
// an entry point (ncclCommRevoke, ncclCommShrink) does not exist: those stay null.
#include <nccl.h>

namespace symmem {

struct RealNccl {
  ncclResult_t (*allReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*allGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*commDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*commFinalize)(ncclComm_t) = nullptr;
  ncclResult_t (*commAbort)(ncclComm_t) = nullptr;
  ncclResult_t (*commRevoke)(ncclComm_t, int) = nullptr;  // NCCL 2.28.7+
  ncclResult_t (*groupStart)() = nullptr;
  ncclResult_t (*groupEnd)() = nullptr;
  ncclResult_t (*commCount)(const ncclComm_t, int*) = nullptr;
  ncclResult_t (*commUserRank)(const ncclComm_t, int*) = nullptr;
  ncclResult_t (*commCuDevice)(const ncclComm_t, int*) = nullptr;
  ncclResult_t (*commGetAsyncError)(ncclComm_t, ncclResult_t*) = nullptr;
  const char* library = "";  // where they came from, for the log

  // The essentials the interposer cannot work without.
  bool usable() const {
    return allReduce && allGather && commDestroy && commAbort && groupStart && groupEnd && commCount && commUserRank &&
           commCuDevice && commGetAsyncError;
  }
};

// Resolves the functions from the libnccl.so.2 already loaded in the process; `usable()` false when
// none is. The plugin does this once (plugin/process.h).
RealNccl loadRealNccl();

// After libnccl's code at `function` is hooked, calls to it lead back to the plugin: every member of
// `real` that held `function` then forwards through `original` (the hook's trampoline) instead.
// Passing the function itself as `original` puts it back.
void forwardThrough(RealNccl& real, void* function, void* original);

}  // namespace symmem

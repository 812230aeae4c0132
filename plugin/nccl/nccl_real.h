// SPDX-License-Identifier: Apache-2.0
#pragma once
// NCCL's functions resolved at run time: the one table for the interposer (from the loaded libnccl's
// pncclX aliases) and for the tools (ncclX from a library they dlopen). One plugin binary works with
// every NCCL 2.21 - 2.32 even where an entry point (ncclCommRevoke, ncclAllReduceConfig) does not exist: those stay
// null.
#include <nccl.h>

namespace symmem {

// The most NCCL copies one process can have served at once (plugin/interpose/nccl_copies.h).
constexpr int kMaxNcclCopies = 4;

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
  ncclResult_t (*groupSimulateEnd)(ncclSimInfo_t*) = nullptr;  // NCCL 2.22+
  // NCCL 2.31+: ncclAllReduce with a trailing `const ncclCollConfig_t*` (plugin/interpose/coll_config.h).
  ncclResult_t (*allReduceConfig)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t,
                                  const void*) = nullptr;
  ncclResult_t (*commCount)(const ncclComm_t, int*) = nullptr;
  ncclResult_t (*commUserRank)(const ncclComm_t, int*) = nullptr;
  ncclResult_t (*commCuDevice)(const ncclComm_t, int*) = nullptr;
  ncclResult_t (*commGetAsyncError)(ncclComm_t, ncclResult_t*) = nullptr;
  // What the tools also need to make communicators of their own.
  ncclResult_t (*getVersion)(int*) = nullptr;
  ncclResult_t (*getUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*commInitRank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  // The other creation calls, for the code hooks that name communicators (plugin/interpose/comm_names.h).
  ncclResult_t (*commInitRankConfig)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*) = nullptr;
  ncclResult_t (*commInitRankScalable)(ncclComm_t*, int, int, int, ncclUniqueId*, ncclConfig_t*) = nullptr;  // 2.23+
  ncclResult_t (*commSplit)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*) = nullptr;
  ncclResult_t (*commGrow)(ncclComm_t, int, const ncclUniqueId*, int, ncclComm_t*, ncclConfig_t*) = nullptr;  // 2.29+
  const char* (*getErrorString)(ncclResult_t) = nullptr;
  const char* library = "";  // where they came from, for the log

  // The essentials the interposer cannot work without.
  bool usable() const {
    return allReduce && allGather && commDestroy && commAbort && groupStart && groupEnd && commCount && commUserRank &&
           commCuDevice && commGetAsyncError;
  }
};

// Calls f(member, "ncclX") for every function of the table: the names are written once, here.
template <typename F>
void forEachNcclFunction(RealNccl& r, F&& f) {
  f(r.allReduce, "ncclAllReduce");
  f(r.allGather, "ncclAllGather");
  f(r.commDestroy, "ncclCommDestroy");
  f(r.commFinalize, "ncclCommFinalize");
  f(r.commAbort, "ncclCommAbort");
  f(r.commRevoke, "ncclCommRevoke");
  f(r.groupStart, "ncclGroupStart");
  f(r.groupEnd, "ncclGroupEnd");
  f(r.groupSimulateEnd, "ncclGroupSimulateEnd");
  f(r.allReduceConfig, "ncclAllReduceConfig");
  f(r.commCount, "ncclCommCount");
  f(r.commUserRank, "ncclCommUserRank");
  f(r.commCuDevice, "ncclCommCuDevice");
  f(r.commGetAsyncError, "ncclCommGetAsyncError");
  f(r.getVersion, "ncclGetVersion");
  f(r.getUniqueId, "ncclGetUniqueId");
  f(r.commInitRank, "ncclCommInitRank");
  f(r.commInitRankConfig, "ncclCommInitRankConfig");
  f(r.commInitRankScalable, "ncclCommInitRankScalable");
  f(r.commSplit, "ncclCommSplit");
  f(r.commGrow, "ncclCommGrow");
  f(r.getErrorString, "ncclGetErrorString");
}

// How the names are looked up in a library's handle.
enum class NcclNames {
  Aliases,        // pncclX (then the global scope): never the plugin's own ncclX definitions
  AliasesInCopy,  // pncclX in the handle only: a second NCCL copy, whose missing functions stay null
  Plain,          // ncclX, in the handle only (a library the tools opened themselves)
};
RealNccl resolveNccl(void* handle, NcclNames names);

// Resolves the functions from the libnccl.so.2 already loaded in the process; `usable()` false when
// none is. The plugin does this once (plugin/process/process.h).
RealNccl loadRealNccl();

// After libnccl's code at `function` is hooked, calls to it lead back to the plugin: every member of
// `real` that held `function` then forwards through `original` (the hook's trampoline) instead.
// Passing the function itself as `original` puts it back.
void forwardThrough(RealNccl& real, void* function, void* original);

}  // namespace symmem

#pragma once
// NCCL as symmem-tune uses it: loaded with dlopen rather than linked, so a machine without NCCL gets
// a message that says so instead of the loader's "error while loading shared libraries".
#include <nccl.h>

#include <string>

namespace symmem {

struct NcclLibrary {
  ncclResult_t (*getVersion)(int*) = nullptr;
  ncclResult_t (*getUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*commInitRank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*allReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*allGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*commDestroy)(ncclComm_t) = nullptr;
  const char* (*getErrorString)(ncclResult_t) = nullptr;
  std::string error;  // why it could not be used; empty when every function above was found
  bool ok() const { return error.empty(); }
};

// Loads `library` (a soname searched on the library path, or a path) and resolves the functions.
// Does not initialise CUDA: safe in the parent before fork.
NcclLibrary loadNcclLibrary(const std::string& library);

}  // namespace symmem

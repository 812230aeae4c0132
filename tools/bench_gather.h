// SPDX-License-Identifier: Apache-2.0
#pragma once
// The all-gather the measuring tools hand to kernels::SymmetricComm::create, and use for their own
// exchanges (CUDA IPC handles): host bytes through ncclAllGather on the rank's communicator. The NCCL
// function comes as a pointer because symmem-bench links NCCL and symmem-tune loads it with dlopen
// (tools/nccl_library.h).
#include <nccl.h>

#include <cstddef>

namespace symmem::bench {

using NcclAllGatherFn = decltype(&ncclAllGather);

// Callable as kernels::AllGatherFn. Collective: every rank of `comm` calls it with the same size.
struct NcclHostGather {
  NcclAllGatherFn allGather = nullptr;
  ncclComm_t comm = nullptr;
  int nRanks = 0;
  cudaStream_t stream = nullptr;

  // Every rank's `bytesPerRank` bytes from `send` into `recv` (nRanks * bytesPerRank, rank order):
  // through device buffers allocated for the call, gathered on `stream`, back once the stream is
  // done. False when a CUDA or NCCL call fails on this rank.
  bool operator()(const void* send, void* recv, size_t bytesPerRank) const;
};

}  // namespace symmem::bench

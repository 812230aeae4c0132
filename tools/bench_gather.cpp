// SPDX-License-Identifier: Apache-2.0
#include "tools/bench_gather.h"

#include <cuda_runtime_api.h>

namespace symmem::bench {

bool NcclHostGather::operator()(const void* send, void* recv, size_t bytesPerRank) const {
  const size_t total = bytesPerRank * static_cast<size_t>(nRanks);
  void *dSend = nullptr, *dRecv = nullptr;
  const bool ok = cudaMalloc(&dSend, bytesPerRank) == cudaSuccess && cudaMalloc(&dRecv, total) == cudaSuccess &&
                  cudaMemcpy(dSend, send, bytesPerRank, cudaMemcpyHostToDevice) == cudaSuccess &&
                  allGather(dSend, dRecv, bytesPerRank, ncclChar, comm, stream) == ncclSuccess &&
                  cudaStreamSynchronize(stream) == cudaSuccess &&
                  cudaMemcpy(recv, dRecv, total, cudaMemcpyDeviceToHost) == cudaSuccess;
  cudaFree(dSend);
  cudaFree(dRecv);
  return ok;
}

}  // namespace symmem::bench

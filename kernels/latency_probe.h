// SPDX-License-Identifier: Apache-2.0
#pragma once
// Two measurements that bound what any all-reduce kernel can reach on a machine (used by
// symmem-bench to write down the floor): the cost of launching an empty kernel, and the one-way
// latency of a 16-byte store to a peer's memory until the peer sees it.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace symmem::kernels {

// One empty kernel of one block of 32 threads (with programmatic stream serialization when
// `programmatic`, like the all-reduce kernels).
cudaError_t launchEmptyKernel(bool programmatic, cudaStream_t stream);

// Ping-pong of `iterations` round trips between two GPUs: `mine` is this rank's flag word (local),
// `peer` the other rank's flag word through a peer mapping. The starter writes first. Run on both
// ranks at once; one-way latency = elapsed / (2 * iterations). Each flag word must start at 0.
cudaError_t launchPingPong(uint32_t* mine, uint32_t* peer, int iterations, bool starter, cudaStream_t stream);

}  // namespace symmem::kernels

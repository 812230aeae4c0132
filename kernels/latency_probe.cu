// SPDX-License-Identifier: Apache-2.0
#include "kernels/latency_probe.h"

#include "kernels/bounded_wait.cuh"
#include "kernels/flag_protocol.cuh"
#include "kernels/programmatic_launch.h"

namespace symmem::kernels {
namespace device {

// Purpose: launch-cost floor. Requires: nothing. Launch shape: 1 x 32. Size range: none.
__global__ void emptyKernel() { programmaticHandshake(false); }

// Purpose: one-way peer store latency, with the all-reduce kernels' own 16-byte accesses.
// Requires: both ranks launched concurrently, flags at 0. Launch shape: 1 x 1. Size range: one
// 16-byte vector per message.
__global__ void pingPongKernel(uint32_t* mine, uint32_t* peer, int iterations, bool starter) {
  const uint64_t giveUp = globalTimerNs() + 2000000000ull;  // 2 s: a missing peer cannot hang the probe
  for (uint32_t i = 1; i <= static_cast<uint32_t>(iterations); ++i) {
    if (starter) storeRelaxedSys(reinterpret_cast<char*>(peer), make_uint4(i, i, i, i));
    uint32_t spins = 0;
    while (loadRelaxedSys(reinterpret_cast<const char*>(mine)).x != i) {
      if ((++spins & 1023u) == 0 && globalTimerNs() > giveUp) return;
    }
    if (!starter) storeRelaxedSys(reinterpret_cast<char*>(peer), make_uint4(i, i, i, i));
  }
}

}  // namespace device

cudaError_t launchEmptyKernel(bool programmatic, cudaStream_t stream) {
  return launchKernel(reinterpret_cast<const void*>(device::emptyKernel), 1, 32, programmatic, stream, nullptr);
}

cudaError_t launchPingPong(uint32_t* mine, uint32_t* peer, int iterations, bool starter, cudaStream_t stream) {
  device::pingPongKernel<<<1, 1, 0, stream>>>(mine, peer, iterations, starter);
  return cudaGetLastError();
}

}  // namespace symmem::kernels

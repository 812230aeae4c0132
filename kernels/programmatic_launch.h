// SPDX-License-Identifier: Apache-2.0
#pragma once
// Programmatic dependent launch (sm_90+), both sides: the host launch with programmatic stream
// serialization, and the device handshake every kernel so launched makes.
//
// The next kernel on the stream may be scheduled while this one runs, and waits in
// griddepcontrol.wait until this one has completed and its memory is visible. Every kernel does
// everything after its wait, so the semantics are plain stream order; only the launch overlaps.
// Every kernel waits before it admits the next one (programmaticHandshake below): that bounds the
// grids of one stream that are resident at once to two.
//
// Both need compute capability 9.0, and code compiled for it: the device handshake compiles to
// nothing below sm_90 (device:: below), and launchKernel launches plainly where the kernels' code
// for the device was compiled below compute_90, whatever the caller asked: on a GPU below 9.0, or
// on a newer one running PTX of an older capability.
#include <cuda_runtime_api.h>

#include "kernels/kernel_image_probe.h"

namespace symmem::kernels {

// Launches `kernel` (a __global__ function) with `args` as cudaLaunchKernelExC takes them, with
// programmatic stream serialization when `programmatic` and the kernels' code on the current device
// has the handshake (kernel_image_probe.h: asked once per device), else as a plain launch.
inline cudaError_t launchKernel(const void* kernel, unsigned blocks, unsigned threads, bool programmatic,
                                cudaStream_t stream, void** args) {
  int device = -1;
  programmatic = programmatic && cudaGetDevice(&device) == cudaSuccess && kernelCodeTakesProgrammaticLaunch(device);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = programmatic ? 1 : 0;
  return cudaLaunchKernelExC(&config, kernel, args);
}

#if defined(__CUDACC__)
namespace device {

// The previous kernel on the stream has completed and its memory is visible once this returns.
__device__ __forceinline__ void waitForPreviousKernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// The next kernel on the stream may be scheduled from now on (it then waits in its own
// waitForPreviousKernel until this one has completed).
__device__ __forceinline__ void allowNextLaunch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The handshake, first thing in every kernel: wait, then let the next one be scheduled. In this
// order at most two grids of a stream are resident at once, the running one and the next one parked
// in its wait, and the parked one waits only for its own predecessor. The other order lets every
// kernel admit its successor before its own wait, so a graph of back-to-back calls becomes resident
// as fast as the device takes it, each grid parked in its wait, holding one of the device's resident
// grid slots (128 on sm_90) and its blocks' room on an SM while it waits for kernels that may not
// have started. With 3 and 4 ranks sharing one H200 and 64 calls per graph, a kernel some rank
// waited for then did not start and the waits ended in timeouts (4 ranks passed with 32 or 40 calls
// per graph; docs/kernels.md, "Timeouts found by this benchmark"). `triggerFirst` is that earlier
// order, kept for the benchmark that measures the difference (kTriggerBeforeWait).
__device__ __forceinline__ void programmaticHandshake(bool triggerFirst) {
  if (triggerFirst) {
    allowNextLaunch();
    waitForPreviousKernel();
  } else {
    waitForPreviousKernel();
    allowNextLaunch();
  }
}

}  // namespace device
#endif

}  // namespace symmem::kernels

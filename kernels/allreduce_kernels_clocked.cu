// SPDX-License-Identifier: Apache-2.0
// The all-reduce kernels with the kernel clock compiled in (kernel_clock.cuh), launched for the calls
// a communicator that keeps its statistics times (SYMMEM_STATS_GPU). A translation unit of their own:
// the instances compile beside the plain ones, in parallel.
#include "kernels/allreduce_dispatch.cuh"

namespace symmem::kernels::dispatch {

cudaError_t launchAllReduceClocked(bool twoShot, const DeviceView& view, const void* send, void* recv, size_t count,
                                   DataType dtype, ReduceOp op, SymVariant variant, const LaunchOptions& options,
                                   cudaStream_t stream) {
  return launchAllReduceAs<true>(twoShot, view, send, recv, count, dtype, op, variant, options, stream);
}

}  // namespace symmem::kernels::dispatch

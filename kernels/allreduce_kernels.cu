// SPDX-License-Identifier: Apache-2.0
// Launch wrappers of the all-reduce kernels: the kernels as every call runs them, or their clocked
// instances for a call the communicator times (LaunchOptions::clocked).
#include "kernels/allreduce_dispatch.cuh"

namespace symmem::kernels {
namespace {

cudaError_t launchAllReduce(bool twoShot, const DeviceView& view, const void* send, void* recv, size_t count,
                            DataType dtype, ReduceOp op, SymVariant variant, const LaunchOptions& options,
                            cudaStream_t stream) {
  if (options.clocked)
    return dispatch::launchAllReduceClocked(twoShot, view, send, recv, count, dtype, op, variant, options, stream);
  return dispatch::launchAllReduceAs<false>(twoShot, view, send, recv, count, dtype, op, variant, options, stream);
}

}  // namespace

cudaError_t launchOneShot(const DeviceView& view, const void* send, void* recv, size_t count, DataType dtype,
                          ReduceOp op, SymVariant variant, const LaunchOptions& options, cudaStream_t stream) {
  return launchAllReduce(false, view, send, recv, count, dtype, op, variant, options, stream);
}

cudaError_t launchTwoShot(const DeviceView& view, const void* send, void* recv, size_t count, DataType dtype,
                          ReduceOp op, SymVariant variant, const LaunchOptions& options, cudaStream_t stream) {
  return launchAllReduce(true, view, send, recv, count, dtype, op, variant, options, stream);
}

}  // namespace symmem::kernels

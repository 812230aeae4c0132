// SPDX-License-Identifier: Apache-2.0
// Launch wrappers of the all-reduce kernels: pick the template instance for (dtype, op) and the
// launch shape.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "kernels/allreduce_kernels.cuh"
#include "kernels/allreduce_launch.h"
#include "kernels/programmatic_launch.h"

namespace symmem::kernels {
namespace {

template <typename Kernel>
cudaError_t launchWith(Kernel kernel, const LaunchShape& shape, const LaunchOptions& options, cudaStream_t stream,
                       const DeviceView& view, const void* send, void* recv, size_t count, int variant) {
  void* args[] = {const_cast<DeviceView*>(&view), &send, &recv, &count, &variant};
  return launchKernel(reinterpret_cast<const void*>(kernel), static_cast<unsigned>(shape.blocks),
                      static_cast<unsigned>(shape.threads), options.programmatic, stream, args);
}

template <typename Kernel>
cudaError_t launchSmall(Kernel kernel, const LaunchShape& shape, const LaunchOptions& options, cudaStream_t stream,
                        const DeviceView& view, const void* send, void* recv, size_t count) {
  void* args[] = {const_cast<DeviceView*>(&view), &send, &recv, &count};
  return launchKernel(reinterpret_cast<const void*>(kernel), static_cast<unsigned>(shape.blocks),
                      static_cast<unsigned>(shape.threads), options.programmatic, stream, args);
}

// The small-message kernel for N ranks. Its traced instance only where the benchmark asks for a trace
// (DeviceView::trace) and only for fp32 sums, the calls it traces: a traced instance of every dtype and
// op would double the small kernels' code for nothing; other calls with a trace run untraced.
template <typename T, int OP, int N>
cudaError_t launchSmallPush(const LaunchShape& shape, const LaunchOptions& options, cudaStream_t stream,
                            const DeviceView& view, const void* send, void* recv, size_t count) {
  if constexpr (std::is_same_v<T, float> && OP == device::kSum) {
    if (view.trace != nullptr)
      return launchSmall(device::oneShotSmallPush<T, OP, N, true>, shape, options, stream, view, send, recv, count);
  }
  return launchSmall(device::oneShotSmallPush<T, OP, N, false>, shape, options, stream, view, send, recv, count);
}

template <typename T, int OP>
cudaError_t launchTyped(bool twoShot, const DeviceView& view, const void* send, void* recv, size_t count, int variant,
                        const LaunchOptions& options, cudaStream_t stream) {
  const size_t vectors =
      twoShot ? vectorCount(chunkElems(count, sizeof(T), view.nRanks) * sizeof(T)) : vectorCount(count * sizeof(T));
  const LaunchShape shape = launchShape(vectors, options.maxBlocks);
  if (twoShot)
    return launchWith(device::twoShotAllReduce<T, OP>, shape, options, stream, view, send, recv, count, variant);
  switch (smallPushRanks(variant == device::kPush, shape, vectors, view.nRanks, view.costSwitches)) {
    case 2:
      return launchSmallPush<T, OP, 2>(shape, options, stream, view, send, recv, count);
    case 4:
      return launchSmallPush<T, OP, 4>(shape, options, stream, view, send, recv, count);
    case 8:
      return launchSmallPush<T, OP, 8>(shape, options, stream, view, send, recv, count);
    case 0:
      return launchSmallPush<T, OP, 0>(shape, options, stream, view, send, recv, count);
    default:
      break;
  }
  return launchWith(device::oneShotAllReduce<T, OP>, shape, options, stream, view, send, recv, count, variant);
}

template <typename T>
cudaError_t launchForOp(bool twoShot, const DeviceView& view, const void* send, void* recv, size_t count, ReduceOp op,
                        int variant, const LaunchOptions& options, cudaStream_t stream) {
  switch (op) {
    case ReduceOp::Sum:
      return launchTyped<T, device::kSum>(twoShot, view, send, recv, count, variant, options, stream);
    case ReduceOp::Prod:
      return launchTyped<T, device::kProd>(twoShot, view, send, recv, count, variant, options, stream);
    case ReduceOp::Max:
      return launchTyped<T, device::kMax>(twoShot, view, send, recv, count, variant, options, stream);
    case ReduceOp::Min:
      return launchTyped<T, device::kMin>(twoShot, view, send, recv, count, variant, options, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t launchAllReduce(bool twoShot, const DeviceView& view, const void* send, void* recv, size_t count,
                            DataType dtype, ReduceOp op, SymVariant variant, const LaunchOptions& options,
                            cudaStream_t stream) {
  static_assert(static_cast<int>(SymVariant::Push) == device::kPush &&
                static_cast<int>(SymVariant::Pull) == device::kPull &&
                static_cast<int>(SymVariant::Staged) == device::kStaged);
  const int v = static_cast<int>(variant);
  switch (dtype) {
    case DataType::Float32:
      return launchForOp<float>(twoShot, view, send, recv, count, op, v, options, stream);
    case DataType::Float16:
      return launchForOp<__half>(twoShot, view, send, recv, count, op, v, options, stream);
    case DataType::Bfloat16:
      return launchForOp<__nv_bfloat16>(twoShot, view, send, recv, count, op, v, options, stream);
    default:
      return cudaErrorInvalidValue;
  }
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

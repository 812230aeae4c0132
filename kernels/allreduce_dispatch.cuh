// SPDX-License-Identifier: Apache-2.0
#pragma once
// The launch of an all-reduce: the template instance for (dtype, op, rank count) and the launch shape.
// Included by the two translation units that instantiate it, allreduce_kernels.cu (the kernels as
// every call runs them) and allreduce_kernels_clocked.cu (with the kernel clock compiled in, for
// communicators that publish their statistics: kernel_clock.cuh): each compiles its own set of
// kernels, in parallel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "kernels/allreduce_kernels.cuh"
#include "kernels/allreduce_launch.h"
#include "kernels/programmatic_launch.h"

namespace symmem::kernels {
namespace dispatch {

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
// (DeviceView::trace), only for fp32 sums, the calls it traces, and only unclocked: a traced instance of
// every dtype and op would double the small kernels' code for nothing; other calls with a trace run
// untraced.
template <bool kClocked, typename T, int OP, int N>
cudaError_t launchSmallPush(const LaunchShape& shape, const LaunchOptions& options, cudaStream_t stream,
                            const DeviceView& view, const void* send, void* recv, size_t count) {
  if constexpr (std::is_same_v<T, float> && OP == device::kSum && !kClocked) {
    if (view.trace != nullptr)
      return launchSmall(device::oneShotSmallPush<T, OP, N, true, false>, shape, options, stream, view, send, recv,
                         count);
  }
  return launchSmall(device::oneShotSmallPush<T, OP, N, false, kClocked>, shape, options, stream, view, send, recv,
                     count);
}

template <bool kClocked, typename T, int OP>
cudaError_t launchTyped(bool twoShot, const DeviceView& view, const void* send, void* recv, size_t count, int variant,
                        const LaunchOptions& options, cudaStream_t stream) {
  const size_t vectors =
      twoShot ? vectorCount(chunkElems(count, sizeof(T), view.nRanks) * sizeof(T)) : vectorCount(count * sizeof(T));
  const LaunchShape shape = launchShape(vectors, options.maxBlocks);
  if (variant == device::kHalves)
    return twoShot ? launchSmall(device::halvesAllReduce<T, OP, kClocked, true>, shape, options, stream, view, send,
                                 recv, count)
                   : launchSmall(device::halvesAllReduce<T, OP, kClocked, false>, shape, options, stream, view, send,
                                 recv, count);
  if (twoShot)
    return launchWith(device::twoShotAllReduce<T, OP, kClocked>, shape, options, stream, view, send, recv, count,
                      variant);
  switch (smallPushRanks(variant == device::kPush, shape, vectors, view.nRanks, view.costSwitches)) {
    case 2:
      return launchSmallPush<kClocked, T, OP, 2>(shape, options, stream, view, send, recv, count);
    case 4:
      return launchSmallPush<kClocked, T, OP, 4>(shape, options, stream, view, send, recv, count);
    case 8:
      return launchSmallPush<kClocked, T, OP, 8>(shape, options, stream, view, send, recv, count);
    case 0:
      return launchSmallPush<kClocked, T, OP, 0>(shape, options, stream, view, send, recv, count);
    default:
      break;
  }
  return launchWith(device::oneShotAllReduce<T, OP, kClocked>, shape, options, stream, view, send, recv, count,
                    variant);
}

template <bool kClocked, typename T>
cudaError_t launchForOp(bool twoShot, const DeviceView& view, const void* send, void* recv, size_t count, ReduceOp op,
                        int variant, const LaunchOptions& options, cudaStream_t stream) {
  switch (op) {
    case ReduceOp::Sum:
      return launchTyped<kClocked, T, device::kSum>(twoShot, view, send, recv, count, variant, options, stream);
    case ReduceOp::Prod:
      return launchTyped<kClocked, T, device::kProd>(twoShot, view, send, recv, count, variant, options, stream);
    case ReduceOp::Max:
      return launchTyped<kClocked, T, device::kMax>(twoShot, view, send, recv, count, variant, options, stream);
    case ReduceOp::Min:
      return launchTyped<kClocked, T, device::kMin>(twoShot, view, send, recv, count, variant, options, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

template <bool kClocked>
cudaError_t launchAllReduceAs(bool twoShot, const DeviceView& view, const void* send, void* recv, size_t count,
                              DataType dtype, ReduceOp op, SymVariant variant, const LaunchOptions& options,
                              cudaStream_t stream) {
  static_assert(static_cast<int>(SymVariant::Push) == device::kPush &&
                static_cast<int>(SymVariant::Pull) == device::kPull &&
                static_cast<int>(SymVariant::Staged) == device::kStaged &&
                static_cast<int>(SymVariant::Halves) == device::kHalves);
  const int v = static_cast<int>(variant);
  switch (dtype) {
    case DataType::Float32:
      return launchForOp<kClocked, float>(twoShot, view, send, recv, count, op, v, options, stream);
    case DataType::Float16:
      return launchForOp<kClocked, __half>(twoShot, view, send, recv, count, op, v, options, stream);
    case DataType::Bfloat16:
      return launchForOp<kClocked, __nv_bfloat16>(twoShot, view, send, recv, count, op, v, options, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

// The clocked instances (allreduce_kernels_clocked.cu).
cudaError_t launchAllReduceClocked(bool twoShot, const DeviceView& view, const void* send, void* recv, size_t count,
                                   DataType dtype, ReduceOp op, SymVariant variant, const LaunchOptions& options,
                                   cudaStream_t stream);

}  // namespace dispatch
}  // namespace symmem::kernels

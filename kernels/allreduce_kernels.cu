// Launch wrappers: pick the template instance for (dtype, op) and the launch shape.
#include "kernels/allreduce_kernels.cuh"
#include "kernels/allreduce_launch.h"

namespace symmem::kernels {
namespace device {

__global__ void armKernel(uint32_t* dst, size_t words) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride)
    dst[i] = kArmedWord;
}

__global__ void checkPatternKernel(char* dst, int writer, int reader, uint32_t nonce) {
  for (uint32_t i = threadIdx.x; i < kCheckBytes / kVecBytes; i += blockDim.x) {
    const uint32_t w = i * 4;
    const uint4 x = make_uint4(checkPatternWord(writer, reader, w, nonce), checkPatternWord(writer, reader, w + 1, nonce),
                               checkPatternWord(writer, reader, w + 2, nonce),
                               checkPatternWord(writer, reader, w + 3, nonce));
    storeRemote(dst + static_cast<size_t>(i) * kVecBytes, x);
  }
}

}  // namespace device

namespace {

template <typename Kernel>
cudaError_t launchWith(Kernel kernel, const LaunchShape& shape, const LaunchOptions& options, cudaStream_t stream,
                       const DeviceView& view, const void* send, void* recv, size_t count) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(shape.blocks));
  config.blockDim = dim3(static_cast<unsigned>(shape.threads));
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = options.programmatic ? 1 : 0;
  void* args[] = {const_cast<DeviceView*>(&view), &send, &recv, &count};
  return cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(kernel), args);
}

template <typename T, int OP>
cudaError_t launchTyped(bool twoShot, const DeviceView& view, const void* send, void* recv, size_t count,
                        const LaunchOptions& options, cudaStream_t stream) {
  const size_t vectors = twoShot ? vectorCount(chunkElems(count, sizeof(T), view.nRanks) * sizeof(T))
                                 : vectorCount(count * sizeof(T));
  const LaunchShape shape = launchShape(vectors, options.maxBlocks);
  if (twoShot) return launchWith(device::twoShotAllReduce<T, OP>, shape, options, stream, view, send, recv, count);
  return launchWith(device::oneShotAllReduce<T, OP>, shape, options, stream, view, send, recv, count);
}

template <typename T>
cudaError_t launchForOp(bool twoShot, const DeviceView& view, const void* send, void* recv, size_t count, ReduceOp op,
                        const LaunchOptions& options, cudaStream_t stream) {
  switch (op) {
    case ReduceOp::Sum: return launchTyped<T, device::kSum>(twoShot, view, send, recv, count, options, stream);
    case ReduceOp::Prod: return launchTyped<T, device::kProd>(twoShot, view, send, recv, count, options, stream);
    case ReduceOp::Max: return launchTyped<T, device::kMax>(twoShot, view, send, recv, count, options, stream);
    case ReduceOp::Min: return launchTyped<T, device::kMin>(twoShot, view, send, recv, count, options, stream);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launchAllReduce(bool twoShot, const DeviceView& view, const void* send, void* recv, size_t count,
                            DataType dtype, ReduceOp op, const LaunchOptions& options, cudaStream_t stream) {
  switch (dtype) {
    case DataType::Float32: return launchForOp<float>(twoShot, view, send, recv, count, op, options, stream);
    case DataType::Float16: return launchForOp<__half>(twoShot, view, send, recv, count, op, options, stream);
    case DataType::Bfloat16:
      return launchForOp<__nv_bfloat16>(twoShot, view, send, recv, count, op, options, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launchOneShot(const DeviceView& view, const void* send, void* recv, size_t count, DataType dtype,
                          ReduceOp op, const LaunchOptions& options, cudaStream_t stream) {
  return launchAllReduce(false, view, send, recv, count, dtype, op, options, stream);
}

cudaError_t launchTwoShot(const DeviceView& view, const void* send, void* recv, size_t count, DataType dtype,
                          ReduceOp op, const LaunchOptions& options, cudaStream_t stream) {
  return launchAllReduce(true, view, send, recv, count, dtype, op, options, stream);
}

cudaError_t launchArm(char* dst, size_t bytes, cudaStream_t stream) {
  const size_t words = bytes / sizeof(uint32_t);
  if (words == 0) return cudaSuccess;
  const int threads = 256;
  const size_t blocks = std::min<size_t>(1024, divUp(words, threads));
  device::armKernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(reinterpret_cast<uint32_t*>(dst), words);
  return cudaGetLastError();
}

cudaError_t launchCheckPattern(char* dst, int writer, int reader, uint32_t nonce, cudaStream_t stream) {
  device::checkPatternKernel<<<1, 256, 0, stream>>>(dst, writer, reader, nonce);
  return cudaGetLastError();
}

}  // namespace symmem::kernels

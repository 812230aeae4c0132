// SPDX-License-Identifier: Apache-2.0
#pragma once
// The all-gather that the setup exchanges ride on, shared by the plugin's per-communicator setup and
// the tools: plain records of up to kRecordBytes from every rank of an NCCL communicator, in rank
// order, through NCCL's all-gather on a private stream, with device and pinned host buffers allocated
// once, before anything else can use the memory.
//
// The exchanges are NCCL collectives on the application's communicator. Two rules keep every rank
// in step: every exchange is posted on every rank whatever failed locally (a local failure travels as
// an all-zero record, which every rank reads as "cannot take part"), and an exchange is never
// abandoned half-way (an orphaned all-gather would pair with the application's next collective).
// So the wait for peers is NCCL's own: unbounded, with a WARN every minute naming what it waits for.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <thread>

#include "core/log.h"

namespace symmem {

class NcclRecordGather {
 public:
  using AllGatherFn = decltype(&ncclAllGather);
  using AsyncErrorFn = decltype(&ncclCommGetAsyncError);
  static constexpr size_t kRecordBytes = 4096;  // the largest record any exchange carries
  static constexpr auto kStillWaitingEvery = std::chrono::seconds(60);

  // `asyncError` (may be null: blocking communicators only) lets the exchange run on a non-blocking
  // communicator, whose all-gather may return ncclInProgress before NCCL has enqueued it.
  NcclRecordGather(AllGatherFn allGather, ncclComm_t comm, int nRanks, AsyncErrorFn asyncError = nullptr)
      : allGather_(allGather), asyncError_(asyncError), comm_(comm), nRanks_(nRanks) {
    const size_t total = kRecordBytes * static_cast<size_t>(nRanks);
    ready_ = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) == cudaSuccess &&
             cudaMalloc(&device_, total + kRecordBytes) == cudaSuccess &&
             cudaMallocHost(&host_, total + kRecordBytes) == cudaSuccess;
    if (!ready_) {
      cudaGetLastError();
      SYMMEM_WARN("setup on comm %p: cannot allocate the exchange buffers; this communicator stays on NCCL",
                  static_cast<void*>(comm_));
    }
  }
  NcclRecordGather(const NcclRecordGather&) = delete;
  NcclRecordGather& operator=(const NcclRecordGather&) = delete;
  ~NcclRecordGather() {
    if (stream_) cudaStreamSynchronize(stream_);
    if (device_) cudaFree(device_);
    if (host_) cudaFreeHost(host_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  // Without buffers this rank cannot post the exchange at all: the caller must not start setup.
  bool ready() const { return ready_; }

  // Every rank's `bytes` from `send`, in rank order, into `recv`. Returns false only where every rank
  // returns false too (a record larger than kRecordBytes), or where NCCL itself failed to post.
  bool operator()(const void* send, void* recv, size_t bytes) {
    if (!ready_ || bytes > kRecordBytes) return false;
    char* sendHost = static_cast<char*>(host_) + kRecordBytes * static_cast<size_t>(nRanks_);
    char* sendDev = static_cast<char*>(device_) + kRecordBytes * static_cast<size_t>(nRanks_);
    std::memcpy(sendHost, send, bytes);
    if (cudaMemcpyAsync(sendDev, sendHost, bytes, cudaMemcpyHostToDevice, stream_) != cudaSuccess) {
      cudaGetLastError();  // the all-gather below still runs; peers see whatever this rank holds
    }
    const ncclResult_t posted = allGather_(sendDev, device_, bytes, ncclUint8, comm_, stream_);
    if (posted != ncclSuccess && !(posted == ncclInProgress && waitUntilEnqueued())) {
      SYMMEM_WARN("setup on comm %p: ncclAllGather could not be posted", static_cast<void*>(comm_));
      return false;
    }
    const size_t total = bytes * static_cast<size_t>(nRanks_);
    cudaMemcpyAsync(host_, device_, total, cudaMemcpyDeviceToHost, stream_);
    auto nextWarning = std::chrono::steady_clock::now() + kStillWaitingEvery;
    for (;;) {
      const cudaError_t q = cudaStreamQuery(stream_);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) {
        cudaGetLastError();
        SYMMEM_WARN("setup on comm %p: the exchange failed on the device", static_cast<void*>(comm_));
        return false;
      }
      if (std::chrono::steady_clock::now() > nextWarning) {
        SYMMEM_WARN(
            "setup on comm %p is still waiting for its peers' first eligible all-reduce (ncclCommAbort "
            "ends the wait, as it ends NCCL's own)",
            static_cast<void*>(comm_));
        nextWarning += kStillWaitingEvery;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    std::memcpy(recv, host_, total);
    return true;
  }

 private:
  // A non-blocking communicator's call returned ncclInProgress: nothing may go on the stream until
  // NCCL says the call is enqueued (ncclCommGetAsyncError leaves ncclInProgress). NCCL's own wait.
  bool waitUntilEnqueued() {
    if (!asyncError_) return false;
    for (;;) {
      ncclResult_t state = ncclInProgress;
      if (asyncError_(comm_, &state) != ncclSuccess) return false;
      if (state != ncclInProgress) return state == ncclSuccess;
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  AllGatherFn allGather_;
  AsyncErrorFn asyncError_;
  ncclComm_t comm_;
  int nRanks_;
  cudaStream_t stream_ = nullptr;
  void* device_ = nullptr;
  void* host_ = nullptr;
  bool ready_ = false;
};

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The host object behind SymmetricComm (internal to kernels/).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/allreduce_launch.h"
#include "kernels/device_view.h"
#include "kernels/symmetric_comm.h"

namespace symmem::kernels {

struct FactsRecord;  // one rank's facts, all-gathered at setup (symmetric_setup.cpp)

class SymmetricCommImpl final : public SymmetricComm {
 public:
  explicit SymmetricCommImpl(const SymmetricConfig& config);
  ~SymmetricCommImpl() override;
  SymmetricCommImpl(const SymmetricCommImpl&) = delete;
  SymmetricCommImpl& operator=(const SymmetricCommImpl&) = delete;

  // The collective setup (symmetric_setup.cpp). False with `why` set: no rank has a comm.
  bool setup(const AllGatherFn& allGather, std::string* why);

  Status allReduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op, KernelChoice kernel,
                   cudaStream_t stream, bool* captured) override;
  bool publishKernelStats(stats::GpuCounts* host, uint32_t samplePeriod) override;
  bool copyKernelStats(stats::GpuCounts* to, int64_t boundMs) override;
  void abort() override;
  Status deviceStatus() const override;
  int waitedRank() const override;
  const SymmetricConfig& config() const override { return config_; }

 private:
  // Setup steps (symmetric_setup.cpp), in the order setup() runs them. Those returning a string
  // return this rank's failure reason, empty when the step went well.
  std::string allocateLocal(const SymmetricLayout& layout, cudaStream_t stream, cudaIpcMemHandle_t* handle,
                            void** errorDevice);
  void buildView(const SymmetricLayout& layout, void* errorDevice);
  std::string mapPeers(const std::vector<FactsRecord>& all, const FactsRecord& mine);
  std::string mapPeer(int q, const FactsRecord& peer, bool sameProcess);
  std::string writeCheckPattern(cudaStream_t stream, uint32_t nonce);
  std::string checkPeerPatterns(cudaStream_t stream, uint32_t nonce, uint32_t* badWriters);
  std::string armBuffer(cudaStream_t stream);
  // Teardown (symmetric_teardown.cpp): waits for this communicator's own work, bounded, then frees.
  void release();
  bool waitForOwnWork(int64_t boundMs);

  // The launch in call order (symmetric_order.cpp): after every earlier call of this communicator,
  // eager or captured, whatever its stream; then the serial event records this call.
  cudaError_t launchInCallOrder(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                                KernelChoice kernel, cudaStream_t stream, bool* captured);
  cudaError_t launchKernel(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op, KernelChoice kernel,
                           cudaStream_t stream);
  cudaError_t launchEager(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op, KernelChoice kernel,
                          cudaStream_t stream);
  cudaError_t launchCaptured(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                             KernelChoice kernel, cudaStream_t stream, unsigned long long captureId, cudaGraph_t graph);

  // One capture sequence's chain of this communicator's calls (symmetric_order.cpp).
  struct CaptureChain {
    unsigned long long id = 0;
    cudaStream_t lastStream = nullptr;
    cudaGraphNode_t lastKernel = nullptr;
    cudaGraphNode_t lastRecord = nullptr;
  };
  CaptureChain& chainFor(unsigned long long captureId);

  SymmetricConfig config_;
  LaunchOptions launch_;
  DeviceView view_{};
  char* localBuffer_ = nullptr;             // cudaMalloc'd, exported through IPC
  std::vector<char*> ipcOpened_;            // peer buffers opened with cudaIpcOpenMemHandle
  DeviceControl* control_ = nullptr;        // device memory
  volatile uint32_t* errorHost_ = nullptr;  // mapped pinned memory, HostWord entries (device_view.h)
  // The kernels' statistics (symmetric_stats.cpp): where teardown leaves them, the pinned memory and
  // stream the copies use, and whether a copy never finished (its memory is then never freed).
  std::mutex statsMutex_;
  // What a copy brings back: the running entries, then each algorithm's round (block 0's record).
  struct StatsStaging {
    RunningEntry entries[stats::kKernelKinds][stats::kBuckets];
    uint64_t rounds[stats::kAlgorithms];
  };
  stats::GpuCounts* statsHost_ = nullptr;
  StatsStaging* statsStaging_ = nullptr;
  // Which calls run the clocked kernels: none (0), or one in statsPeriod_ of each kernel kind and size
  // bucket, the first always (1: every call). The calls are counted under orderMutex_.
  std::atomic<uint32_t> statsPeriod_{0};
  uint32_t statsCalls_[stats::kKernelKinds][stats::kBuckets] = {};
  bool clockThisCall(KernelChoice kernel, uint64_t bytes);
  cudaStream_t statsStream_ = nullptr;
  bool statsStuck_ = false;
  // Teardown, once the kernels have ended: the entries into statsHost_, then the copies' stream and
  // memory freed. False when a copy never finished: the device memory it reads must stay.
  bool finishKernelStats();
  bool copyLocked(stats::GpuCounts* to, int64_t boundMs);
  // Call order (symmetric_order.cpp). serial_ is recorded after every call: by the host after an eager
  // launch, by a record node of the graph after a captured one; every call waits for it first.
  std::mutex orderMutex_;
  cudaEvent_t serial_ = nullptr;
  cudaStream_t lastStream_ = nullptr;  // stream of the last eager call
  bool haveLast_ = false;              // an eager call has recorded serial_
  bool everCaptured_ = false;          // a graph may record serial_ at any time from now on
  std::vector<CaptureChain> chains_;   // captures in progress (or ended: pruned when full)
};

}  // namespace symmem::kernels

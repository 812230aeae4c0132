// SPDX-License-Identifier: Apache-2.0
#pragma once
// The host object behind SymmetricComm (internal to kernels/).
#include <atomic>
#include <cstddef>
#include <cstdint>
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

  Status allReduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op, Algorithm algorithm,
                   cudaStream_t stream) override;
  Status deviceStatus() const override;
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
  void release();

  // The launch, after waiting for the previous eager call when that ran on another stream.
  cudaError_t launchInCallOrder(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op, bool twoShot,
                                cudaStream_t stream);

  SymmetricConfig config_;
  LaunchOptions launch_;
  DeviceView view_{};
  char* localBuffer_ = nullptr;             // cudaMalloc'd, exported through IPC
  std::vector<char*> ipcOpened_;            // peer buffers opened with cudaIpcOpenMemHandle
  DeviceControl* control_ = nullptr;        // device memory
  volatile uint32_t* errorHost_ = nullptr;  // mapped pinned memory, [0] DeviceError, [1] peer
  std::atomic<bool> timeoutReported_{false};
  // Cross-stream order of eager calls (symmetric_comm.cpp): recorded after every eager launch.
  cudaEvent_t lastDone_ = nullptr;
  cudaStream_t lastStream_ = nullptr;
  bool haveLast_ = false;
};

}  // namespace symmem::kernels

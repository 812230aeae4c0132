#include "plugin/comm_setup.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "plugin/interposer.h"
#include "plugin/log.h"
#include "topology/discover.h"

namespace symmem {

namespace {

// Setup waits for every rank to reach its first eligible all-reduce, which can be far apart in a
// real job (one rank still loading weights): bounded, but generously.
constexpr int64_t kMinSetupWaitMs = 120000;

// An all-gather of plain bytes through NCCL on the communicator, on a private stream.
class NcclByteGather {
 public:
  NcclByteGather(const RealNccl& nccl, ncclComm_t comm, int nRanks, int64_t waitMs)
      : nccl_(nccl), comm_(comm), nRanks_(nRanks), waitMs_(waitMs) {
    ok_ = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) == cudaSuccess;
  }
  ~NcclByteGather() {
    if (device_) cudaFree(device_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  bool operator()(const void* send, void* recv, size_t bytes) {
    if (!ok_) return false;
    const size_t total = bytes * static_cast<size_t>(nRanks_);
    if (total > capacity_) {
      if (device_) cudaFree(device_);
      device_ = nullptr;
      capacity_ = 0;
      if (cudaMalloc(&device_, total + bytes) != cudaSuccess) return fail("cudaMalloc");
      capacity_ = total;
    }
    char* sendDev = static_cast<char*>(device_) + total;
    if (cudaMemcpyAsync(sendDev, send, bytes, cudaMemcpyHostToDevice, stream_) != cudaSuccess) return fail("copy in");
    if (nccl_.allGather(sendDev, device_, bytes, ncclUint8, comm_, stream_) != ncclSuccess) return fail("ncclAllGather");
    if (cudaMemcpyAsync(recv, device_, total, cudaMemcpyDeviceToHost, stream_) != cudaSuccess) return fail("copy out");
    // Bounded wait: a rank that never arrives ends setup with an error instead of a hang.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(waitMs_);
    for (;;) {
      cudaError_t q = cudaStreamQuery(stream_);
      if (q == cudaSuccess) return true;
      if (q != cudaErrorNotReady) return fail("stream");
      if (std::chrono::steady_clock::now() > deadline) {
        SYMMEM_WARN("setup exchange on comm %p did not complete within %lld ms: a peer never reached its first "
                    "eligible all-reduce",
                    static_cast<void*>(comm_), static_cast<long long>(waitMs_));
        ok_ = false;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

 private:
  bool fail(const char* what) {
    cudaGetLastError();
    SYMMEM_WARN("setup exchange on comm %p failed at %s", static_cast<void*>(comm_), what);
    ok_ = false;
    return false;
  }

  const RealNccl& nccl_;
  ncclComm_t comm_;
  int nRanks_;
  int64_t waitMs_;
  cudaStream_t stream_ = nullptr;
  void* device_ = nullptr;
  size_t capacity_ = 0;
  bool ok_ = false;
};

RankFacts factsFor(int device) {
  char busId[32] = {};
  cudaDeviceProp prop{};
  ComputeCapability cc;
  if (cudaGetDeviceProperties(&prop, device) == cudaSuccess &&
      cudaDeviceGetPCIBusId(busId, sizeof(busId) - 1, device) == cudaSuccess) {
    cc = {prop.major, prop.minor};
  } else {
    cudaGetLastError();
    busId[0] = '\0';  // unknown GPU: every pair is unknown, and unknown means NCCL
  }
  return rankFactsFor(processTopology(), busId, device, cc, thisHostHash());
}

// Restores the caller's current device, whatever setup did.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    cudaGetDevice(&previous_);
    cudaSetDevice(device);
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }

 private:
  int previous_ = -1;
};

}  // namespace

CommFacts commFactsFrom(const CommunicatorTopology& agreed, int nRanks) {
  CommFacts f;
  f.nRanks = nRanks;
  f.nNodes = agreed.hosts;
  f.cc = agreed.capabilitiesEqual ? agreed.capability : ComputeCapability{};
  f.link = agreed.link;
  f.allPairsP2p = agreed.allPairsP2p;
  return f;
}

std::unique_ptr<CommState> setUpSymmetricComm(const RealNccl& nccl, const ProcessContext& process, ncclComm_t comm,
                                              int rank, int nRanks, int device) {
  auto state = std::make_unique<CommState>();
  state->device = device;
  DeviceScope scope(device);
  // Setup synchronises its own stream only; keep a capture elsewhere in this thread legal.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);

  const int64_t timeoutMs = Settings::process().integer(SettingId::TimeoutMs);
  NcclByteGather gather(nccl, comm, nRanks, std::max(timeoutMs, kMinSetupWaitMs));
  auto finish = [&](std::string why) {
    state->why = std::move(why);
    cudaThreadExchangeStreamCaptureMode(&mode);
    return std::move(state);
  };

  // Exchange 1: topology facts.
  std::vector<RankFacts> gathered(nRanks);
  const RankFacts mine = factsFor(device);
  if (!gather(&mine, gathered.data(), sizeof(RankFacts))) return finish("setup exchange failed");
  const CommunicatorTopology agreed = agreeOn(gathered);
  if (!agreed.symmetricOk) return finish(agreed.reason);

  state->facts = commFactsFrom(agreed, nRanks);
  const TableLookup found = lookupWithFallbackWarning(*process.table, state->facts.cc, state->facts.link, nRanks);
  state->entry = found.entry;
  uint64_t oneShot = found.entry ? found.entry->oneShotMaxBytes : 0;
  uint64_t twoShot = found.entry ? found.entry->twoShotMaxBytes : 0;
  if (process.policy.force == ForcedPath::OneShot || process.policy.force == ForcedPath::TwoShot) {
    // Forced paths (testing) need buffers even where the table has none.
    constexpr uint64_t kForcedCapacity = 4ull << 20;
    oneShot = std::max(oneShot, kForcedCapacity);
    twoShot = std::max(twoShot, kForcedCapacity);
  }
  if (oneShot == 0 && twoShot == 0) return finish("the table keeps every size on NCCL for these GPUs");

  kernels::SymmetricConfig config;
  config.rank = rank;
  config.nRanks = nRanks;
  config.device = device;
  config.oneShotMaxBytes = oneShot;
  config.twoShotMaxBytes = twoShot;
  config.timeoutMs = timeoutMs;
  config.p2pCheck = Settings::process().flag(SettingId::P2pCheck);
  std::string whyNot;
  state->symmetric = kernels::SymmetricComm::create(
      config, [&](const void* s, void* r, size_t b) { return gather(s, r, b); }, &whyNot);
  if (!state->symmetric) return finish("symmetric buffers not set up: " + whyNot);
  state->facts.symmetricCapacityBytes = std::max(oneShot, twoShot);
  state->ready = true;
  return finish("ready");
}

}  // namespace symmem

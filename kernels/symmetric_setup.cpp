// Collective setup and teardown of a communicator's symmetric buffers.
//
// Exactly three all-gathers on every rank, whatever happens locally; each carries an ok flag and a
// reason, so a failure anywhere makes every rank return nullptr with the same kind of reason:
//   1. facts: config, pid + per-process token, device, buffer pointer and IPC handle;
//   2. after opening the peers' buffers and writing the check pattern through each mapping: barrier;
//   3. after checking what the peers wrote into this rank's buffer (bounded in time) and arming the
//      whole buffer with the sentinel: barrier, and the verdict.
// After step 3 no rank can push data before every rank's buffer is armed.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "kernels/allreduce_launch.h"
#include "kernels/symmetric_comm_impl.h"
#include "core/log.h"

namespace symmem::kernels {
namespace {

constexpr uint32_t kSetupMagic = 0x53594d4du;  // "SYMM"
constexpr uint32_t kSetupVersion = 1;
constexpr size_t kReasonBytes = 160;

struct FactsRecord {
  uint32_t magic;
  uint32_t version;
  int32_t ok;
  int32_t rank;
  int32_t nRanks;
  int32_t device;
  int64_t pid;
  uint64_t processToken;
  uint64_t oneShotMaxBytes;
  uint64_t twoShotMaxBytes;
  uint64_t bufferBytes;
  uint64_t bufferAddress;  // valid in the owner's process only (used by peers of the same process)
  cudaIpcMemHandle_t handle;
  char reason[kReasonBytes];
};

struct StepRecord {
  int32_t ok;
  uint32_t badWriters;  // step 3: ranks whose check pattern did not arrive here
  char reason[kReasonBytes];
};

// Random per process, so that two processes that happen to reuse a pid (containers) are not taken
// for one.
uint64_t processToken() {
  static const uint64_t token = [] {
    std::random_device rd;
    uint64_t t = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    t ^= static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return t == 0 ? 1 : t;
  }();
  return token;
}

void setReason(char (&dst)[kReasonBytes], const std::string& text) {
  std::snprintf(dst, kReasonBytes, "%s", text.c_str());
}

std::string cudaText(const char* what, cudaError_t err) {
  return std::string(what) + ": " + cudaGetErrorString(err);
}

// Restores the calling thread's device and stream-capture mode on scope exit. Setup may run while
// the application captures a graph on another stream: the relaxed mode lets cudaMalloc & co run.
class SetupScope {
 public:
  explicit SetupScope(int device) {
    cudaGetDevice(&previousDevice_);
    cudaThreadExchangeStreamCaptureMode(&mode_);
    ok_ = cudaSetDevice(device);
  }
  ~SetupScope() {
    cudaThreadExchangeStreamCaptureMode(&mode_);
    if (previousDevice_ >= 0) cudaSetDevice(previousDevice_);
  }
  cudaError_t status() const { return ok_; }

 private:
  int previousDevice_ = -1;
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
  cudaError_t ok_ = cudaSuccess;
};

template <typename Record>
bool gatherRecords(const AllGatherFn& allGather, const Record& mine, std::vector<Record>& all) {
  std::memset(all.data(), 0, all.size() * sizeof(Record));
  return allGather(&mine, all.data(), sizeof(Record));
}

// The first failing rank's reason, "rank N: ..." (all ranks see the same records, so the same text).
template <typename Record>
bool allOk(const std::vector<Record>& records, std::string* why) {
  for (size_t r = 0; r < records.size(); ++r) {
    if (!records[r].ok) {
      char reason[kReasonBytes + 1] = {};
      std::memcpy(reason, records[r].reason, kReasonBytes);
      *why = "rank " + std::to_string(r) + ": " + (reason[0] ? reason : "setup failed");
      return false;
    }
  }
  return true;
}

// Peer access from the current device (`device`) to `peer`, enabled at most once per process by this
// module: asking again fails with cudaErrorPeerAccessAlreadyEnabled, harmless but reported as an API
// error by tools such as compute-sanitizer. Access enabled by someone else (NCCL in the same
// process) still answers "already enabled" once, which counts as success. (A cudaDeviceReset under
// live communicators would make this stale; NCCL does not survive one either.)
cudaError_t enablePeerAccessOnce(int device, int peer) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> enabled;
  std::lock_guard<std::mutex> lock(mutex);
  if (enabled.count({device, peer}) != 0) return cudaSuccess;
  cudaError_t err = cudaDeviceEnablePeerAccess(peer, 0);
  if (err == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();
    err = cudaSuccess;
  }
  if (err == cudaSuccess) enabled.insert({device, peer});
  return err;
}

}  // namespace

SymmetricCommImpl::SymmetricCommImpl(const SymmetricConfig& config) : config_(config) {
  launch_.maxBlocks = std::min(config.maxBlocks > 0 ? config.maxBlocks : kDefaultMaxBlocks, kMaxGrid);
  launch_.programmatic = config.programmaticLaunch;
}

SymmetricCommImpl::~SymmetricCommImpl() { release(); }

void SymmetricCommImpl::release() {
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(config_.device);
  // Kernels still queued may use the buffers; every wait in them is bounded.
  if (localBuffer_ != nullptr || control_ != nullptr) cudaDeviceSynchronize();
  for (char* p : ipcOpened_) cudaIpcCloseMemHandle(p);
  ipcOpened_.clear();
  if (localBuffer_ != nullptr) cudaFree(localBuffer_);
  if (control_ != nullptr) cudaFree(control_);
  if (errorHost_ != nullptr) cudaFreeHost(const_cast<uint32_t*>(errorHost_));
  if (lastDone_ != nullptr) cudaEventDestroy(lastDone_);
  lastDone_ = nullptr;
  haveLast_ = false;
  localBuffer_ = nullptr;
  control_ = nullptr;
  errorHost_ = nullptr;
  cudaGetLastError();
  if (previous >= 0) cudaSetDevice(previous);
}

bool SymmetricCommImpl::setup(const AllGatherFn& allGather, std::string* why) {
  const int rank = config_.rank, n = config_.nRanks;
  const bool shapeOk = n >= 2 && n <= kMaxRanks && rank >= 0 && rank < n;
  // One record per rank of the communicator, whatever its size (the all-gather writes that many).
  const size_t slots = static_cast<size_t>(std::max(n, 1));
  const size_t me = static_cast<size_t>(std::max(rank, 0)) % slots;
  const SymmetricLayout layout = makeLayout(shapeOk ? n : 2, config_.oneShotMaxBytes, config_.twoShotMaxBytes);
  SetupScope scope(config_.device);
  cudaStream_t stream = nullptr;

  // ---- step 1: local resources, then the facts --------------------------------------------------
  FactsRecord facts{};
  facts.magic = kSetupMagic;
  facts.version = kSetupVersion;
  facts.rank = rank;
  facts.nRanks = n;
  facts.device = config_.device;
  facts.pid = static_cast<int64_t>(getpid());
  facts.processToken = processToken();
  facts.oneShotMaxBytes = config_.oneShotMaxBytes;
  facts.twoShotMaxBytes = config_.twoShotMaxBytes;
  facts.bufferBytes = layout.totalBytes;
  std::string local;
  if (!shapeOk) {
    local = "bad communicator shape (rank " + std::to_string(rank) + " of " + std::to_string(n) + ", at most " +
            std::to_string(kMaxRanks) + " ranks)";
  } else if (config_.oneShotMaxBytes == 0 && config_.twoShotMaxBytes == 0) {
    local = "both one-shot and two-shot limits are 0";
  } else if (config_.oneShotMaxBytes > (size_t{1} << 30) || config_.twoShotMaxBytes > (size_t{1} << 30)) {
    local = "one-shot/two-shot limits above 1 GiB";
  } else if (config_.timeoutMs <= 0) {
    local = "timeout must be positive";
  } else if (scope.status() != cudaSuccess) {
    local = cudaText("cudaSetDevice", scope.status());
  }
  cudaError_t err = cudaSuccess;
  if (local.empty() && (err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess)
    local = cudaText("cudaStreamCreate", err);
  if (local.empty() && (err = cudaMalloc(reinterpret_cast<void**>(&localBuffer_), layout.totalBytes)) != cudaSuccess) {
    localBuffer_ = nullptr;
    local = cudaText("cudaMalloc of the symmetric buffer", err) + " (" + std::to_string(layout.totalBytes) + " bytes)";
  }
  if (local.empty() && (err = cudaIpcGetMemHandle(&facts.handle, localBuffer_)) != cudaSuccess)
    local = cudaText("cudaIpcGetMemHandle", err);
  if (local.empty() && (err = cudaMalloc(reinterpret_cast<void**>(&control_), sizeof(DeviceControl))) != cudaSuccess) {
    control_ = nullptr;
    local = cudaText("cudaMalloc of the control block", err);
  }
  if (local.empty() && (err = cudaMemsetAsync(control_, 0, sizeof(DeviceControl), stream)) != cudaSuccess)
    local = cudaText("cudaMemset", err);
  if (local.empty() && (err = cudaEventCreateWithFlags(&lastDone_, cudaEventDisableTiming)) != cudaSuccess) {
    lastDone_ = nullptr;
    local = cudaText("cudaEventCreate", err);
  }
  void* errorHost = nullptr;
  if (local.empty() && (err = cudaHostAlloc(&errorHost, 4 * sizeof(uint32_t), cudaHostAllocMapped)) != cudaSuccess)
    local = cudaText("cudaHostAlloc of the error word", err);
  if (errorHost != nullptr) {
    errorHost_ = static_cast<volatile uint32_t*>(errorHost);
    errorHost_[0] = 0;
    errorHost_[1] = 0;
  }
  void* errorDevice = nullptr;
  if (local.empty() && (err = cudaHostGetDevicePointer(&errorDevice, errorHost, 0)) != cudaSuccess)
    local = cudaText("cudaHostGetDevicePointer", err);
  facts.bufferAddress = reinterpret_cast<uintptr_t>(localBuffer_);
  facts.ok = local.empty();
  setReason(facts.reason, local);

  std::vector<FactsRecord> all(slots);
  if (!gatherRecords(allGather, facts, all)) {
    all[me].ok = 0;
    setReason(all[me].reason, "all-gather failed");
  }
  std::string failure;
  bool ok = allOk(all, &failure);
  if (ok) {
    // Rank 0's record is the reference, so every rank names the same rank.
    const FactsRecord& ref = all[0];
    for (size_t r = 0; r < slots && ok; ++r) {
      const FactsRecord& f = all[r];
      if (f.magic != kSetupMagic || f.version != kSetupVersion || f.rank != static_cast<int>(r) ||
          f.nRanks != ref.nRanks || f.oneShotMaxBytes != ref.oneShotMaxBytes ||
          f.twoShotMaxBytes != ref.twoShotMaxBytes || f.bufferBytes != ref.bufferBytes) {
        ok = false;
        failure = "rank " + std::to_string(r) + " disagrees with rank 0 on the setup (rank/size/limits/version)";
      }
    }
  }

  // ---- step 2: map the peers' buffers, write the check pattern through every mapping -------------
  const uint32_t nonce = static_cast<uint32_t>(all[0].processToken) ^ static_cast<uint32_t>(all[0].bufferAddress);
  local.clear();
  if (ok) {
    view_ = DeviceView{};
    view_.rank = rank;
    view_.nRanks = n;
    view_.local = localBuffer_;
    view_.layout = layout;
    view_.control = control_;
    view_.errorWord = static_cast<volatile uint32_t*>(errorDevice);
    view_.timeoutNs = static_cast<uint64_t>(config_.timeoutMs) * 1000000ull;
    // Every block of a launch must be resident at once (blocks wait for peers' blocks): at most one
    // block per multiprocessor.
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, config_.device) == cudaSuccess && sms > 0)
      launch_.maxBlocks = std::min(launch_.maxBlocks, sms);
    view_.gridCap = launch_.maxBlocks;
    for (int q = 0; q < n && local.empty(); ++q) {
      const FactsRecord& f = all[q];
      if (q == rank) {
        view_.peer[q] = localBuffer_;
        continue;
      }
      if (f.pid == facts.pid && f.processToken == facts.processToken) {
        // Same process: IPC cannot open our own allocation; use the pointer through peer access.
        if (f.device != config_.device) {
          int can = 0;
          cudaDeviceCanAccessPeer(&can, config_.device, f.device);
          if (!can) {
            local = "device " + std::to_string(config_.device) + " cannot access device " + std::to_string(f.device) +
                    " (rank " + std::to_string(q) + ", same process)";
            break;
          }
          err = enablePeerAccessOnce(config_.device, f.device);
          if (err != cudaSuccess) {
            local = cudaText(("cudaDeviceEnablePeerAccess to device " + std::to_string(f.device)).c_str(), err);
            break;
          }
        }
        view_.peer[q] = reinterpret_cast<char*>(static_cast<uintptr_t>(f.bufferAddress));
      } else {
        void* mapped = nullptr;
        err = cudaIpcOpenMemHandle(&mapped, f.handle, cudaIpcMemLazyEnablePeerAccess);
        if (err != cudaSuccess) {
          local = cudaText(("cudaIpcOpenMemHandle of rank " + std::to_string(q) + "'s buffer").c_str(), err);
          break;
        }
        ipcOpened_.push_back(static_cast<char*>(mapped));
        view_.peer[q] = static_cast<char*>(mapped);
      }
    }
    if (local.empty() && config_.p2pCheck) {
      for (int q = 0; q < n && local.empty(); ++q) {
        if (q == rank) continue;
        err = launchCheckPattern(view_.peer[q] + checkAreaOffset(layout, rank), rank, q, nonce, stream);
        if (err != cudaSuccess) local = cudaText("check pattern kernel", err);
      }
      if (local.empty() && (err = cudaStreamSynchronize(stream)) != cudaSuccess)
        local = cudaText("writing the check pattern to the peers", err);
    }
  }
  StepRecord step{};
  step.ok = ok && local.empty();
  setReason(step.reason, local);
  std::vector<StepRecord> steps(slots);
  if (!gatherRecords(allGather, step, steps)) {
    steps[me].ok = 0;
    setReason(steps[me].reason, "all-gather failed");
  }
  if (ok) ok = allOk(steps, &failure);

  // ---- step 3: check what the peers wrote here, bounded in time; arm the whole buffer -------------
  local.clear();
  uint32_t badWriters = 0;
  if (ok && config_.p2pCheck) {
    std::vector<uint32_t> seen(kCheckBytes / sizeof(uint32_t));
    // The writers finished their kernels before the barrier, so their stores are complete: a pattern
    // still missing after a short grace is never coming (a mapping the platform silently drops).
    constexpr int64_t kCheckGraceMs = 2000;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(std::min(config_.timeoutMs, kCheckGraceMs));
    for (int q = 0; q < n && err == cudaSuccess; ++q) {
      if (q == rank) continue;
      bool match = false;
      while (!match) {
        // On the private stream: a copy on the legacy stream could break another thread's capture.
        err = cudaMemcpyAsync(seen.data(), localBuffer_ + checkAreaOffset(layout, q), kCheckBytes,
                              cudaMemcpyDeviceToHost, stream);
        if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
        if (err != cudaSuccess) break;
        match = true;
        for (uint32_t i = 0; i < seen.size() && match; ++i) match = seen[i] == checkPatternWord(q, rank, i, nonce);
        if (match || std::chrono::steady_clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (!match) badWriters |= 1u << q;
    }
    if (err != cudaSuccess) {
      local = cudaText("reading back the check pattern", err);
    } else if (badWriters != 0) {
      local = "P2P check failed: writes from rank(s)";
      for (int q = 0; q < n; ++q)
        if (badWriters & (1u << q)) local += " " + std::to_string(q);
      local += " through their mapping did not arrive in rank " + std::to_string(rank) + "'s buffer";
    }
  }
  if (ok && local.empty()) {
    if ((err = launchArm(localBuffer_, layout.totalBytes, stream)) != cudaSuccess ||
        (err = cudaStreamSynchronize(stream)) != cudaSuccess)
      local = cudaText("arming the symmetric buffer", err);
  }
  step = StepRecord{};
  step.ok = ok && local.empty();
  step.badWriters = badWriters;
  setReason(step.reason, local);
  if (!gatherRecords(allGather, step, steps)) {
    steps[me].ok = 0;
    setReason(steps[me].reason, "all-gather failed");
  }
  if (ok) {
    for (size_t r = 0; r < slots; ++r) {
      for (int q = 0; q < n; ++q) {
        if (steps[r].badWriters & (1u << q))
          SYMMEM_WARN("symmetric setup: P2P check failed for the pair rank %d -> rank %zu (devices %d -> %d); "
                      "symmetric path off for this communicator",
                      q, r, all[q].device, all[r].device);
      }
    }
    ok = allOk(steps, &failure);
  }

  if (stream != nullptr) cudaStreamDestroy(stream);
  if (!ok) {
    if (why != nullptr) *why = failure.empty() ? "setup failed" : failure;
    release();
    return false;
  }
  SYMMEM_INFO(kLogInit, "symmetric path ready: rank %d/%d, device %d, %zu bytes buffer, one-shot <= %zu B, two-shot <= %zu B",
              rank, n, config_.device, layout.totalBytes, config_.oneShotMaxBytes, config_.twoShotMaxBytes);
  return true;
}

std::unique_ptr<SymmetricComm> SymmetricComm::create(const SymmetricConfig& config, const AllGatherFn& allGather,
                                                     std::string* whyNot) {
  auto comm = std::make_unique<SymmetricCommImpl>(config);
  std::string why;
  if (!comm->setup(allGather, &why)) {
    if (whyNot != nullptr) *whyNot = why;
    return nullptr;
  }
  return comm;
}

}  // namespace symmem::kernels

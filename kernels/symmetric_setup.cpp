// SPDX-License-Identifier: Apache-2.0
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
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/log.h"
#include "core/symmetric_limits.h"
#include "kernels/capture_mode.h"
#include "kernels/halves_plan.h"
#include "kernels/kernel_image.h"
#include "kernels/scoped_device.h"
#include "kernels/setup_kernels.h"
#include "kernels/symmetric_comm_impl.h"

namespace symmem::kernels {
namespace {

constexpr uint32_t kSetupMagic = 0x53594d4du;  // "SYMM"
constexpr uint32_t kSetupVersion = 2;
constexpr size_t kReasonBytes = 160;
static_assert(kSymmetricMaxRanks == kMaxRanks, "core/symmetric_limits.h and the kernels agree on the ranks");

}  // namespace

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
  uint8_t halves;          // SymmetricConfig::halves
  uint8_t halfOf[kMaxRanks];
  cudaIpcMemHandle_t handle;
  char reason[kReasonBytes];
};

namespace {

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

std::string cudaText(const char* what, cudaError_t err) { return std::string(what) + ": " + cudaGetErrorString(err); }

// The all-gather of one record per rank. When it fails, this rank's own record says so, so the
// outcome below is a failure on this rank (peers see theirs through the all-gather they made).
template <typename Record>
void gatherRecords(const AllGatherFn& allGather, const Record& mine, std::vector<Record>& all, size_t me) {
  std::memset(all.data(), 0, all.size() * sizeof(Record));
  if (!allGather(&mine, all.data(), sizeof(Record))) {
    all[me].ok = 0;
    setReason(all[me].reason, "all-gather failed");
  }
}

// The first failing rank's reason, "rank N: ...", or empty when every rank is fine (all ranks see
// the same records, so the same text).
template <typename Record>
std::string firstFailure(const std::vector<Record>& records) {
  for (size_t r = 0; r < records.size(); ++r) {
    if (!records[r].ok) {
      char reason[kReasonBytes + 1] = {};
      std::memcpy(reason, records[r].reason, kReasonBytes);
      return "rank " + std::to_string(r) + ": " + (reason[0] ? reason : "setup failed");
    }
  }
  return {};
}

StepRecord stepRecord(bool ok, const std::string& reason, uint32_t badWriters) {
  StepRecord step{};
  step.ok = ok;
  step.badWriters = badWriters;
  setReason(step.reason, reason);
  return step;
}

// What is wrong with this rank's config, or empty.
std::string configProblem(const SymmetricConfig& config, bool shapeOk) {
  if (!shapeOk)
    return "bad communicator shape (rank " + std::to_string(config.rank) + " of " + std::to_string(config.nRanks) +
           ", at most " + std::to_string(kMaxRanks) + " ranks)";
  if (config.oneShotMaxBytes == 0 && config.twoShotMaxBytes == 0) return "both one-shot and two-shot limits are 0";
  // The one rule every layer applies (core/symmetric_limits.h): the table file and decide() refuse
  // the same entries, so a table that reads back never turns the path off here.
  if (std::string why = symmetricLimitProblem(config.nRanks, config.oneShotMaxBytes, config.twoShotMaxBytes);
      !why.empty())
    return why;
  if ((config.costSwitches & ~kKnownCostSwitches) != 0u) {
    char bits[16];
    std::snprintf(bits, sizeof(bits), "0x%x", config.costSwitches & ~kKnownCostSwitches);
    return std::string("unknown cost switches ") + bits + " (benchmark-only CostSwitch bits, device_view.h)";
  }
  if (config.timeoutMs <= 0) return "timeout must be positive";
  return halvesProblem(config);
}

// This rank's facts as far as they are known before anything is allocated.
FactsRecord factsOf(const SymmetricConfig& config, const SymmetricLayout& layout) {
  FactsRecord facts{};
  facts.magic = kSetupMagic;
  facts.version = kSetupVersion;
  facts.rank = config.rank;
  facts.nRanks = config.nRanks;
  facts.device = config.device;
  facts.pid = static_cast<int64_t>(getpid());
  facts.processToken = processToken();
  facts.oneShotMaxBytes = config.oneShotMaxBytes;
  facts.twoShotMaxBytes = config.twoShotMaxBytes;
  facts.bufferBytes = layout.totalBytes;
  facts.halves = config.halves ? 1 : 0;
  for (int r = 0; r < kMaxRanks; ++r) facts.halfOf[r] = config.halves && r < config.nRanks ? config.halfOf[r] : 0;
  return facts;
}

// The first rank whose facts disagree with rank 0's (the reference, so every rank names the same
// rank), or empty.
std::string disagreement(const std::vector<FactsRecord>& all) {
  const FactsRecord& ref = all[0];
  for (size_t r = 0; r < all.size(); ++r) {
    const FactsRecord& f = all[r];
    if (f.magic != kSetupMagic || f.version != kSetupVersion || f.rank != static_cast<int>(r) ||
        f.nRanks != ref.nRanks || f.oneShotMaxBytes != ref.oneShotMaxBytes ||
        f.twoShotMaxBytes != ref.twoShotMaxBytes || f.bufferBytes != ref.bufferBytes)
      return "rank " + std::to_string(r) + " disagrees with rank 0 on the setup (rank/size/limits/version)";
    if (f.halves != ref.halves || std::memcmp(f.halfOf, ref.halfOf, sizeof(f.halfOf)) != 0)
      return "rank " + std::to_string(r) + " disagrees with rank 0 on the halves";
  }
  return {};
}

std::string createSetupStream(cudaStream_t* stream) {
  const cudaError_t err = cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking);
  return err == cudaSuccess ? std::string() : cudaText("cudaStreamCreate", err);
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

// Reads `writer`'s pattern back from `area` (this rank's check area for that writer) until it is
// all there or `deadline` passes; *arrived says which. The writers finished their kernels before the
// step 2 barrier, so their stores are complete: a pattern still missing after a short grace is never
// coming (a mapping the platform silently drops).
cudaError_t awaitCheckPattern(const char* area, int writer, int reader, uint32_t nonce, cudaStream_t stream,
                              std::chrono::steady_clock::time_point deadline, bool* arrived) {
  std::vector<uint32_t> seen(kCheckBytes / sizeof(uint32_t));
  *arrived = false;
  while (true) {
    // On the private stream: a copy on the legacy stream could break another thread's capture.
    cudaError_t err = cudaMemcpyAsync(seen.data(), area, kCheckBytes, cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
    if (err != cudaSuccess) return err;
    bool match = true;
    for (uint32_t i = 0; i < seen.size() && match; ++i) match = seen[i] == checkPatternWord(writer, reader, i, nonce);
    *arrived = match;
    if (match || std::chrono::steady_clock::now() > deadline) return cudaSuccess;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// One WARN per pair whose check pattern did not arrive, as every rank reported in step 3.
void warnFailedPairs(const std::vector<StepRecord>& steps, const std::vector<FactsRecord>& all, int n) {
  for (size_t r = 0; r < steps.size(); ++r) {
    for (int q = 0; q < n; ++q) {
      if (steps[r].badWriters & (1u << q))
        SYMMEM_WARN(
            "symmetric setup: P2P check failed for the pair rank %d -> rank %zu (devices %d -> %d); "
            "symmetric path off for this communicator",
            q, r, all[q].device, all[r].device);
    }
  }
}

}  // namespace

SymmetricCommImpl::SymmetricCommImpl(const SymmetricConfig& config) : config_(config) {
  launch_.maxBlocks = std::min(config.maxBlocks > 0 ? config.maxBlocks : kDefaultMaxBlocks, kMaxGrid);
  launch_.programmatic = config.programmaticLaunch;
}

// Step 1: this rank's buffer (and its IPC handle), control block, order event and error word.
std::string SymmetricCommImpl::allocateLocal(const SymmetricLayout& layout, cudaStream_t stream,
                                             cudaIpcMemHandle_t* handle, void** errorDevice) {
  cudaError_t err = cudaMalloc(reinterpret_cast<void**>(&localBuffer_), layout.totalBytes);
  if (err != cudaSuccess) {
    localBuffer_ = nullptr;
    return cudaText("cudaMalloc of the symmetric buffer", err) + " (" + std::to_string(layout.totalBytes) + " bytes)";
  }
  if ((err = cudaIpcGetMemHandle(handle, localBuffer_)) != cudaSuccess) return cudaText("cudaIpcGetMemHandle", err);
  if ((err = cudaMalloc(reinterpret_cast<void**>(&control_), sizeof(DeviceControl))) != cudaSuccess) {
    control_ = nullptr;
    return cudaText("cudaMalloc of the control block", err);
  }
  if ((err = cudaMemsetAsync(control_, 0, sizeof(DeviceControl), stream)) != cudaSuccess)
    return cudaText("cudaMemset", err);
  if ((err = cudaEventCreateWithFlags(&serial_, cudaEventDisableTiming)) != cudaSuccess) {
    serial_ = nullptr;
    return cudaText("cudaEventCreate", err);
  }
  void* errorHost = nullptr;
  err = cudaHostAlloc(&errorHost, kHostWords * sizeof(uint32_t), cudaHostAllocMapped);
  if (errorHost != nullptr) {
    errorHost_ = static_cast<volatile uint32_t*>(errorHost);
    for (int i = 0; i < kHostWords; ++i) errorHost_[i] = 0;
  }
  if (err != cudaSuccess) return cudaText("cudaHostAlloc of the error word", err);
  if ((err = cudaHostGetDevicePointer(errorDevice, errorHost, 0)) != cudaSuccess)
    return cudaText("cudaHostGetDevicePointer", err);
  return {};
}

// Step 2: the handles the kernels get, and the grid cap: every block of a launch must be resident at
// once (blocks wait for peers' blocks), so at most one block per multiprocessor.
void SymmetricCommImpl::buildView(const SymmetricLayout& layout, void* errorDevice) {
  view_ = DeviceView{};
  view_.rank = config_.rank;
  view_.nRanks = config_.nRanks;
  view_.local = localBuffer_;
  view_.layout = layout;
  view_.control = control_;
  view_.errorWord = static_cast<volatile uint32_t*>(errorDevice);
  view_.timeoutNs = static_cast<uint64_t>(config_.timeoutMs) * 1000000ull;
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, config_.device) == cudaSuccess && sms > 0)
    launch_.maxBlocks = std::min(launch_.maxBlocks, sms);
  view_.gridCap = launch_.maxBlocks;
  view_.costSwitches = config_.costSwitches;
  view_.trace = config_.costTrace;
  view_.half = -1;
  if (layout.halves) {
    const HalvesPlan plan = halvesPlan(config_);
    view_.half = config_.halfOf[config_.rank];
    view_.islandPeers = plan.islandPeers[config_.rank];
    for (int r = 0; r < config_.nRanks; ++r) view_.partnerOf[r] = static_cast<uint8_t>(plan.partnerOf[r]);
  }
}

// Step 2: every peer's buffer as mapped on this device (view_.peer), stopping at the first failure.
std::string SymmetricCommImpl::mapPeers(const std::vector<FactsRecord>& all, const FactsRecord& mine) {
  for (int q = 0; q < config_.nRanks; ++q) {
    if (q == config_.rank) {
      view_.peer[q] = localBuffer_;
      continue;
    }
    const FactsRecord& f = all[q];
    const bool sameProcess = f.pid == mine.pid && f.processToken == mine.processToken;
    std::string failure = mapPeer(q, f, sameProcess);
    if (!failure.empty()) return failure;
  }
  return {};
}

// Same process: IPC cannot open our own allocation; use the pointer through peer access. Otherwise
// open the peer's IPC handle.
std::string SymmetricCommImpl::mapPeer(int q, const FactsRecord& peer, bool sameProcess) {
  if (sameProcess) {
    if (peer.device != config_.device) {
      int can = 0;
      cudaDeviceCanAccessPeer(&can, config_.device, peer.device);
      if (!can)
        return "device " + std::to_string(config_.device) + " cannot access device " + std::to_string(peer.device) +
               " (rank " + std::to_string(q) + ", same process)";
      const cudaError_t err = enablePeerAccessOnce(config_.device, peer.device);
      if (err != cudaSuccess)
        return cudaText(("cudaDeviceEnablePeerAccess to device " + std::to_string(peer.device)).c_str(), err);
    }
    view_.peer[q] = reinterpret_cast<char*>(static_cast<uintptr_t>(peer.bufferAddress));
    return {};
  }
  void* mapped = nullptr;
  const cudaError_t err = cudaIpcOpenMemHandle(&mapped, peer.handle, cudaIpcMemLazyEnablePeerAccess);
  if (err != cudaSuccess)
    return cudaText(("cudaIpcOpenMemHandle of rank " + std::to_string(q) + "'s buffer").c_str(), err);
  ipcOpened_.push_back(static_cast<char*>(mapped));
  view_.peer[q] = static_cast<char*>(mapped);
  return {};
}

// Step 2: this rank's pattern into its check area of every peer, through the mapping, with the
// kernels' own stores; complete when this returns.
std::string SymmetricCommImpl::writeCheckPattern(cudaStream_t stream, uint32_t nonce) {
  const int rank = config_.rank;
  for (int q = 0; q < config_.nRanks; ++q) {
    if (q == rank) continue;
    char* area = view_.peer[q] + checkAreaOffset(view_.layout, rank);  // mine, in q's buffer
    const cudaError_t err = launchCheckPattern(area, rank, q, nonce, stream);
    if (err != cudaSuccess) return cudaText("check pattern kernel", err);
  }
  const cudaError_t err = cudaStreamSynchronize(stream);
  return err == cudaSuccess ? std::string() : cudaText("writing the check pattern to the peers", err);
}

// Step 3: every peer's pattern in this rank's buffer, bounded in time. *badWriters: the peers whose
// pattern did not arrive (or whose read-back failed).
std::string SymmetricCommImpl::checkPeerPatterns(cudaStream_t stream, uint32_t nonce, uint32_t* badWriters) {
  constexpr int64_t kCheckGraceMs = 2000;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(std::min(config_.timeoutMs, kCheckGraceMs));
  const int rank = config_.rank, n = config_.nRanks;
  cudaError_t err = cudaSuccess;
  for (int q = 0; q < n && err == cudaSuccess; ++q) {
    if (q == rank) continue;
    const char* area = localBuffer_ + checkAreaOffset(view_.layout, q);  // q's, in my buffer
    bool arrived = false;
    err = awaitCheckPattern(area, q, rank, nonce, stream, deadline, &arrived);
    if (!arrived) *badWriters |= 1u << q;
  }
  if (err != cudaSuccess) return cudaText("reading back the check pattern", err);
  if (*badWriters == 0) return {};
  std::string failure = "P2P check failed: writes from rank(s)";
  for (int q = 0; q < n; ++q)
    if (*badWriters & (1u << q)) failure.append(" ").append(std::to_string(q));
  return failure + " through their mapping did not arrive in rank " + std::to_string(rank) + "'s buffer";
}

// Step 3: the whole buffer armed and the pull flags at 0 (no round announced), complete when this
// returns.
std::string SymmetricCommImpl::armBuffer(cudaStream_t stream) {
  cudaError_t err = launchArm(localBuffer_, view_.layout.totalBytes, stream);
  if (err == cudaSuccess && pullFlagBytes(view_.layout) > 0)
    err = cudaMemsetAsync(localBuffer_ + view_.layout.flagOffset, 0, pullFlagBytes(view_.layout), stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  return err == cudaSuccess ? std::string() : cudaText("arming the symmetric buffer", err);
}

bool SymmetricCommImpl::setup(const AllGatherFn& allGather, std::string* why) {
  const int rank = config_.rank, n = config_.nRanks;
  const bool shapeOk = n >= 2 && n <= kMaxRanks && rank >= 0 && rank < n;
  // One record per rank of the communicator, whatever its size (the all-gather writes that many).
  const size_t slots = static_cast<size_t>(std::max(n, 1));
  const size_t me = static_cast<size_t>(std::max(rank, 0)) % slots;
  const SymmetricLayout layout =
      makeLayout(shapeOk ? n : 2, config_.oneShotMaxBytes, config_.twoShotMaxBytes, config_.halves);
  const RelaxedCaptureScope relaxed;  // first, so that the device switches run in relaxed mode too
  const ScopedDevice onDevice(config_.device);
  cudaStream_t stream = nullptr;
  // The outcome so far: empty while every rank is fine, else the first failure, the same text on
  // every rank. Each step's local part runs only while it is empty; every all-gather runs always.
  std::string failure;

  // ---- step 1: local resources, then the facts --------------------------------------------------
  FactsRecord facts = factsOf(config_, layout);
  void* errorDevice = nullptr;
  std::string local = configProblem(config_, shapeOk);
  if (local.empty() && onDevice.status() != cudaSuccess) local = cudaText("cudaSetDevice", onDevice.status());
  // A GPU the build has no code for (kernel_image.h): every rank stays on NCCL, this one saying why,
  // instead of a failed launch later. Also asks, outside any capture, whether the code takes the
  // programmatic launch.
  if (local.empty()) local = kernelImageProblem(config_.device);
  if (local.empty()) local = createSetupStream(&stream);
  if (local.empty()) local = allocateLocal(layout, stream, &facts.handle, &errorDevice);
  facts.bufferAddress = reinterpret_cast<uintptr_t>(localBuffer_);
  facts.ok = local.empty();
  setReason(facts.reason, local);
  std::vector<FactsRecord> all(slots);
  gatherRecords(allGather, facts, all, me);
  failure = firstFailure(all);
  if (failure.empty()) failure = disagreement(all);

  // ---- step 2: map the peers' buffers, write the check pattern through every mapping -------------
  const uint32_t nonce = static_cast<uint32_t>(all[0].processToken) ^ static_cast<uint32_t>(all[0].bufferAddress);
  local.clear();
  if (failure.empty()) {
    buildView(layout, errorDevice);
    local = mapPeers(all, facts);
    if (local.empty() && config_.p2pCheck) local = writeCheckPattern(stream, nonce);
  }
  std::vector<StepRecord> steps(slots);
  gatherRecords(allGather, stepRecord(failure.empty() && local.empty(), local, 0), steps, me);
  if (failure.empty()) failure = firstFailure(steps);

  // ---- step 3: check what the peers wrote here, bounded in time; arm the whole buffer -------------
  local.clear();
  uint32_t badWriters = 0;
  if (failure.empty() && config_.p2pCheck) local = checkPeerPatterns(stream, nonce, &badWriters);
  if (failure.empty() && local.empty()) local = armBuffer(stream);
  gatherRecords(allGather, stepRecord(failure.empty() && local.empty(), local, badWriters), steps, me);
  if (failure.empty()) {
    warnFailedPairs(steps, all, n);
    failure = firstFailure(steps);
  }

  if (stream != nullptr) cudaStreamDestroy(stream);
  if (!failure.empty()) {
    if (why != nullptr) *why = failure;
    release();
    return false;
  }
  SYMMEM_INFO(kLogInit,
              "symmetric path ready: rank %d/%d, device %d, %zu bytes buffer, one-shot <= %zu B, two-shot <= %zu B",
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

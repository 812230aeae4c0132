// SPDX-License-Identifier: Apache-2.0
#include "plugin/interpose/interposer.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/log.h"
#include "core/table_file.h"
#include "kernels/scoped_device.h"
#include "plugin/interpose/coll_config.h"

namespace symmem {

namespace {
// Set while a call is being handed to NCCL: should NCCL's own code reach a hooked entry point again
// (an all-reduce implemented on top of another), that call goes straight to NCCL.
thread_local bool tInsideNccl = false;
// The longest a publication waits for its copy of a communicator's kernel counts (one 8 KiB transfer).
constexpr int64_t kStatsCopyBoundMs = 500;

struct InsideNccl {
  InsideNccl() { tInsideNccl = true; }
  ~InsideNccl() { tInsideNccl = false; }
};

thread_local bool tPastPointOfNoReturn = false;
}  // namespace

PointOfNoReturn::PointOfNoReturn() noexcept : enclosing_(tPastPointOfNoReturn) { tPastPointOfNoReturn = false; }
PointOfNoReturn::~PointOfNoReturn() { tPastPointOfNoReturn = enclosing_ || tPastPointOfNoReturn; }
bool PointOfNoReturn::passed() const noexcept { return tPastPointOfNoReturn; }
void PointOfNoReturn::pass() noexcept { tPastPointOfNoReturn = true; }

std::optional<bool> streamIsCapturing(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    cudaGetLastError();
    return std::nullopt;
  }
  return capture != cudaStreamCaptureStatusNone;
}

Interposer::Interposer(const RealNccl& nccl, const ProcessContext& process, SetupSteps steps,
                       CaptureProbeFn captureProbe, int copy)
    : nccl_(nccl),
      process_(process),
      steps_(std::move(steps)),
      captureProbe_(std::move(captureProbe)),
      copy_(copy >= 0 && copy < kMaxNcclCopies ? copy : 0) {}

std::shared_ptr<CommState> Interposer::find(ncclComm_t comm) const {
  std::shared_lock lock(mutex_);
  auto it = comms_.find(comm);
  return it == comms_.end() ? nullptr : it->second;
}

size_t Interposer::liveCommunicators() const {
  std::shared_lock lock(mutex_);
  return comms_.size();
}

void Interposer::forget(ncclComm_t comm, bool abort) {
  std::shared_ptr<CommState> gone;
  {
    std::unique_lock lock(mutex_);
    early_.erase(comm);  // counters of a communicator never set up: its summary line
    auto it = comms_.find(comm);
    if (it == comms_.end()) return;
    gone = std::move(it->second);
    comms_.erase(it);
  }
  if (!gone || !gone->symmetric) return;
  if (abort) gone->symmetric->abort();
  // A timeout nobody has heard of yet (a replayed graph's) is said now, before the state goes.
  if (gone->symmetric->deviceStatus() == kernels::Status::PeerTimeout) warnTimeoutOnce(comm, *gone);
  // Released outside the lock; the release waits for this communicator's own kernels only. A call
  // still running on another thread keeps its own reference until it returns.
  const kernels::ScopedDevice scope(gone->device);
  gone.reset();
}

void Interposer::warnTimeoutOnce(ncclComm_t comm, CommState& state) const {
  std::call_once(state.errorReported, [&] {
    SYMMEM_WARN(
        "comm %p rank %d: a symmetric all-reduce timed out after %lld ms waiting for rank %d (SYMMEM_TIMEOUT_MS); "
        "the results of that call are invalid, and this communicator's calls and ncclCommGetAsyncError now report "
        "ncclSystemError",
        static_cast<void*>(comm), state.rank, static_cast<long long>(process_.timeoutMs),
        state.symmetric ? state.symmetric->waitedRank() : -1);
  });
}

Arrival Interposer::arrival(ncclComm_t comm, bool captureKnown, std::shared_ptr<void>* prepared) {
  Arrival mine;
  auto cannot = [&](std::string why) {
    mine.takesPart = false;
    mine.why = std::move(why);
    return mine;
  };
  if (!captureKnown) return cannot("cudaStreamIsCapturing failed on the call's stream");  // or a caller's reason
  // A non-blocking communicator still being created cannot take the setup exchange yet. Forwarding
  // this call instead would depend on timing, which differs between ranks: wait for it, as NCCL's
  // own blocking calls would.
  ncclResult_t async = ncclSuccess;
  for (;;) {
    if (nccl_.commGetAsyncError(comm, &async) != ncclSuccess) return cannot("ncclCommGetAsyncError failed");
    if (async != ncclInProgress) break;
    if (abortRequested(comm)) return cannot("aborted while NCCL was still creating the communicator");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (async != ncclSuccess) return cannot("the communicator reports an NCCL error");
  if (nccl_.commCount(comm, &mine.nRanks) != ncclSuccess || nccl_.commUserRank(comm, &mine.rank) != ncclSuccess ||
      nccl_.commCuDevice(comm, &mine.device) != ncclSuccess)
    return cannot("NCCL's rank, count or device query failed");
  if (steps_.prepare && mine.nRanks >= 2) {
    std::string why;
    *prepared = steps_.prepare(comm, mine.nRanks, mine.device, &why);
    if (!*prepared) return cannot(why);
  }
  mine.takesPart = true;
  return mine;
}

bool Interposer::abortRequested(ncclComm_t comm) const {
  std::lock_guard<std::mutex> lock(abortMutex_);
  return std::find(aborted_.begin(), aborted_.end(), comm) != aborted_.end();
}

std::shared_ptr<CommState> Interposer::setUp(ncclComm_t comm, cudaStream_t stream, const char* cannotTakePart) {
  // Setup synchronises and allocates: never inside a capture (the same on every rank, as every rank
  // runs the same program). The call goes to NCCL and setup waits for an eager call.
  const std::optional<bool> capturing = captureState(stream);
  if (capturing && *capturing) return nullptr;

  // From here on this rank always reaches the agreement, taking part or not: a rank that skipped it
  // would leave its peers waiting for it, then on NCCL while it forwarded (docs/transparent-use.md).
  std::shared_ptr<void> prepared;
  Arrival mine;
  try {
    mine = arrival(comm, capturing.has_value() && cannotTakePart == nullptr, &prepared);
    if (cannotTakePart) mine.why = cannotTakePart;
  } catch (const std::exception& e) {
    prepared.reset();  // an exception here is still a "no" said in the agreement, never a skipped one
    mine.takesPart = false;
    mine.why = std::string("internal error: ") + e.what();
  }
  std::shared_ptr<CommState> state;
  bool news = true;  // whether a "stays on NCCL" is worth a notice
  if (mine.takesPart && mine.nRanks < 2) {
    state = std::make_unique<CommState>();  // nothing to agree on: the same answer on the one rank
    state->why = "single-rank communicator";
  } else {
    // Past the agreement this rank's peers go by its answer and post the exchanges with it: this call
    // can no longer be handed to NCCL instead.
    PointOfNoReturn::pass();
    try {
      const Agreement agreed = steps_.agree ? steps_.agree(comm, mine, [this, comm] { return abortRequested(comm); })
                                            : Agreement{mine.takesPart, mine.why};
      news = !agreed.expected;
      if (agreed.go) state = steps_.setup(comm, mine.rank, mine.nRanks, mine.device, prepared.get());
      if (!state) {
        state = std::make_unique<CommState>();
        state->why = agreed.go ? "setup failed" : agreed.why;
      }
    } catch (...) {
      // Remembered, never tried again: a second agreement on this communicator would find the first
      // one's verdict and could post exchanges that its peers, long past setup, never pair with.
      auto failed = std::make_shared<CommState>();
      failed->why = "internal error during setup";
      failed->rank = mine.rank;
      failed->device = mine.device;
      std::unique_lock lock(mutex_);
      comms_.emplace(comm, std::move(failed));
      throw;
    }
  }
  prepared.reset();  // the exchange buffers go once setup is over
  state->rank = mine.rank;
  if (state->device < 0) state->device = mine.device;
  if (state->ready) {
    const Thresholds* e = state->entry;
    // A second NCCL copy's communicators say whose they are (plugin/interpose/nccl_copies.h).
    const std::string copy =
        copy_ == 0 ? std::string() : ", NCCL copy " + std::to_string(copy_) + " " + std::string(nccl_.library);
    SYMMEM_INFO(kLogInit | kLogColl,
                "comm %p rank %d/%d: symmetric path on (cc %s, link %s, one-shot <= %s, two-shot <= %s%s)",
                static_cast<void*>(comm), mine.rank, mine.nRanks, state->facts.cc.str().c_str(),
                std::string(linkClassName(state->facts.link)).c_str(), formatBytes(e ? e->oneShotMaxBytes : 0).c_str(),
                formatBytes(e ? e->twoShotMaxBytes : 0).c_str(), copy.c_str());
  } else {
    SYMMEM_INFO(kLogInit | kLogColl, "comm %p rank %d/%d: all-reduces stay on NCCL (%s)", static_cast<void*>(comm),
                mine.rank, mine.nRanks, state->why.c_str());
    if (news && mine.nRanks >= 2 && process_.policy.enabled && process_.policy.symmetric)
      SYMMEM_NOTICE_ONCE("stays:" + state->why, "all-reduces stay on NCCL on a %d-rank communicator: %s", mine.nRanks,
                         state->why.c_str());
  }
  attachCounters(comm, *state, mine.nRanks);
  std::unique_lock lock(mutex_);
  auto [it, inserted] = comms_.emplace(comm, std::move(state));
  return it->second;
}

void Interposer::attachCounters(ncclComm_t comm, CommState& state, int nRanks) {
  if (!stats_) return;
  try {
    std::unique_ptr<CommCounters> counters;
    {
      std::unique_lock lock(mutex_);
      if (auto it = early_.find(comm); it != early_.end()) {
        counters = std::move(it->second);
        early_.erase(it);
      }
    }
    if (!counters) counters = stats_->lease(comm);
    std::string path;
    if (state.ready) {
      const Thresholds* e = state.entry;
      path = "symmetric (cc " + state.facts.cc.str() + ", link " + std::string(linkClassName(state.facts.link)) +
             ", one-shot <= " + formatBytes(e ? e->oneShotMaxBytes : 0) +
             ", two-shot <= " + formatBytes(e ? e->twoShotMaxBytes : 0) + ")";
    } else {
      path = "NCCL: " + state.why;
    }
    counters->describe(state.rank, nRanks, state.device, state.ready, path);
    if (state.ready && state.symmetric && stats_->gpuSampling() != 0) {
      if (state.symmetric->publishKernelStats(counters->gpuMirror(), stats_->gpuSampling())) {
        counters->markGpuSampling(stats_->gpuSampling());
        kernels::SymmetricComm* symmetric = state.symmetric.get();
        state.publication = stats_->publishGpu(
            *counters, [symmetric](stats::GpuCounts* to) { return symmetric->copyKernelStats(to, kStatsCopyBoundMs); });
      }
    }
    state.counters = std::move(counters);
  } catch (const std::exception& e) {
    SYMMEM_WARN_ONCE("stats-attach", "counting the calls of comm %p failed (%s): it is not counted",
                     static_cast<void*>(comm), e.what());
  }
}

CommCounters* Interposer::earlyCounters(ncclComm_t comm) {
  {
    std::shared_lock lock(mutex_);
    if (auto it = early_.find(comm); it != early_.end()) return it->second.get();
  }
  std::unique_ptr<CommCounters> made = stats_->lease(comm);
  int rank = -1, nRanks = 0, device = -1;
  if (nccl_.commUserRank(comm, &rank) != ncclSuccess) rank = -1;
  if (nccl_.commCount(comm, &nRanks) != ncclSuccess) nRanks = 0;
  if (nccl_.commCuDevice(comm, &device) != ncclSuccess) device = -1;
  made->describe(rank, nRanks, device, false, "NCCL: not set up yet (its first eligible all-reduce sets it up)");
  std::unique_lock lock(mutex_);
  auto [it, inserted] = early_.emplace(comm, std::move(made));
  return it->second.get();
}

void Interposer::countCall(const AllReduceCall& c, CommState* state, stats::Route route, std::optional<bool> captured) {
  if (!stats_) return;
  try {
    CommCounters* counters = state != nullptr ? state->counters.get() : earlyCounters(c.comm);
    if (counters == nullptr) return;
    if (!captured) captured = captureState(c.stream).value_or(false);
    counters->count(route, static_cast<uint64_t>(c.count) * dataTypeSize(c.dtype), *captured);
  } catch (...) {
    // Counting never changes what the call does.
  }
}

void Interposer::atExit() {
  // A forked child (a data loader's worker, say) holds its parent's communicators: not its to sum up.
  if (!stats_ || stats_->inForkedChild()) return;
  stats_->stopPublishing();  // no copy from the device while the process ends
  sayLiveCommunicators();
  stats_->removeFile();
}

void Interposer::sayLiveCommunicators() const {
  if (!stats_) return;
  try {
    std::shared_lock lock(mutex_);
    auto say = [](ncclComm_t comm, const CommCounters& k) {
      SYMMEM_INFO(kLogInit | kLogColl, "comm %p rank %d/%d at exit: %s", static_cast<void*>(comm), k.slot().rank,
                  k.slot().nRanks, k.summary().c_str());
    };
    for (const auto& [comm, state] : comms_)
      if (state && state->counters) say(comm, *state->counters);
    for (const auto& [comm, counters] : early_)
      if (counters) say(comm, *counters);
  } catch (...) {
  }
}

ncclResult_t Interposer::forward(const AllReduceCall& c) const {
  SYMMEM_TRACE(kLogColl, "allreduce %zu elements on comm %p: NCCL", c.count, static_cast<void*>(c.comm));
  const InsideNccl inside;
  if (c.config != nullptr && nccl_.allReduceConfig)
    return nccl_.allReduceConfig(c.sendbuff, c.recvbuff, c.count, c.datatype, c.op, c.comm, c.stream, c.config);
  return nccl_.allReduce(c.sendbuff, c.recvbuff, c.count, c.datatype, c.op, c.comm, c.stream);
}

ncclResult_t Interposer::allReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  const AllReduceCall c{sendbuff, recvbuff, count, datatype, op, comm, stream};
  if (tInsideNccl) return nccl_.allReduce(sendbuff, recvbuff, count, datatype, op, comm, stream);
  return route(c);
}

ncclResult_t Interposer::allReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const void* config) {
  if (tInsideNccl || !nccl_.allReduceConfig)
    return nccl_.allReduceConfig ? nccl_.allReduceConfig(sendbuff, recvbuff, count, datatype, op, comm, stream, config)
                                 : ncclInvalidUsage;
  AllReduceCall c{sendbuff, recvbuff, count, datatype, op, comm, stream, config};
  c.completionEvent = static_cast<cudaEvent_t>(completionEventOf(config));
  // What the configuration asks of the execution is the same on every rank (NCCL requires it), so is
  // this verdict; the completion event, which is not, plays no part in it.
  const CollConfigVerdict verdict = judgeCollConfig(config);
  if (!verdict.symmetricAllowed) {
    SYMMEM_TRACE(kLogColl, "allreduce with a configuration (%s) on comm %p: NCCL", verdict.why,
                 static_cast<void*>(comm));
    if (stats_) countCall(c, find(comm).get(), stats::Route::NcclConfig);
    return forward(c);
  }
  return route(c);
}

std::optional<kernels::KernelChoice> Interposer::symmetricChoice(const AllReduceCall& c, const CommState& state,
                                                                 stats::Route* nccl) const {
  const DataType dtype = c.dtype;
  const ReduceOp rop = c.rop;
  const CollRequest request{Collective::AllReduce, rop, dtype, static_cast<uint64_t>(c.count) * dataTypeSize(dtype)};
  const Decision d = decide(request, state.facts, state.entry, process_.policy);
  if (!d.symmetric()) {
    if (nccl != nullptr) *nccl = d.path == Path::NcclTuned ? stats::Route::NcclTuned : stats::Route::NcclTable;
    return std::nullopt;
  }
  return kernels::KernelChoice(d.path == Path::SymOneShot ? kernels::Algorithm::OneShot : kernels::Algorithm::TwoShot,
                               d.variant);
}

std::optional<kernels::KernelChoice> Interposer::kernelFor(const AllReduceCall& c, CommState* state) {
  if (state == nullptr || !state->ready) {
    countCall(c, state, state == nullptr ? stats::Route::NcclBeforeSetup : stats::Route::NcclPathOff);
    return std::nullopt;
  }
  stats::Route nccl = stats::Route::NcclTable;
  std::optional<kernels::KernelChoice> kernel = symmetricChoice(c, *state, &nccl);
  if (!kernel) countCall(c, state, nccl);
  return kernel;
}

ncclResult_t Interposer::route(const AllReduceCall& c) {
  const DataType dtype = c.dtype;
  const ReduceOp rop = c.rop;
  // Whether a call can start setup depends on the call only, never on this rank's settings: a rank
  // with the path off still takes part in the setup vote, so that every rank posts the same
  // collectives (setup_vote.h).
  if (c.count == 0 || !symmetricSupports(dtype, rop)) {
    if (stats_) countCall(c, find(c.comm).get(), stats::Route::NcclTypeOrOp);  // no lookup when off
    return forward(c);
  }
  if (inGroup()) return hold(c);

  // A failure before the point of no return goes on to the entry point, which hands the call to NCCL
  // (nothing has happened that its peers pair with); after it, the call is an error here.
  const PointOfNoReturn point;
  try {
    std::shared_ptr<CommState> state = find(c.comm);
    if (state == nullptr) state = setUp(c.comm, c.stream);
    const std::optional<kernels::KernelChoice> kernel = kernelFor(c, state.get());
    if (!kernel) return forward(c);
    return launch(c, *state, *kernel);
  } catch (const std::exception& e) {
    if (!point.passed()) throw;
    return failedPastPointOfNoReturn(c, e.what());
  } catch (...) {
    if (!point.passed()) throw;
    return failedPastPointOfNoReturn(c, "unknown exception");
  }
}

ncclResult_t Interposer::failedPastPointOfNoReturn(const AllReduceCall& c, const char* what) const noexcept {
  try {
    if (const std::shared_ptr<CommState> state = find(c.comm)) {
      std::call_once(state->errorReported, [&] {
        SYMMEM_WARN(
            "comm %p rank %d: internal error (%s) once this rank's part of the all-reduce had begun (its "
            "symmetric kernel launched, or its setup agreed on): the call returns ncclInternalError, and is not "
            "handed to NCCL, where it would run a second time or pair with nothing",
            static_cast<void*>(c.comm), state->rank, what);
      });
    } else {
      SYMMEM_WARN(
          "comm %p: internal error (%s) in its setup, past the agreement with its peers: the call returns "
          "ncclInternalError, and is not handed to NCCL, where it would pair with the peers' setup exchanges",
          static_cast<void*>(c.comm), what);
    }
  } catch (...) {
  }
  return ncclInternalError;
}

ncclResult_t Interposer::launch(const AllReduceCall& c, CommState& state, kernels::KernelChoice kernel) {
  const DataType dtype = c.dtype;
  const ReduceOp rop = c.rop;
  // The peers launch the same kernel and wait for this rank's: whatever fails from here on, the call
  // is not handed to NCCL as well.
  PointOfNoReturn::pass();
  bool captured = false;
  const kernels::Status status =
      state.symmetric->allReduce(c.sendbuff, c.recvbuff, c.count, dtype, rop, kernel, c.stream, &captured);
  if (state.counters) {
    const uint64_t bytes = static_cast<uint64_t>(c.count) * dataTypeSize(dtype);
    const stats::Route route =
        status == kernels::Status::Ok
            ? static_cast<stats::Route>(
                  stats::kernelKind(kernel.algorithm == kernels::Algorithm::TwoShot, static_cast<int>(kernel.variant)))
        : status == kernels::Status::Unsupported ? stats::Route::NcclKernelDeclined
                                                 : stats::Route::Failed;
    state.counters->count(route, bytes, captured);
  }
  switch (status) {
    case kernels::Status::Ok:
      // The completion event follows the kernel on its stream; a failed record is this call's CUDA
      // error, its kernel launched all the same.
      if (c.completionEvent != nullptr &&
          state.symmetric->recordEvent(c.completionEvent, c.stream) != kernels::Status::Ok) {
        std::call_once(state.errorReported, [&] {
          SYMMEM_WARN(
              "comm %p rank %d: recording the call's launch-completion event after the symmetric all-reduce "
              "failed with a CUDA error",
              static_cast<void*>(c.comm), state.rank);
        });
        return ncclUnhandledCudaError;
      }
      SYMMEM_TRACE(
          kLogColl, "allreduce %zu x %s on comm %p: %s", c.count, std::string(dataTypeName(dtype)).c_str(),
          static_cast<void*>(c.comm),
          std::string(pathName(kernel.algorithm == kernels::Algorithm::OneShot ? Path::SymOneShot : Path::SymTwoShot))
              .c_str());
      return ncclSuccess;
    case kernels::Status::Unsupported:
      return forward(c);
    case kernels::Status::PeerTimeout:
      warnTimeoutOnce(c.comm, state);
      return ncclSystemError;
    case kernels::Status::CudaError:
      std::call_once(state.errorReported, [&] {
        SYMMEM_WARN("comm %p rank %d: launching the symmetric all-reduce failed with a CUDA error",
                    static_cast<void*>(c.comm), state.rank);
      });
      return ncclUnhandledCudaError;
  }
  return ncclInternalError;
}

ncclResult_t Interposer::commDestroy(ncclComm_t comm) {
  SYMMEM_TRACE(kLogInit, "destroy comm %p", static_cast<void*>(comm));
  forget(comm, /*abort=*/false);
  return nccl_.commDestroy(comm);
}

ncclResult_t Interposer::commFinalize(ncclComm_t comm) {
  forget(comm, /*abort=*/false);
  return nccl_.commFinalize ? nccl_.commFinalize(comm) : ncclInvalidUsage;
}

// Abort and revoke run while peers may be dead and kernels stuck. The plugin's kernels are told to
// stop first (a store to host memory, nothing waits), then NCCL's abort unblocks NCCL's own kernels
// (one of them may be ahead of a symmetric kernel on a stream), then the plugin's state is freed
// once its kernels have ended, within milliseconds.
void Interposer::noteAbort(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(abortMutex_);
  if (std::find(aborted_.begin(), aborted_.end(), comm) == aborted_.end()) aborted_.push_back(comm);
}

void Interposer::clearAbort(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(abortMutex_);
  std::erase(aborted_, comm);
}

ncclResult_t Interposer::commAbort(ncclComm_t comm) {
  SYMMEM_TRACE(kLogInit, "abort comm %p", static_cast<void*>(comm));
  noteAbort(comm);  // a setup waiting in the agreement ends now
  if (std::shared_ptr<CommState> state = find(comm); state && state->symmetric) state->symmetric->abort();
  const ncclResult_t r = nccl_.commAbort(comm);
  forget(comm, /*abort=*/true);
  clearAbort(comm);
  return r;
}

ncclResult_t Interposer::commRevoke(ncclComm_t comm, int flags) {
  noteAbort(comm);
  if (std::shared_ptr<CommState> state = find(comm); state && state->symmetric) state->symmetric->abort();
  const ncclResult_t r = nccl_.commRevoke ? nccl_.commRevoke(comm, flags) : ncclInvalidUsage;
  forget(comm, /*abort=*/true);
  clearAbort(comm);
  return r;
}

ncclResult_t Interposer::commGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  SYMMEM_TRACE(kLogColl, "async error query, comm %p", static_cast<void*>(comm));
  const ncclResult_t r = nccl_.commGetAsyncError(comm, asyncError);
  if (r != ncclSuccess || asyncError == nullptr || *asyncError != ncclSuccess) return r;
  std::shared_ptr<CommState> state = find(comm);
  if (state && state->symmetric && state->symmetric->deviceStatus() == kernels::Status::PeerTimeout) {
    warnTimeoutOnce(comm, *state);
    *asyncError = ncclSystemError;
  }
  return r;
}

}  // namespace symmem

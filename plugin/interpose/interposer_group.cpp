// SPDX-License-Identifier: Apache-2.0
// ncclGroupStart/End as the interposer sees them (the rules and why they keep NCCL's group semantics:
// docs/transparent-use.md, "Groups").
//
// Inside a group NCCL launches nothing until the outermost ncclGroupEnd, and one thread may drive
// several ranks there (ncclCommInitAll, nccl-tests -g N). So:
//   - an all-reduce the table puts on the symmetric path is held, not launched;
//   - everything else goes into NCCL's group as it would have;
//   - the outermost ncclGroupEnd launches the held all-reduces in the order they were issued, each on
//     its own stream, and only then ends NCCL's group: on every rank and every stream the group's
//     symmetric kernels come before NCCL's part of it, whatever NCCL does with its part (launch it
//     at once, or later from its own thread on a non-blocking communicator);
//   - a communicator that has no symmetric state yet cannot set up inside a group (setup's exchange is
//     an NCCL collective, which the group would swallow): its all-reduces in that group go to NCCL,
//     and it sets up right after NCCL's ncclGroupEnd, together with every other communicator the
//     group met for the first time, one thread each. Every rank issues the same group, so every rank
//     sets up at the same point.
#include <algorithm>
#include <array>
#include <exception>
#include <thread>

#include "core/log.h"
#include "plugin/interpose/interposer.h"

namespace symmem {

struct Interposer::HeldAllReduce {
  AllReduceCall call;
  std::shared_ptr<CommState> state;
  kernels::KernelChoice kernel;
};

// This thread's group, as NCCL keeps its own: per thread, and per NCCL copy (two copies in one process
// keep two sets of groups). What the outermost group end has to do is dropped with a thread that exits
// inside a group (its NCCL group is lost with it as well).
struct Interposer::ThreadGroup {
  int depth = 0;
  std::vector<std::pair<ncclComm_t, cudaStream_t>> setups;  // first sight, in issue order
  bool setupsLost = false;                                  // more first sights in one group than room was made for
  std::vector<HeldAllReduce> held;
};

namespace {
constexpr size_t kSetupsPerGroup = 1024;
}  // namespace

Interposer::ThreadGroup& Interposer::group() const {
  thread_local std::array<ThreadGroup, kMaxNcclCopies> groups;
  return groups[static_cast<size_t>(copy_)];
}

bool Interposer::inGroup() const { return group().depth > 0; }

ncclResult_t Interposer::hold(const AllReduceCall& c) {
  ThreadGroup& g = group();
  std::shared_ptr<CommState> state = find(c.comm);
  if (state == nullptr) {
    // First sight of this communicator: NCCL takes this call, setup follows the group's end.
    // Captured: no setup (the same on every rank). A probe that fails still sets up, saying no.
    const std::optional<bool> capturing = captureState(c.stream);
    if (!(capturing && *capturing) &&
        std::none_of(g.setups.begin(), g.setups.end(), [&](const auto& s) { return s.first == c.comm; })) {
      // Room was made at the group's start: a setup is never lost to a failed allocation here, which
      // would leave this rank out of an agreement its peers wait in.
      if (g.setups.size() < g.setups.capacity())
        g.setups.emplace_back(c.comm, c.stream);
      else
        g.setupsLost = true;
    }
    countCall(c, nullptr, stats::Route::NcclBeforeSetup);
    return forward(c);
  }
  const std::optional<kernels::KernelChoice> kernel = kernelFor(c, state.get());
  if (!kernel) return forward(c);
  try {
    g.held.push_back({c, std::move(state), *kernel});
  } catch (const std::exception&) {
    return forward(c);  // the group is still open: NCCL takes it
  }
  SYMMEM_TRACE(kLogColl, "allreduce %zu elements on comm %p: held for the group's end", c.count,
               static_cast<void*>(c.comm));
  return ncclSuccess;
}

ncclResult_t Interposer::groupStart() {
  ThreadGroup& g = group();
  SYMMEM_TRACE(kLogColl, "group start (depth %d)", g.depth);
  if (g.depth == 0 && g.setups.capacity() < kSetupsPerGroup) {
    try {
      g.setups.reserve(kSetupsPerGroup);
    } catch (const std::exception&) {
      // No room: first sights in this group go unrecorded (said at its end), never half-recorded.
    }
  }
  const ncclResult_t r = nccl_.groupStart();
  if (r == ncclSuccess) ++g.depth;
  return r;
}

ncclResult_t Interposer::groupEnd() {
  ThreadGroup& g = group();
  SYMMEM_TRACE(kLogColl, "group end (depth %d)", g.depth);
  if (g.depth == 0) return nccl_.groupEnd();  // not in a group: NCCL says what that is
  if (g.depth > 1) {
    --g.depth;
    return nccl_.groupEnd();
  }
  return endOutermostGroup();
}

ncclResult_t Interposer::endOutermostGroup() {
  ThreadGroup& g = group();
  // From here on nothing throws out of this function: the held calls are taken off the group, and a
  // second end (the entry point handing the call to NCCL) would end NCCL's group twice.
  PointOfNoReturn::pass();
  g.depth = 0;
  std::vector<HeldAllReduce> held = std::move(g.held);
  g.held.clear();
  std::vector<std::pair<ncclComm_t, cudaStream_t>> setups;
  setups.swap(g.setups);
  g.setups.clear();
  if (g.setupsLost) {
    g.setupsLost = false;
    try {
      SYMMEM_WARN(
          "a group met more than %zu communicators for the first time: the rest set up at a later group, "
          "and their peers wait for them there",
          kSetupsPerGroup);
    } catch (...) {
    }
  }

  // The held calls first, in issue order. A call the kernels cannot take still joins NCCL's group,
  // which is open until the line after the loop. Every held call is launched whatever an earlier one
  // returned, or threw: its peers' kernels are launched too, and wait for it.
  ncclResult_t ours = ncclSuccess;
  for (HeldAllReduce& h : held) {
    ncclResult_t r = ncclInternalError;
    try {
      r = launch(h.call, *h.state, h.kernel);
    } catch (const std::exception& e) {
      r = failedPastPointOfNoReturn(h.call, e.what());
    } catch (...) {
      r = failedPastPointOfNoReturn(h.call, "unknown exception");
    }
    if (r != ncclSuccess && ours == ncclSuccess) ours = r;
  }
  held.clear();                                  // the states' last references may go before NCCL's group end runs
  const ncclResult_t theirs = nccl_.groupEnd();  // exactly once, whatever happened above
  // Setup posts NCCL collectives of its own: only now, with no group open on this thread.
  if (!setups.empty()) {
    try {
      setUpTogether(setups);
    } catch (...) {
      // Each setup catches its own failures; this is the bookkeeping around them failing.
      try {
        SYMMEM_WARN(
            "setting up the communicators a group met for the first time failed: some may not have reached "
            "their setup, where their peers wait");
      } catch (...) {
      }
      if (ours == ncclSuccess) ours = ncclInternalError;
    }
  }
  // NCCL's own error first (its part of the group may not have been enqueued), then the symmetric
  // path's, then NCCL's ncclSuccess or ncclInProgress.
  if (theirs != ncclSuccess && theirs != ncclInProgress) return theirs;
  return ours != ncclSuccess ? ours : theirs;
}

ncclResult_t Interposer::groupSimulateEnd(ncclSimInfo_t* simInfo) {
  ThreadGroup& g = group();
  if (!nccl_.groupSimulateEnd) return ncclInvalidUsage;
  if (g.depth > 1)
    --g.depth;
  else if (g.depth == 1) {
    g.depth = 0;
    // NCCL estimates the group as issued: the held calls join it (nothing runs in a simulation), and
    // the setups wait for a group that does run.
    std::vector<HeldAllReduce> held = std::move(g.held);
    g.held.clear();
    g.setups.clear();
    for (const HeldAllReduce& h : held) forward(h.call);
  }
  return nccl_.groupSimulateEnd(simInfo);
}

void Interposer::setUpTogether(const std::vector<std::pair<ncclComm_t, cudaStream_t>>& comms) {
  // By GPU, in issue order: each GPU's setups run one after the other on one thread (every process
  // then posts that GPU's exchanges in the same order, as NCCL requires of collectives sharing a
  // device); different GPUs side by side, since one thread may drive all of a communicator's ranks.
  std::vector<std::pair<int, std::vector<std::pair<ncclComm_t, cudaStream_t>>>> byDevice;
  int unknownDevice = -2;
  for (const auto& c : comms) {
    if (find(c.first) != nullptr) continue;
    int device = -1;
    if (nccl_.commCuDevice(c.first, &device) != ncclSuccess) device = unknownDevice--;  // a group of its own
    auto it = std::find_if(byDevice.begin(), byDevice.end(), [&](const auto& g) { return g.first == device; });
    if (it == byDevice.end()) {
      byDevice.push_back({device, {}});
      it = byDevice.end() - 1;
    }
    it->second.push_back(c);
  }
  if (byDevice.empty()) return;
  auto setUpInOrder = [this](const std::vector<std::pair<ncclComm_t, cudaStream_t>>& group,
                             const char* cannotTakePart) {
    for (const auto& c : group) {
      try {
        setUp(c.first, c.second, cannotTakePart);
      } catch (const std::exception& e) {
        SYMMEM_WARN("setup of comm %p failed: %s", static_cast<void*>(c.first), e.what());
      }
    }
  };
  if (byDevice.size() == 1) {
    setUpInOrder(byDevice[0].second, nullptr);
    return;
  }
  SYMMEM_INFO(kLogInit, "setting up the communicators of one group on %zu GPUs together, one thread per GPU",
              byDevice.size());
  std::vector<std::thread> threads;
  std::vector<size_t> notStarted;
  for (size_t i = 1; i < byDevice.size(); ++i) {
    try {
      threads.emplace_back(setUpInOrder, std::cref(byDevice[i].second), nullptr);
    } catch (const std::exception&) {
      notStarted.push_back(i);
    }
  }
  // A GPU whose thread could not start still reaches its communicators' agreements, saying no: that
  // never waits for anything (its own "no" decides), so it runs first, here, before the wait below.
  for (size_t i : notStarted) {
    SYMMEM_WARN("no thread for the setup of %zu communicator(s) on GPU %d: they stay on NCCL, with their peers",
                byDevice[i].second.size(), byDevice[i].first);
    setUpInOrder(byDevice[i].second, "no thread could be started for its setup");
  }
  setUpInOrder(byDevice[0].second, nullptr);
  for (std::thread& t : threads) t.join();
}

}  // namespace symmem

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
#include <exception>
#include <thread>

#include "core/log.h"
#include "plugin/interposer.h"

namespace symmem {

struct Interposer::HeldAllReduce {
  AllReduceCall call;
  std::shared_ptr<CommState> state;
  kernels::KernelChoice kernel;
};

namespace {

// This thread's group, as NCCL keeps its own: per thread. What the outermost group end has to do is
// dropped with a thread that exits inside a group (its NCCL group is lost with it as well).
thread_local int tDepth = 0;
thread_local std::vector<std::pair<ncclComm_t, cudaStream_t>> tSetups;  // first sight, in issue order

}  // namespace

std::vector<Interposer::HeldAllReduce>& Interposer::heldCalls() {
  thread_local std::vector<HeldAllReduce> held;
  return held;
}

bool Interposer::inGroup() { return tDepth > 0; }

ncclResult_t Interposer::hold(const AllReduceCall& c) {
  std::shared_ptr<CommState> state = find(c.comm);
  if (state == nullptr) {
    // First sight of this communicator: NCCL takes this call, setup follows the group's end.
    if (maySetUp(c.stream) &&
        std::none_of(tSetups.begin(), tSetups.end(), [&](const auto& s) { return s.first == c.comm; })) {
      try {
        tSetups.emplace_back(c.comm, c.stream);
      } catch (const std::exception&) {
        // Without memory the setup is left for a later group; this call goes to NCCL either way.
      }
    }
    return forward(c);
  }
  if (!state->ready) return forward(c);
  const std::optional<kernels::KernelChoice> kernel = symmetricChoice(c, *state);
  if (!kernel) return forward(c);
  try {
    heldCalls().push_back({c, std::move(state), *kernel});
  } catch (const std::exception&) {
    return forward(c);  // the group is still open: NCCL takes it
  }
  SYMMEM_TRACE(kLogColl, "allreduce %zu elements on comm %p: held for the group's end", c.count,
               static_cast<void*>(c.comm));
  return ncclSuccess;
}

ncclResult_t Interposer::groupStart() {
  SYMMEM_TRACE(kLogColl, "group start (depth %d)", tDepth);
  const ncclResult_t r = nccl_.groupStart();
  if (r == ncclSuccess) ++tDepth;
  return r;
}

ncclResult_t Interposer::groupEnd() {
  SYMMEM_TRACE(kLogColl, "group end (depth %d)", tDepth);
  if (tDepth == 0) return nccl_.groupEnd();  // not in a group: NCCL says what that is
  if (tDepth > 1) {
    --tDepth;
    return nccl_.groupEnd();
  }
  return endOutermostGroup();
}

ncclResult_t Interposer::endOutermostGroup() {
  tDepth = 0;
  std::vector<HeldAllReduce> held = std::move(heldCalls());
  heldCalls().clear();
  std::vector<std::pair<ncclComm_t, cudaStream_t>> setups = std::move(tSetups);
  tSetups.clear();

  // The held calls first, in issue order. A call the kernels cannot take still joins NCCL's group,
  // which is open until the line after the loop. Every held call is launched whatever an earlier one
  // returned: its peers' kernels are launched too, and wait for it.
  ncclResult_t ours = ncclSuccess;
  for (HeldAllReduce& h : held) {
    const ncclResult_t r = launch(h.call, *h.state, h.kernel);
    if (r != ncclSuccess && ours == ncclSuccess) ours = r;
  }
  held.clear();  // the states' last references may go before NCCL's group end runs
  const ncclResult_t theirs = nccl_.groupEnd();
  // Setup posts NCCL collectives of its own: only now, with no group open on this thread.
  if (!setups.empty()) setUpTogether(setups);
  // NCCL's own error first (its part of the group may not have been enqueued), then the symmetric
  // path's, then NCCL's ncclSuccess or ncclInProgress.
  if (theirs != ncclSuccess && theirs != ncclInProgress) return theirs;
  return ours != ncclSuccess ? ours : theirs;
}

ncclResult_t Interposer::groupSimulateEnd(ncclSimInfo_t* simInfo) {
  if (!nccl_.groupSimulateEnd) return ncclInvalidUsage;
  if (tDepth > 1)
    --tDepth;
  else if (tDepth == 1) {
    tDepth = 0;
    // NCCL estimates the group as issued: the held calls join it (nothing runs in a simulation), and
    // the setups wait for a group that does run.
    std::vector<HeldAllReduce> held = std::move(heldCalls());
    heldCalls().clear();
    tSetups.clear();
    for (const HeldAllReduce& h : held) forward(h.call);
  }
  return nccl_.groupSimulateEnd(simInfo);
}

void Interposer::setUpTogether(const std::vector<std::pair<ncclComm_t, cudaStream_t>>& comms) {
  std::vector<std::pair<ncclComm_t, cudaStream_t>> todo;
  for (const auto& c : comms)
    if (find(c.first) == nullptr) todo.push_back(c);
  if (todo.empty()) return;
  auto setUpOne = [this](const std::pair<ncclComm_t, cudaStream_t>& c) {
    try {
      setUp(c.first, c.second);
    } catch (const std::exception& e) {
      SYMMEM_WARN("setup of comm %p failed: %s", static_cast<void*>(c.first), e.what());
    }
  };
  if (todo.size() == 1) {
    setUpOne(todo[0]);
    return;
  }
  // One thread drives these ranks: each setup waits for its peers' exchanges, some of them posted by
  // another of these setups, so they run side by side.
  SYMMEM_INFO(kLogInit, "setting up %zu communicators of one group together, one thread each", todo.size());
  std::vector<std::thread> threads;
  std::vector<size_t> notStarted;
  for (size_t i = 1; i < todo.size(); ++i) {
    try {
      threads.emplace_back(setUpOne, todo[i]);
    } catch (const std::exception&) {
      notStarted.push_back(i);
    }
  }
  setUpOne(todo[0]);
  for (std::thread& t : threads) t.join();
  for (size_t i : notStarted) {
    SYMMEM_WARN("no thread for the setup of comm %p: it runs after the others (ncclCommAbort ends its wait)",
                static_cast<void*>(todo[i].first));
    setUpOne(todo[i]);
  }
}

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include "plugin/comm_setup.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "core/log.h"
#include "kernels/scoped_device.h"
#include "plugin/interposer.h"
#include "plugin/record_gather.h"
#include "plugin/setup_vote.h"
#include "topology/discover.h"

namespace symmem {

namespace {

static_assert(sizeof(RankFacts) <= NcclRecordGather::kRecordBytes);

RankFacts factsFor(const Topology& topology, int device) {
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
  return rankFactsFor(topology, busId, device, cc, thisHostHash());
}

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
  const kernels::ScopedDevice scope(device);  // the caller's device comes back, whatever setup did
  // Setup synchronises its own stream only; keep a capture elsewhere in this thread legal.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);

  const int64_t timeoutMs = process.timeoutMs;
  NcclRecordGather gather(nccl.allGather, comm, nRanks, nccl.commGetAsyncError);
  auto finish = [&](std::string why) {
    state->why = std::move(why);
    cudaThreadExchangeStreamCaptureMode(&mode);
    return std::move(state);
  };
  if (!gather.ready()) return finish("setup exchange buffers could not be allocated");

  // Exchange 1: the vote, on every rank whatever its settings (setup_vote.h).
  const VoteOutcome vote =
      runSetupVote(process, nRanks, [&](const void* s, void* r, size_t b) { return gather(s, r, b); });
  if (!vote.go) return finish(vote.why);

  // Exchange 2: topology facts. agreeOn() is pure over the gathered array: the same answer everywhere.
  std::vector<RankFacts> gathered(nRanks);
  static const Topology kUnknown;  // a context without a topology (tests): every pair unknown
  const RankFacts mine = factsFor(process.topology ? *process.topology : kUnknown, device);
  if (!gather(&mine, gathered.data(), sizeof(RankFacts))) return finish("setup exchange failed");
  const CommunicatorTopology agreed = agreeOn(gathered);
  if (!agreed.symmetricOk) return finish(agreed.reason);

  // Every rank has the same table (the vote compared it) and the same agreed facts: the same entry.
  state->facts = commFactsFrom(agreed, nRanks);
  const TableLookup found = lookupWithFallbackWarning(*process.table, state->facts.cc, state->facts.link, nRanks);
  state->entry = found.entry;
  uint64_t oneShot = found.entry ? found.entry->oneShotMaxBytes : 0;
  uint64_t twoShot = found.entry ? found.entry->twoShotMaxBytes : 0;
  if (process.policy.force == ForcedPath::OneShot || process.policy.force == ForcedPath::TwoShot) {
    // Forced paths (testing) need buffers even where the table has none.
    constexpr uint64_t kForcedCapacity = 4ull << 20;
    oneShot = std::max<uint64_t>(oneShot, kForcedCapacity);
    twoShot = std::max<uint64_t>(twoShot, kForcedCapacity);
  }
  if (oneShot == 0 && twoShot == 0) return finish("the table keeps every size on NCCL for these GPUs");

  kernels::SymmetricConfig config;
  config.rank = rank;
  config.nRanks = nRanks;
  config.device = device;
  config.oneShotMaxBytes = oneShot;
  config.twoShotMaxBytes = twoShot;
  config.timeoutMs = timeoutMs;
  config.p2pCheck = process.p2pCheck;
  std::string whyNot;
  state->symmetric = kernels::SymmetricComm::create(
      config, [&](const void* s, void* r, size_t b) { return gather(s, r, b); }, &whyNot);
  if (!state->symmetric) return finish("symmetric buffers not set up: " + whyNot);
  state->facts.symmetricCapacityBytes = std::max(oneShot, twoShot);
  state->ready = true;
  return finish("ready");
}

}  // namespace symmem

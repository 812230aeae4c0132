// SPDX-License-Identifier: Apache-2.0
#include "plugin/interpose/comm_setup.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "core/log.h"
#include "kernels/scoped_device.h"
#include "plugin/interpose/comm_tickets.h"
#include "plugin/interpose/interposer.h"
#include "plugin/interpose/rendezvous.h"
#include "plugin/interpose/setup_vote.h"
#include "plugin/nccl/record_gather.h"
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

CommFacts commFactsFrom(const CommunicatorTopology& agreed, int nRanks, HalvesMode mode) {
  CommFacts f;
  f.nRanks = nRanks;
  f.nNodes = agreed.hosts;
  f.cc = agreed.capabilitiesEqual ? agreed.capability : ComputeCapability{};
  f.link = agreed.link;
  f.allPairsP2p = agreed.allPairsP2p;
  // The halves travel as plain data; a communicator too large for the array keeps the flat kernels.
  const Halves& h = agreed.halves;
  if (mode == HalvesMode::Auto && h.ok && h.ranks() == nRanks && nRanks <= kMaxHalvesRanks) {
    f.halves = 2;
    f.middle = middleLinkClass(h.level);
    for (int r = 0; r < nRanks; ++r) f.halfOf[r] = static_cast<uint8_t>(h.halfOf[r]);
  }
  if (mode == HalvesMode::Split && nRanks >= 4 && nRanks % 2 == 0 && nRanks <= kMaxHalvesRanks) {
    f.halves = 2;
    f.middle = f.link;  // declared: the middle is no slower than the communicator's worst link
    for (int r = 0; r < nRanks; ++r) f.halfOf[r] = static_cast<uint8_t>(r >= nRanks / 2 ? 1 : 0);
  }
  return f;
}

namespace {

// The exchanges, posted by every rank once the agreement said go (so every rank posts all of them:
// a local failure from here on travels inside the records, never as a skipped exchange).
std::unique_ptr<CommState> runExchanges(const ProcessContext& process, NcclRecordGather& gather, int rank, int nRanks,
                                        int device) {
  auto state = std::make_unique<CommState>();
  state->device = device;
  const kernels::ScopedDevice scope(device);  // the caller's device comes back, whatever setup did
  // Setup synchronises its own stream only; keep a capture elsewhere in this thread legal.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  auto finish = [&](std::string why) {
    state->why = std::move(why);
    cudaThreadExchangeStreamCaptureMode(&mode);
    return std::move(state);
  };

  // Topology facts. agreeOn() is pure over the gathered array: the same answer everywhere. Ranks on one
  // GPU pass only in the testing mode, which the agreement's vote has already found on every rank.
  std::vector<RankFacts> gathered(nRanks);
  static const Topology kUnknown;  // a context without a topology (tests): every pair unknown
  const RankFacts mine = factsFor(process.topology ? *process.topology : kUnknown, device);
  if (!gather(&mine, gathered.data(), sizeof(RankFacts))) return finish("setup exchange failed");
  const CommunicatorTopology agreed =
      agreeOn(gathered, process.sharedGpuTest ? SharedGpu::AllowForTesting : SharedGpu::Refuse);
  if (!agreed.symmetricOk) return finish(agreed.reason);

  // Every rank has the same table (the vote compared it) and the same agreed facts: the same entry.
  state->facts = commFactsFrom(agreed, nRanks, process.halves);
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
  config.timeoutMs = process.timeoutMs;
  config.p2pCheck = process.p2pCheck;
  // The kernels' halves: those of the facts, where the halves variant can run (4 to 8 ranks).
  if (state->facts.halves == 2 && nRanks >= 4 && nRanks <= static_cast<int>(config.halfOf.size())) {
    config.halves = true;
    for (int r = 0; r < nRanks; ++r) config.halfOf[r] = state->facts.halfOf[r];
  }
  std::string whyNot;
  state->symmetric = kernels::SymmetricComm::create(
      config, [&](const void* s, void* r, size_t b) { return gather(s, r, b); }, &whyNot);
  if (!state->symmetric) return finish("symmetric buffers not set up: " + whyNot);
  state->facts.symmetricCapacityBytes = std::max(oneShot, twoShot);
  state->ready = true;
  return finish("ready");
}

}  // namespace

SetupSteps symmetricSetupSteps(const RealNccl& nccl, const ProcessContext& process, int copy) {
  SetupSteps steps;
  steps.prepare = [&nccl](ncclComm_t comm, int nRanks, int device, std::string* why) -> std::shared_ptr<void> {
    const kernels::ScopedDevice scope(device);
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    auto gather = std::make_shared<NcclRecordGather>(nccl.allGather, comm, nRanks, nccl.commGetAsyncError);
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (gather->ready()) return gather;
    *why = "its setup exchange buffers could not be allocated";
    return nullptr;
  };
  steps.agree = [&process, copy](ncclComm_t comm, const Arrival& mine, const std::function<bool()>& aborted) {
    return agreeBeforeExchanges(process, comm, mine, aborted, copy);
  };
  steps.setup = [&process](ncclComm_t, int rank, int nRanks, int device, void* prepared) {
    return runExchanges(process, *static_cast<NcclRecordGather*>(prepared), rank, nRanks, device);
  };
  return steps;
}

Agreement agreeBeforeExchanges(const ProcessContext& process, ncclComm_t comm, const Arrival& mine,
                               const std::function<bool()>& aborted, int copy) {
  const std::shared_ptr<CommTicket> ticket = ticketFor(comm, copy);
  // Without a ticket this rank cannot reach the agreement: its peers see no arrival and stay on NCCL
  // (at once when NCCL's view is one node and this rank never declared; else when their wait ends).
  if (!ticket) return {false, "NCCL did not load the plugin as its tuner for this communicator"};
  if (!ticket->rendezvous) return {false, ticket->whyNot};
  Rendezvous& agreement = *ticket->rendezvous;
  const bool acrossNodes = ticket->nNodes != 1 && !process.sharedGpuTest;
  // A ticket of another size is another communicator's: arriving there would speak for it. This one
  // stays on NCCL, and its peers, finding no arrival from this rank, with it when their wait ends.
  if (mine.takesPart && mine.nRanks != ticket->nRanks)
    return {false, "NCCL's rank count (" + std::to_string(mine.nRanks) + ") differs from its tuner's (" +
                       std::to_string(ticket->nRanks) + ")"};
  agreement.arrive(mine.rank, voteOf(process), mine.takesPart, mine.why);
  try {
    const bool oneNode = ticket->nNodes == 1;
    const Tally t = agreement.await(process.timeoutMs, oneNode && ticket->idFromNccl, aborted,
                                    oneNode && !ticket->idFromNccl ? kLateDeclarationsDueMs : 0);
    return {t.verdict == Verdict::Go, t.why, acrossNodes};
  } catch (...) {
    // This rank has arrived: it must read the verdict in force, and says no if none is yet. Nothing
    // here allocates.
    agreement.refuse({});
    return {agreement.verdictNow() == Verdict::Go, {}};
  }
}

}  // namespace symmem

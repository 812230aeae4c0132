// SPDX-License-Identifier: Apache-2.0
#pragma once
// The setup of one communicator's symmetric path (symmetricSetupSteps, declared in plugin/interpose/interposer.h):
//   0. prepare: the exchange buffers, before anything is posted (a rank without them says no below);
//   1. the agreement (plugin/interpose/rendezvous.h), host-local and posted nowhere: every rank arrives with its
//      vote (plugin/interpose/setup_vote.h) and whether it can take part, and reads one verdict; on "no" every
//      rank stays on NCCL and nothing is ever posted on the communicator;
//   2. every rank's topology facts (topology/agreement.h), through pncclAllGather on a private stream;
//      every rank runs the same pure agreeOn() over the same gathered array;
//   3. inside kernels::SymmetricComm::create: buffer handles and the P2P pattern check.
// From step 2 on every rank posts every exchange whatever happened locally.
#include <functional>

#include "core/decision.h"
#include "plugin/interpose/interposer.h"
#include "topology/agreement.h"

namespace symmem {

// The decision's communicator facts from the agreement, the halves included as SYMMEM_HALVES says (auto:
// the agreed topology's; off: none; split: ranks 0..n/2-1 and n/2..n-1 for an even n >= 4). Capacity
// is filled in once buffers exist.
CommFacts commFactsFrom(const CommunicatorTopology& agreed, int nRanks, HalvesMode mode = HalvesMode::Auto);

// Step 1 for `comm`, a communicator of NCCL copy `copy`: this rank's arrival, then the verdict every
// rank reads.
Agreement agreeBeforeExchanges(const ProcessContext& process, ncclComm_t comm, const Arrival& mine,
                               const std::function<bool()>& aborted, int copy = 0);

}  // namespace symmem

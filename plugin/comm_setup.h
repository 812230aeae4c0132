// SPDX-License-Identifier: Apache-2.0
#pragma once
// The collective setup of one communicator's symmetric path (setUpSymmetricComm, declared in
// plugin/interposer.h). Exchanges on the communicator itself, through pncclAllGather on a private
// stream, posted by every rank in the same order whatever happened locally:
//   1. the vote (plugin/setup_vote.h): every rank with the plugin takes part whatever its settings;
//      ranks whose settings or tables differ, or that all have the path off, stop here, together;
//   2. every rank's topology facts (topology/agreement.h); every rank runs the same pure agreeOn()
//      over the same gathered array, so every rank reaches the same answer;
//   3. inside kernels::SymmetricComm::create: buffer handles and the P2P pattern check.
// Any rank that cannot take part makes every rank stay on NCCL.
#include "core/decision.h"
#include "topology/agreement.h"

namespace symmem {

// The decision's communicator facts from the agreement (capacity is filled in once buffers exist).
CommFacts commFactsFrom(const CommunicatorTopology& agreed, int nRanks);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// A communicator's name as every rank computes it from the call that made it, with NCCL's own
// formula (NCCL 2.26 and later; docs/communicator-identity.md): from the 128-byte unique id of
// ncclCommInitRank / InitRankConfig / InitAll / InitRankScalable (its first id), and for a child
// of ncclCommSplit / ncclCommShrink from its parent's name, the parent's child count and the color.
// Where NCCL gives its tuner the communicator's id (tuner v5, NCCL 2.28.3 and later) the two are the
// same number, which is how the plugin checks that it knows the communicator it was handed. Before
// 2.26 NCCL hashed otherwise; the name is then this plugin's alone, the same on every rank all the
// same. Pure: no NCCL, no state.
#include <cstddef>
#include <cstdint>

namespace symmem {

inline constexpr size_t kNcclUniqueIdBytes = 128;

// NCCL's commHash of a communicator made from `uniqueId` (kNcclUniqueIdBytes bytes).
uint64_t commIdentityFromUniqueId(const void* uniqueId);

// NCCL's commHash of a split or shrink child: `childCount` is the parent's count of children made
// so far, this one included (a split counts on every rank of the parent, NOCOLOR ones too; a grow
// counts as well), and 0 for a shrink; `color` the split's (0 for a shrink).
uint64_t childCommIdentity(uint64_t parentIdentity, int childCount, int color);

}  // namespace symmem

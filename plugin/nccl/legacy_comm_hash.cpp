// SPDX-License-Identifier: Apache-2.0
#include "plugin/nccl/legacy_comm_hash.h"

#include <atomic>
#include <cstring>

#include "core/log.h"

namespace symmem {

namespace {

// offsetof(struct ncclComm, X) - offsetof(struct ncclComm, tunerContext), compiled from
// src/include/comm.h at the tags v2.27.3-1, v2.27.5-1, v2.27.6-1 and v2.27.7-1 (identical in all four).
constexpr LegacyCommLayout kLayouts[] = {
    {22703, 22707, -8336, -8328, -8324, -8144},
};

std::atomic<bool> gGivenUp{false};

template <typename T>
T readAt(const void* slot, ptrdiff_t offset) {
  T value;
  std::memcpy(&value, static_cast<const char*>(slot) + offset, sizeof(T));
  return value;
}

}  // namespace

const LegacyCommLayout* legacyCommLayout(int versionCode) {
  for (const LegacyCommLayout& l : kLayouts)
    if (versionCode >= l.firstVersion && versionCode <= l.lastVersion) return &l;
  return nullptr;
}

std::optional<uint64_t> legacyCommHash(const void* contextSlot, int versionCode, size_t nRanks, size_t nNodes,
                                       std::string* whyNot) {
  const LegacyCommLayout* l = legacyCommLayout(versionCode);
  if (l == nullptr || contextSlot == nullptr) {
    *whyNot = "no communicator layout is known for this NCCL";
    return std::nullopt;
  }
  if (gGivenUp.load(std::memory_order_acquire)) {
    *whyNot = "reading NCCL's communicator id was given up (a read disagreed with a creation call)";
    return std::nullopt;
  }
  const int rank = readAt<int>(contextSlot, l->rank);
  const int ranks = readAt<int>(contextSlot, l->nRanks);
  const int nodes = readAt<int>(contextSlot, l->nNodes);
  if (ranks <= 0 || static_cast<size_t>(ranks) != nRanks || rank < 0 || rank >= ranks || nodes <= 0 ||
      static_cast<size_t>(nodes) != nNodes) {
    *whyNot = "NCCL's communicator struct does not hold what its tuner was handed (rank " + std::to_string(rank) +
              " of " + std::to_string(ranks) + ", " + std::to_string(nodes) + " node(s), against " +
              std::to_string(nRanks) + " rank(s) and " + std::to_string(nNodes) +
              " node(s)): this build's layout is not the one measured";
    return std::nullopt;
  }
  const auto hash = readAt<uint64_t>(contextSlot, l->commHash);
  if (hash == 0) {
    *whyNot = "NCCL's communicator id reads as 0";
    return std::nullopt;
  }
  return hash;
}

void crossCheckLegacyCommHash(uint64_t read, uint64_t named) {
  if (read == named) {
    SYMMEM_INFO(kLogInit,
                "tuner: NCCL's communicator id 0x%llx, read from its struct, is the one its creation call gives",
                static_cast<unsigned long long>(read));
    return;
  }
  if (!gGivenUp.exchange(true, std::memory_order_acq_rel))
    SYMMEM_WARN(
        "tuner: NCCL's communicator id read from its struct (0x%llx) is not the one its creation call gives (0x%llx): "
        "this NCCL's layout is not the one measured, and such reads are given up for this process (a communicator "
        "made before the plugin loaded then stays on NCCL)",
        static_cast<unsigned long long>(read), static_cast<unsigned long long>(named));
}

bool legacyCommHashGivenUp() { return gGivenUp.load(std::memory_order_acquire); }
void resetLegacyCommHashForTests() { gGivenUp.store(false, std::memory_order_release); }

}  // namespace symmem

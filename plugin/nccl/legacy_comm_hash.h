// SPDX-License-Identifier: Apache-2.0
#pragma once
// NCCL 2.27 hands its tuner's init no communicator id, and a communicator made before the code hooks
// were in (the process's first: the plugin is loaded inside its creation) has no creation record to
// name it either. For that one case the plugin reads the id NCCL computed for the communicator
// (`comm->commHash`: the value NCCL 2.28 and later hand their tuner as its id, and which the creation
// call's arguments give on every version) from NCCL's communicator struct, at the distance before the
// tuner's context slot that the 2.27 sources give. A private layout: read only on the releases whose
// sources were measured, only where the fields beside it hold what the tuner's init was handed
// (the communicator's rank count, a rank below it, its node count), and given up for the process as
// soon as one read disagrees with a creation record (docs/transparent-use.md, "Private reads").
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace symmem {

// Where the fields lie before the tuner's context slot (&comm->tunerContext), in bytes.
struct LegacyCommLayout {
  int firstVersion = 0, lastVersion = 0;  // NCCL_VERSION_CODE range the sources were measured at
  ptrdiff_t commHash = 0, rank = 0, nRanks = 0, nNodes = 0;
};

// The layout for NCCL `versionCode`, or null where none was measured.
const LegacyCommLayout* legacyCommLayout(int versionCode);

// The communicator's id read from the struct around `contextSlot`, or nullopt with why: no layout for
// this version, fields that do not hold what the init was handed, an id of 0, or reads given up.
std::optional<uint64_t> legacyCommHash(const void* contextSlot, int versionCode, size_t nRanks, size_t nNodes,
                                       std::string* whyNot);

// A read agreed with (or contradicted) the name a creation record gave the same communicator. A
// contradiction gives the reads up for the rest of the process, said once.
void crossCheckLegacyCommHash(uint64_t read, uint64_t named);

// Whether reads are given up (tests), and back to the start (tests).
bool legacyCommHashGivenUp();
void resetLegacyCommHashForTests();

}  // namespace symmem

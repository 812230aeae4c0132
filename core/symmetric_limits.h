// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the symmetric path can take, as one rule for every layer: the table file and the decision
// table refuse entries beyond it, symmem-info shows it, and the kernels' setup
// (kernels/symmetric_setup.cpp) refuses the same configurations. The numbers are those of
// kernels/symmetric_layout.h (kMaxRanks, kRounds, the slot layout); a unit test holds the two equal,
// as core may not include kernels/.
#include <cstdint>
#include <string>

namespace symmem {

// Both kernels, one-shot and two-shot, take at most this many ranks (kernels::kMaxRanks).
inline constexpr int kSymmetricMaxRanks = 8;
// The largest one-shot or two-shot limit the setup accepts.
inline constexpr uint64_t kSymmetricMaxLimitBytes = 1ull << 30;
// The most GPU memory one communicator's symmetric buffer may take on each GPU. Fixed, not a
// setting: the buffer is taken from the memory the application thinks it has, on every GPU of the
// communicator, for its whole life. The built-in table's largest entry needs under 64 MiB.
inline constexpr uint64_t kSymmetricBufferCapBytes = 2ull << 30;

// Bytes of the symmetric buffer every GPU of an nRanks communicator allocates for these limits:
// three rotating rounds of nRanks one-shot slots (one message each, so 3 x nRanks x oneShotMaxBytes)
// and of 2 x nRanks two-shot chunk slots (about 6 x twoShotMaxBytes), plus the setup check areas.
// Equals kernels::makeLayout(...).totalBytes.
uint64_t symmetricBufferBytes(int nRanks, uint64_t oneShotMaxBytes, uint64_t twoShotMaxBytes);

// Why the symmetric setup would refuse these limits for a communicator of nRanks ranks, or "" when it
// takes them. nRanks above 8 (the table's 9+ rule) takes only limits of 0. Limits of 0 are fine
// (that path is off); a setup with both at 0 has nothing to set up and is skipped by its caller.
std::string symmetricLimitProblem(int nRanks, uint64_t oneShotMaxBytes, uint64_t twoShotMaxBytes);

// A buffer size for people: "24.0GiB", "6.1MiB", "512B" (one decimal, binary units).
std::string approximateBytes(uint64_t bytes);

}  // namespace symmem

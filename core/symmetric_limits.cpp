// SPDX-License-Identifier: Apache-2.0
#include "core/symmetric_limits.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "core/table_file.h"

namespace symmem {

namespace {
// kernels/symmetric_layout.h: kRounds, kVecBytes, kSlotAlign, kCheckBytes.
constexpr uint64_t kRounds = 3;
constexpr uint64_t kVecBytes = 16;
constexpr uint64_t kSlotAlign = 128;
constexpr uint64_t kCheckBytes = 4096;

constexpr uint64_t roundUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }
}  // namespace

uint64_t symmetricBufferBytes(int nRanks, uint64_t oneShotMaxBytes, uint64_t twoShotMaxBytes) {
  if (nRanks < 1) return 0;
  const uint64_t n = static_cast<uint64_t>(nRanks);
  const uint64_t oneShotSlot = roundUp(roundUp(oneShotMaxBytes, kVecBytes), kSlotAlign);
  const uint64_t chunk = twoShotMaxBytes == 0 ? 0 : roundUp((twoShotMaxBytes + n - 1) / n, kVecBytes) + kVecBytes;
  const uint64_t chunkSlot = roundUp(chunk, kSlotAlign);
  // The pull variants' flags: 3 regions x n sources x tiles of 8 bytes, a tile being 512 vectors.
  const uint64_t tiles = std::max((oneShotMaxBytes + kVecBytes - 1) / kVecBytes, (chunk + kVecBytes - 1) / kVecBytes);
  const uint64_t flags = roundUp(3 * n * ((tiles + 511) / 512) * 8, kSlotAlign);
  return kRounds * n * oneShotSlot + 2 * kRounds * n * chunkSlot + flags + n * kCheckBytes;
}

std::string symmetricLimitProblem(int nRanks, uint64_t oneShotMaxBytes, uint64_t twoShotMaxBytes) {
  if (oneShotMaxBytes == 0 && twoShotMaxBytes == 0) return {};
  if (nRanks > kSymmetricMaxRanks)
    return "the symmetric kernels take at most " + std::to_string(kSymmetricMaxRanks) +
           " ranks; use oneshot=0 twoshot=0 beyond that";
  for (const auto& [name, bytes] : {std::pair{"oneshot", oneShotMaxBytes}, std::pair{"twoshot", twoShotMaxBytes}})
    if (bytes > kSymmetricMaxLimitBytes)
      return std::string(name) + " " + formatBytes(bytes) + " is above " + formatBytes(kSymmetricMaxLimitBytes) +
             ", the largest limit the symmetric setup accepts";
  const uint64_t buffer = symmetricBufferBytes(nRanks, oneShotMaxBytes, twoShotMaxBytes);
  if (buffer > kSymmetricBufferCapBytes)
    return "needs " + approximateBytes(buffer) + " of symmetric buffer per GPU at " + std::to_string(nRanks) +
           " ranks (3 x ranks x oneshot + about 6 x twoshot), above the " + formatBytes(kSymmetricBufferCapBytes) +
           " cap";
  return {};
}

std::string approximateBytes(uint64_t bytes) {
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + "B";
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) value /= 1024, ++unit;
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%s", value, units[unit]);
  return text;
}

}  // namespace symmem

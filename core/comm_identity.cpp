// SPDX-License-Identifier: Apache-2.0
#include "core/comm_identity.h"

#include <cstring>

namespace symmem {

namespace {

// NCCL's two-word accumulator: every call mixes the words, then adds the input 8 bytes at a time
// (little-endian, the last chunk zero-padded), after folding the length in. Where the input is cut
// into calls changes the result, as in NCCL.
struct Accumulator {
  uint64_t a = 1;
  uint64_t b = 1;

  void eat(const void* bytes, size_t size) {
    const auto* p = static_cast<const unsigned char*>(bytes);
    a ^= size;
    while (size != 0) {
      a += b;
      b ^= a;
      a ^= a >> 31;
      a *= 0x9de62bbc8cef3ce3ull;
      b ^= b >> 32;
      b *= 0x485cd6311b599e79ull;
      const size_t chunk = size < sizeof(uint64_t) ? size : sizeof(uint64_t);
      uint64_t x = 0;
      std::memcpy(&x, p, chunk);  // x86-64 and aarch64 Linux: little-endian, as NCCL reads it
      p += chunk;
      size -= chunk;
      a += x;
    }
  }

  uint64_t digest() const {
    uint64_t h = a;
    h ^= h >> 31;
    h *= 0xbac3bd562846de6bull;
    h += b;
    h ^= h >> 32;
    h *= 0x995a187a14e7b445ull;
    return h;
  }
};

}  // namespace

uint64_t commIdentityFromUniqueId(const void* uniqueId) {
  Accumulator acc;
  acc.eat(uniqueId, kNcclUniqueIdBytes);
  return acc.digest();
}

uint64_t childCommIdentity(uint64_t parentIdentity, int childCount, int color) {
  Accumulator acc;
  acc.eat(&parentIdentity, sizeof(parentIdentity));
  acc.eat(&childCount, sizeof(childCount));
  acc.eat(&color, sizeof(color));
  return acc.digest();
}

}  // namespace symmem

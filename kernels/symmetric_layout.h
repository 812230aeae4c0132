// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where everything lives in a rank's symmetric buffer, and the small rules the kernels and the host
// agree on (slot rotation, two-shot chunk split, padding, sentinel bits, launch shape). Plain
// constexpr functions: the host code, the kernels and the CPU unit tests all call these.
//
// Buffer of one rank (every rank's buffer has the same layout, so an offset means the same place
// in every peer's buffer):
//
//   [one-shot]  kRounds x nRanks slots of oneShotSlotBytes    slot (round, src) receives rank src's input
//   [scatter]   kRounds x nRanks slots of chunkSlotBytes      slot (round, src) receives rank src's copy
//                                                             of this rank's chunk (two-shot phase 1)
//   [gather]    kRounds x nRanks slots of chunkSlotBytes      slot (round, src) receives rank src's
//                                                             reduced chunk (two-shot phase 2)
//   [cross]     halves only (below): kRounds x 2 slots of oneShotSlotBytes, then kRounds x 4 slots of
//               chunkSlotBytes: the partner's partial sums (one-shot, then two-shot)
//   [flags]     3 regions x nRanks x tiles of 8 bytes         pull variants: flag (region, src, tile) is
//                                                             set by rank src once its tile is published
//   [check]     nRanks x kCheckBytes                          setup-time P2P pattern, one area per writer
//
// The pull variants use the slot regions differently: rank r publishes in its OWN buffer, in the slot
// (round, r) of the one-shot region its input, in the scatter slots (round, q) its copy of chunk q
// (for rank q to read), in the gather slot (round, r) its reduced chunk; peers read them over P2P
// once the tile's flag (a round number, so it only grows) has reached their round.
//
// The halves variant (allreduce_halves.cuh) uses the one-shot, scatter and gather slots as the push
// variant does, each rank writing only to the ranks of its own half, and receives its partner's
// partial sums (the reduction of the other half) in the cross slots: a partial is one vector of T
// per vector of the message (part 0), or for 16-bit sums and products, accumulated in fp32, two fp32
// vectors (parts 0 and 1: elements 0-3 and 4-7). One-shot: cross slot (round, part). Two-shot: cross
// slot (round, 2 * half + part) holds the partial of the chunk of the pair's rank in `half`. A
// receiver re-arms each cross packet as soon as it has read it (no round record counts them).
//
// Every slot starts at a multiple of kSlotAlign; every slot holds whole 16-byte vectors.
#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define SYMMEM_HD __host__ __device__
#else
#define SYMMEM_HD
#endif

namespace symmem::kernels {

inline constexpr int kMaxRanks = 8;
inline constexpr int kRounds = 3;            // rotating round buffers (see rearmBuffer)
inline constexpr size_t kVecBytes = 16;      // every transfer is a 16-byte vector
inline constexpr size_t kSlotAlign = 128;    // slots start on a cache line
inline constexpr size_t kCheckBytes = 4096;  // per-writer area of the setup P2P check

SYMMEM_HD constexpr size_t roundUp(size_t x, size_t a) { return (x + a - 1) / a * a; }
SYMMEM_HD constexpr size_t divUp(size_t x, size_t a) { return (x + a - 1) / a; }

// Bytes a message occupies in a slot: padded to whole 16-byte vectors with +0 (never the sentinel,
// so the receiver's poll completes on the padding too).
SYMMEM_HD constexpr size_t paddedBytes(size_t bytes) { return roundUp(bytes, kVecBytes); }
SYMMEM_HD constexpr size_t vectorCount(size_t bytes) { return divUp(bytes, kVecBytes); }

// The round buffer a call with device round counter `round` writes into, and the one it re-arms.
// Re-arming the previous round's buffer is safe (the argument is in round_control.cuh, "Rotation").
// round % 3 from the two 32-bit halves (2^32 = 1 modulo 3): a few 32-bit operations instead of a
// 64-bit division by a constant, on the critical path of every call.
static_assert(kRounds == 3, "roundBuffer's arithmetic is that of 3 round buffers");
SYMMEM_HD constexpr int roundBuffer(uint64_t round) {
  const auto hi = static_cast<uint32_t>(round >> 32), lo = static_cast<uint32_t>(round);
  return static_cast<int>((hi % 3u + lo % 3u) % 3u);
}
SYMMEM_HD constexpr int rearmBuffer(uint64_t round) { return (roundBuffer(round) + kRounds - 1) % kRounds; }
static_assert(roundBuffer(0) == 0 && roundBuffer(4) == 1 && roundBuffer(0xffffffffull) == 0 &&
                  roundBuffer(0x100000000ull) == 1 && roundBuffer(0x100000001ull) == 2 && roundBuffer(~0ull) == 0 &&
                  rearmBuffer(0) == 2 && rearmBuffer(0x100000000ull) == 0 && rearmBuffer(~0ull) == 2,
              "roundBuffer is round % 3, rearmBuffer (round - 1) mod 3");

// Sentinel. An element that is -0.0 means "not written yet": senders turn -0.0 into +0.0, so real
// data never carries it. Slots are re-armed with the 32-bit word kArmedWord whatever dtype the next
// call has: as fp32 it is -0.0; as two 16-bit elements it is (+0.0, -0.0) (little endian), so the
// word still holds a -0.0 half. Pending is decided per 32-bit word, and every 16-byte store is four
// single-copy-atomic 32-bit stores, so a word is either all old (pending) or all new (data). The
// whole contract is on SentinelPacket (flag_protocol.cuh).
inline constexpr uint32_t kArmedWord = 0x80000000u;
SYMMEM_HD constexpr bool wordPending32(uint32_t w) { return w == 0x80000000u; }
SYMMEM_HD constexpr bool wordPending16(uint32_t w) { return (w & 0xffffu) == 0x8000u || (w >> 16) == 0x8000u; }
// What a sender does to a word before it leaves: -0.0 elements become +0.0.
SYMMEM_HD constexpr uint32_t clearNegZero32(uint32_t w) { return w == 0x80000000u ? 0u : w; }
SYMMEM_HD constexpr uint32_t clearNegZero16(uint32_t w) {
  if ((w & 0xffffu) == 0x8000u) w &= 0xffff0000u;
  if ((w >> 16) == 0x8000u) w &= 0x0000ffffu;
  return w;
}

// The setup-time P2P check: word i of the pattern writer `w` leaves in reader `r`'s check area.
// It depends on both ranks, so a mapping that lands in the wrong peer's buffer is caught too.
SYMMEM_HD constexpr uint32_t checkPatternWord(int writer, int reader, uint32_t i, uint32_t nonce) {
  uint32_t x =
      nonce ^ (static_cast<uint32_t>(writer) * 0x9e3779b1u) ^ (static_cast<uint32_t>(reader) << 24) ^ (i * 0x85ebca6bu);
  x ^= x >> 13;
  return x == kArmedWord ? 1u : x;
}

// Pull flags: one 8-byte round number per (region, source rank, tile). A tile is one block's worth
// of vectors in one step of the grid-stride walk: launchShape's thread count, at most kMaxThreads.
inline constexpr size_t kFlagBytes = 8;
enum PullRegion : int { kPullOneShot = 0, kPullScatter = 1, kPullGather = 2, kPullRegions = 3 };

struct SymmetricLayout {
  int nRanks = 0;
  size_t oneShotMaxBytes = 0;  // largest message the one-shot takes (0: off)
  size_t twoShotMaxBytes = 0;  // largest message the two-shot takes (0: off)
  size_t oneShotSlotBytes = 0;
  size_t chunkSlotBytes = 0;  // two-shot: room for one rank's chunk of the largest message
  size_t oneShotOffset = 0;
  size_t scatterOffset = 0;
  size_t gatherOffset = 0;
  bool halves = false;        // the cross slots exist
  size_t oneCrossOffset = 0;  // kOneShotCrossSlots slots of oneShotSlotBytes per round buffer
  size_t twoCrossOffset = 0;  // kTwoShotCrossSlots slots of chunkSlotBytes per round buffer
  size_t flagOffset = 0;
  size_t tilesPerRegion = 0;  // room for this many tiles per (region, source)
  size_t checkOffset = 0;
  size_t totalBytes = 0;
};

// The largest two-shot chunk for a message of `maxBytes`: ceil(maxBytes / nRanks) rounded up to a
// vector, plus one vector for the alignment of chunk boundaries (chunkElems below).
SYMMEM_HD constexpr size_t maxChunkBytes(size_t maxBytes, int nRanks) {
  return maxBytes == 0 ? 0 : roundUp(divUp(maxBytes, static_cast<size_t>(nRanks)), kVecBytes) + kVecBytes;
}

// The most tiles a message of either algorithm has: a tile is at most kMaxThreads vectors (defined
// with the launch shape below), of the message (one-shot) or of one chunk (two-shot).
SYMMEM_HD constexpr size_t maxTiles(size_t oneShotMaxBytes, size_t twoShotMaxBytes, int nRanks) {
  const size_t one = divUp(vectorCount(oneShotMaxBytes), 512);
  const size_t two = divUp(vectorCount(maxChunkBytes(twoShotMaxBytes, nRanks)), 512);
  return one > two ? one : two;
}

// Cross slots per round buffer: parts 0 and 1 of the one-shot partial; (half, part) of the two-shot's.
inline constexpr int kOneShotCrossSlots = 2;
inline constexpr int kTwoShotCrossSlots = 4;

SYMMEM_HD constexpr SymmetricLayout makeLayout(int nRanks, size_t oneShotMaxBytes, size_t twoShotMaxBytes,
                                               bool halves = false) {
  SymmetricLayout l;
  l.nRanks = nRanks;
  l.oneShotMaxBytes = oneShotMaxBytes;
  l.twoShotMaxBytes = twoShotMaxBytes;
  l.oneShotSlotBytes = roundUp(paddedBytes(oneShotMaxBytes), kSlotAlign);
  l.chunkSlotBytes = roundUp(maxChunkBytes(twoShotMaxBytes, nRanks), kSlotAlign);
  const size_t n = static_cast<size_t>(nRanks);
  l.oneShotOffset = 0;
  l.scatterOffset = l.oneShotOffset + kRounds * n * l.oneShotSlotBytes;
  l.gatherOffset = l.scatterOffset + kRounds * n * l.chunkSlotBytes;
  l.halves = halves;
  l.oneCrossOffset = l.gatherOffset + kRounds * n * l.chunkSlotBytes;
  l.twoCrossOffset = l.oneCrossOffset + (halves ? kRounds * kOneShotCrossSlots * l.oneShotSlotBytes : 0);
  l.flagOffset = l.twoCrossOffset + (halves ? kRounds * kTwoShotCrossSlots * l.chunkSlotBytes : 0);
  l.tilesPerRegion = maxTiles(oneShotMaxBytes, twoShotMaxBytes, nRanks);
  l.checkOffset = l.flagOffset + roundUp(kPullRegions * n * l.tilesPerRegion * kFlagBytes, kSlotAlign);
  l.totalBytes = l.checkOffset + n * kCheckBytes;
  return l;
}

SYMMEM_HD constexpr size_t oneShotSlotOffset(const SymmetricLayout& l, int buffer, int srcRank) {
  return l.oneShotOffset + (static_cast<size_t>(buffer) * l.nRanks + srcRank) * l.oneShotSlotBytes;
}
SYMMEM_HD constexpr size_t scatterSlotOffset(const SymmetricLayout& l, int buffer, int srcRank) {
  return l.scatterOffset + (static_cast<size_t>(buffer) * l.nRanks + srcRank) * l.chunkSlotBytes;
}
SYMMEM_HD constexpr size_t gatherSlotOffset(const SymmetricLayout& l, int buffer, int srcRank) {
  return l.gatherOffset + (static_cast<size_t>(buffer) * l.nRanks + srcRank) * l.chunkSlotBytes;
}
SYMMEM_HD constexpr size_t oneShotCrossOffset(const SymmetricLayout& l, int buffer, int part) {
  return l.oneCrossOffset + (static_cast<size_t>(buffer) * kOneShotCrossSlots + part) * l.oneShotSlotBytes;
}
SYMMEM_HD constexpr size_t twoShotCrossOffset(const SymmetricLayout& l, int buffer, int slot) {
  return l.twoCrossOffset + (static_cast<size_t>(buffer) * kTwoShotCrossSlots + slot) * l.chunkSlotBytes;
}
SYMMEM_HD constexpr size_t pullFlagOffset(const SymmetricLayout& l, int region, int srcRank, size_t tile) {
  return l.flagOffset + ((static_cast<size_t>(region) * l.nRanks + srcRank) * l.tilesPerRegion + tile) * kFlagBytes;
}
SYMMEM_HD constexpr size_t pullFlagBytes(const SymmetricLayout& l) { return l.checkOffset - l.flagOffset; }
SYMMEM_HD constexpr size_t checkAreaOffset(const SymmetricLayout& l, int writerRank) {
  return l.checkOffset + static_cast<size_t>(writerRank) * kCheckBytes;
}

// ---- two-shot chunk split --------------------------------------------------------------------
// Rank j owns elements [j * chunkElems, min(count, (j + 1) * chunkElems)). chunkElems is
// ceil(count / nRanks) rounded up to whole vectors, so every chunk starts on a 16-byte boundary
// of the message; the last chunks may be short or empty.
SYMMEM_HD constexpr size_t chunkElems(size_t count, size_t elemBytes, int nRanks) {
  const size_t perVec = kVecBytes / elemBytes;
  return roundUp(divUp(count, static_cast<size_t>(nRanks)), perVec);
}
SYMMEM_HD constexpr size_t chunkBegin(size_t count, size_t elemBytes, int nRanks, int j) {
  const size_t b = chunkElems(count, elemBytes, nRanks) * static_cast<size_t>(j);
  return b < count ? b : count;
}
SYMMEM_HD constexpr size_t chunkCount(size_t count, size_t elemBytes, int nRanks, int j) {
  const size_t b = chunkBegin(count, elemBytes, nRanks, j);
  const size_t e = chunkBegin(count, elemBytes, nRanks, j + 1);
  return e - b;
}

SYMMEM_HD constexpr bool oneShotFits(const SymmetricLayout& l, size_t bytes) {
  return bytes > 0 && bytes <= l.oneShotMaxBytes;
}
SYMMEM_HD constexpr bool twoShotFits(const SymmetricLayout& l, size_t bytes) {
  return bytes > 0 && bytes <= l.twoShotMaxBytes;
}

// ---- launch shape ----------------------------------------------------------------------------
// One thread per 16-byte vector of a slot (one-shot) or of a chunk (two-shot), up to
// kVecsPerThread vectors per thread once the grid is at its cap. Small messages get one block:
// a launch of one block is the cheapest, and one block can keep up to kMaxThreads vectors in flight.
inline constexpr int kMaxThreads = 512;  // also the tile size of maxTiles() above
inline constexpr int kMinThreads = 32;
inline constexpr int kMaxGrid = 128;  // hard cap on blocks per launch (DeviceControl size)
inline constexpr int kDefaultMaxBlocks = 128;

struct LaunchShape {
  int blocks = 1;
  int threads = kMinThreads;
};

SYMMEM_HD constexpr LaunchShape launchShape(size_t vectors, int maxBlocks) {
  LaunchShape s;
  if (maxBlocks < 1) maxBlocks = 1;
  if (maxBlocks > kMaxGrid) maxBlocks = kMaxGrid;
  size_t threads = roundUp(vectors == 0 ? 1 : vectors, 32);
  if (threads > static_cast<size_t>(kMaxThreads)) threads = kMaxThreads;
  if (threads < static_cast<size_t>(kMinThreads)) threads = kMinThreads;
  size_t blocks = divUp(vectors == 0 ? 1 : vectors, threads);
  if (blocks > static_cast<size_t>(maxBlocks)) blocks = static_cast<size_t>(maxBlocks);
  s.threads = static_cast<int>(threads);
  s.blocks = static_cast<int>(blocks);
  return s;
}

}  // namespace symmem::kernels

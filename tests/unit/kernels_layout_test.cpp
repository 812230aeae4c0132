// SPDX-License-Identifier: Apache-2.0
// CPU tests of the rules the symmetric kernels and their host code share (kernels/symmetric_layout.h):
// buffer layout, slot rotation, two-shot chunk split, padding, sentinel bits, launch shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "core/decision.h"
#include "kernels/device_view.h"
#include "kernels/symmetric_comm.h"
#include "kernels/symmetric_layout.h"

namespace symmem::kernels {
namespace {

TEST(KernelsLayout, PaddingIsWholeVectors) {
  EXPECT_EQ(paddedBytes(1), 16u);
  EXPECT_EQ(paddedBytes(15), 16u);
  EXPECT_EQ(paddedBytes(16), 16u);
  EXPECT_EQ(paddedBytes(17), 32u);
  EXPECT_EQ(vectorCount(2), 1u);   // 1 bf16 element
  EXPECT_EQ(vectorCount(12), 1u);  // 3 floats
  EXPECT_EQ(vectorCount(36), 3u);  // 9 floats
  EXPECT_EQ(vectorCount(0), 0u);
}

TEST(KernelsLayout, RegionsAndSlotsDoNotOverlap) {
  for (int n = 2; n <= kMaxRanks; ++n) {
    for (size_t one : {size_t{0}, size_t{8}, size_t{1000}, size_t{256} << 10}) {
      for (size_t two : {size_t{0}, size_t{12345}, size_t{4} << 20}) {
        const SymmetricLayout l = makeLayout(n, one, two);
        std::vector<std::pair<size_t, size_t>> spans;  // [begin, end)
        for (int b = 0; b < kRounds; ++b) {
          for (int r = 0; r < n; ++r) {
            spans.push_back({oneShotSlotOffset(l, b, r), oneShotSlotOffset(l, b, r) + l.oneShotSlotBytes});
            spans.push_back({scatterSlotOffset(l, b, r), scatterSlotOffset(l, b, r) + l.chunkSlotBytes});
            spans.push_back({gatherSlotOffset(l, b, r), gatherSlotOffset(l, b, r) + l.chunkSlotBytes});
          }
        }
        for (int r = 0; r < n; ++r) spans.push_back({checkAreaOffset(l, r), checkAreaOffset(l, r) + kCheckBytes});
        std::sort(spans.begin(), spans.end());
        for (size_t i = 0; i < spans.size(); ++i) {
          EXPECT_EQ(spans[i].first % kSlotAlign, 0u);
          EXPECT_LE(spans[i].second, l.totalBytes);
          if (i > 0 && spans[i].first != spans[i].second && spans[i - 1].first != spans[i - 1].second)
            EXPECT_LE(spans[i - 1].second, spans[i].first) << "n=" << n << " one=" << one << " two=" << two;
        }
        EXPECT_GE(l.oneShotSlotBytes, paddedBytes(one));
      }
    }
  }
}

TEST(KernelsLayout, BufferBytesMatchLayout) {
  SymmetricConfig c;
  c.nRanks = 4;
  c.oneShotMaxBytes = 64 << 10;
  c.twoShotMaxBytes = 1 << 20;
  EXPECT_EQ(symmetricBufferBytes(c), makeLayout(4, 64 << 10, 1 << 20).totalBytes);
  // one-shot: 3 rounds x 4 slots x 64 KiB; two-shot: 2 regions x 3 x 4 x (256 KiB + 16 -> 128-aligned);
  // pull flags: 3 regions x 4 sources x 33 tiles (a 256 KiB + 16 B chunk is 16385 vectors, 512 a tile)
  // x 8 bytes, 128-aligned.
  EXPECT_EQ(symmetricBufferBytes(c),
            3u * 4 * (64 << 10) + 2u * 3 * 4 * ((256 << 10) + 128) + roundUp(3 * 4 * 33 * 8, 128) + 4 * kCheckBytes);
}

// The pull flags: one 8-byte word per (region, source, tile), all distinct, all between the gather
// slots and the check areas, and room for the most tiles either algorithm's largest message has.
TEST(KernelsLayout, PullFlagsFitBetweenTheSlotsAndTheCheckAreas) {
  for (int n : {2, 3, 8}) {
    const SymmetricLayout l = makeLayout(n, 64 << 10, 1 << 20);
    EXPECT_GE(l.flagOffset, l.gatherOffset + kRounds * n * l.chunkSlotBytes);
    EXPECT_GE(l.tilesPerRegion, divUp(vectorCount(64 << 10), kMaxThreads));
    EXPECT_GE(l.tilesPerRegion, divUp(vectorCount(maxChunkBytes(1 << 20, n)), kMaxThreads));
    std::set<size_t> seen;
    for (int region = 0; region < kPullRegions; ++region)
      for (int src = 0; src < n; ++src)
        for (size_t tile = 0; tile < l.tilesPerRegion; ++tile) {
          const size_t at = pullFlagOffset(l, region, src, tile);
          EXPECT_EQ(at % kFlagBytes, 0u);
          EXPECT_LE(at + kFlagBytes, l.checkOffset);
          EXPECT_TRUE(seen.insert(at).second) << "flag (" << region << ", " << src << ", " << tile << ") shared";
        }
    EXPECT_EQ(pullFlagBytes(l), l.checkOffset - l.flagOffset);
  }
}

TEST(KernelsLayout, RotationNeverRearmsABufferInUseNowOrNext) {
  for (uint64_t r = 0; r < 100; ++r) {
    EXPECT_EQ(rearmBuffer(r + 1), roundBuffer(r)) << "round r+1 re-arms what round r used";
    EXPECT_NE(rearmBuffer(r), roundBuffer(r));
    EXPECT_NE(rearmBuffer(r), roundBuffer(r + 1)) << "a peer may already be in round r+1";
    EXPECT_EQ(rearmBuffer(r), roundBuffer(r + 2)) << "the re-armed buffer is next used by round r+2";
  }
  EXPECT_EQ(rearmBuffer(0), 2);  // the first call re-arms a buffer that was armed at setup (0 bytes dirty)
}

// Models the one-shot protocol for 2..4 ranks under random interleavings: each rank, in round r,
// pushes into buffer r % K of every peer, re-arms its own buffer (r-1) % K, then waits until all
// peers' round-r data is there. A push must find its slot armed; a re-arm must never destroy data of
// a round the rank has not consumed. With K = 3 (and the layout's buffer functions) no schedule
// breaks it; with K = 2 random schedules do, which shows the model can fail.
struct RotationModel {
  int n;
  int k;
  bool useLayout;
  std::vector<std::vector<std::vector<int64_t>>> slot;  // slot[receiver][buffer][sender]: -1 armed, else round
  std::vector<int64_t> round;                           // round each rank is in
  std::vector<int> phase;                               // 0: push, 1: re-arm, 2: waiting

  RotationModel(int ranks, int buffers, bool layout)
      : n(ranks),
        k(buffers),
        useLayout(layout),
        slot(ranks, std::vector<std::vector<int64_t>>(buffers, std::vector<int64_t>(ranks, -1))),
        round(ranks, 0),
        phase(ranks, 0) {}
  int bufferOf(int64_t r) const { return useLayout ? roundBuffer(r) : static_cast<int>(r % k); }
  int rearmOf(int64_t r) const { return useLayout ? rearmBuffer(r) : static_cast<int>((r + k - 1) % k); }

  // One step of rank p; false if the protocol was violated.
  bool step(int p) {
    const int64_t r = round[p];
    if (phase[p] == 0) {
      for (int q = 0; q < n; ++q) {
        if (q == p) continue;
        int64_t& s = slot[q][bufferOf(r)][p];
        if (s != -1) return false;  // overwrote data not re-armed yet
        s = r;
      }
      phase[p] = 1;  // the kernel re-arms after pushing (other threads may do it before: also covered,
      return true;   // since a re-arm before the push is only safer)
    }
    if (phase[p] == 1) {
      for (int q = 0; q < n; ++q) {
        int64_t& s = slot[p][rearmOf(r)][q];
        if (s >= r) return false;  // destroyed data of a round not consumed yet
        s = -1;
      }
      phase[p] = 2;
      return true;
    }
    for (int q = 0; q < n; ++q)
      if (q != p && slot[p][bufferOf(r)][q] != r) return true;  // still waiting
    phase[p] = 0;
    ++round[p];
    return true;
  }
};

bool rotationModelHolds(int n, int buffers, bool useLayout, uint32_t seed) {
  RotationModel m(n, buffers, useLayout);
  std::mt19937 rng(seed);
  for (int i = 0; i < 20000; ++i)
    if (!m.step(static_cast<int>(rng() % n))) return false;
  return *std::min_element(m.round.begin(), m.round.end()) > 100;  // and it made progress
}

TEST(KernelsLayout, RotationModelThreeBuffersIsSafe) {
  for (int n = 2; n <= 4; ++n)
    for (uint32_t seed = 1; seed <= 20; ++seed)
      EXPECT_TRUE(rotationModelHolds(n, kRounds, true, seed)) << n << " " << seed;
}

TEST(KernelsLayout, RotationModelTwoBuffersIsCaught) {
  int violations = 0;
  for (uint32_t seed = 1; seed <= 20; ++seed) violations += !rotationModelHolds(2, 2, false, seed);
  EXPECT_GT(violations, 0);
}

TEST(KernelsLayout, ChunksCoverTheMessageOnVectorBoundaries) {
  for (size_t elem : {size_t{2}, size_t{4}}) {
    for (int n = 2; n <= kMaxRanks; ++n) {
      for (size_t count : {size_t{1}, size_t{3}, size_t{7}, size_t{8}, size_t{9}, size_t{17}, size_t{1023},
                           size_t{4097}, size_t{65537}, size_t{1} << 20}) {
        size_t next = 0;
        const size_t per = kVecBytes / elem;
        for (int j = 0; j < n; ++j) {
          EXPECT_EQ(chunkBegin(count, elem, n, j), next) << "count=" << count << " n=" << n << " j=" << j;
          const size_t c = chunkCount(count, elem, n, j);
          if (c > 0) EXPECT_EQ(chunkBegin(count, elem, n, j) % per, 0u);
          EXPECT_LE(paddedBytes(c * elem), maxChunkBytes(count * elem, n));
          EXPECT_LE(paddedBytes(chunkElems(count, elem, n) * elem), maxChunkBytes(count * elem, n));
          next += c;
        }
        EXPECT_EQ(next, count);
        // Chunk 0 is the largest: the kernel's vector loop is sized by it.
        for (int j = 1; j < n; ++j) EXPECT_LE(chunkCount(count, elem, n, j), chunkCount(count, elem, n, 0));
      }
    }
  }
}

TEST(KernelsLayout, ChunkSlotHoldsTheLargestChunk) {
  for (int n = 2; n <= kMaxRanks; ++n) {
    const size_t maxBytes = (size_t{3} << 20) + 6;
    const SymmetricLayout l = makeLayout(n, 0, maxBytes);
    for (size_t elem : {size_t{2}, size_t{4}}) {
      const size_t count = maxBytes / elem;
      EXPECT_LE(paddedBytes(chunkElems(count, elem, n) * elem), l.chunkSlotBytes);
    }
  }
}

TEST(KernelsLayout, SentinelIsPendingForEveryDtype) {
  EXPECT_TRUE(wordPending32(kArmedWord));
  EXPECT_TRUE(wordPending16(kArmedWord));
  EXPECT_FALSE(wordPending32(0u));  // +0.0 padding
  EXPECT_FALSE(wordPending16(0u));
  EXPECT_TRUE(wordPending16(0x3f808000u));   // low half -0.0
  EXPECT_TRUE(wordPending16(0x80003f80u));   // high half -0.0
  EXPECT_FALSE(wordPending32(0x3f808000u));  // a real float
  EXPECT_EQ(clearNegZero32(0x80000000u), 0u);
  EXPECT_EQ(clearNegZero16(0x80008000u), 0u);
  EXPECT_EQ(clearNegZero16(0x3c008000u), 0x3c000000u);
  std::mt19937 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const uint32_t w = (i % 5 == 0) ? (rng() & 0x80008000u) : rng();
    EXPECT_FALSE(wordPending32(clearNegZero32(w)));
    EXPECT_FALSE(wordPending16(clearNegZero16(w)));
    // Only -0.0 elements change.
    if (!wordPending32(w)) EXPECT_EQ(clearNegZero32(w), w);
    if (!wordPending16(w)) EXPECT_EQ(clearNegZero16(w), w);
  }
}

TEST(KernelsLayout, CheckPatternDependsOnBothRanksAndIsNeverArmed) {
  std::set<uint32_t> firstWords;
  for (int w = 0; w < kMaxRanks; ++w)
    for (int r = 0; r < kMaxRanks; ++r)
      if (w != r) firstWords.insert(checkPatternWord(w, r, 0, 0x1234u));
  EXPECT_EQ(firstWords.size(), static_cast<size_t>(kMaxRanks * (kMaxRanks - 1)));
  for (uint32_t i = 0; i < kCheckBytes / 4; ++i) EXPECT_NE(checkPatternWord(1, 0, i, 0), kArmedWord);
}

TEST(KernelsLayout, LaunchShape) {
  EXPECT_EQ(launchShape(1, 32).blocks, 1);
  EXPECT_EQ(launchShape(1, 32).threads, 32);
  EXPECT_EQ(launchShape(33, 32).threads, 64);
  EXPECT_EQ(launchShape(512, 32).blocks, 1);
  EXPECT_EQ(launchShape(512, 32).threads, 512);
  EXPECT_EQ(launchShape(513, 32).blocks, 2);
  EXPECT_EQ(launchShape(1 << 20, 32).blocks, 32);
  EXPECT_EQ(launchShape(1 << 20, 1000).blocks, kMaxGrid);
  EXPECT_EQ(launchShape(1 << 20, 0).blocks, 1);
  for (size_t v : {size_t{0}, size_t{1}, size_t{100}, size_t{4096}, size_t{100000}}) {
    const LaunchShape s = launchShape(v, kDefaultMaxBlocks);
    EXPECT_GE(s.threads, kMinThreads);
    EXPECT_LE(s.threads, kMaxThreads);
    EXPECT_EQ(s.threads % 32, 0);
    EXPECT_GE(s.blocks, 1);
    EXPECT_LE(s.blocks, kDefaultMaxBlocks);
  }
}

// The small-message kernel takes exactly the pushes one block holds at one vector per thread.
TEST(KernelsLayout, SmallPushTakesOneBlockPushesOnly) {
  auto pick = [](bool push, size_t vectors, int maxBlocks, int n, uint32_t switches = 0) {
    return smallPushRanks(push, launchShape(vectors, maxBlocks), vectors, n, switches);
  };
  EXPECT_EQ(pick(true, 1, kDefaultMaxBlocks, 2), 2);
  EXPECT_EQ(pick(true, 512, kDefaultMaxBlocks, 4), 4);
  EXPECT_EQ(pick(true, 33, kDefaultMaxBlocks, 8), 8);
  for (int n : {3, 5, 6, 7}) EXPECT_EQ(pick(true, 100, kDefaultMaxBlocks, n), 0) << n;  // rank count at run time
  EXPECT_EQ(pick(true, 513, kDefaultMaxBlocks, 2), kGenericOneShot);                    // two blocks
  EXPECT_EQ(pick(true, 513, 1, 2), kGenericOneShot);                 // one block, two vectors per thread
  EXPECT_EQ(pick(false, 1, kDefaultMaxBlocks, 2), kGenericOneShot);  // pull, staged
  EXPECT_EQ(pick(true, 1, kDefaultMaxBlocks, 2, kGenericOneBlock), kGenericOneShot);
  EXPECT_EQ(pick(true, 1, kDefaultMaxBlocks, 2, kSmallPushAnyRanks), 0);
  for (size_t v = 1; v <= 2048; v += 7)
    for (int blocks : {1, 4, kMaxGrid}) {
      const LaunchShape shape = launchShape(v, blocks);
      if (smallPushRanks(true, shape, v, 2, 0) != kGenericOneShot) {
        EXPECT_EQ(shape.blocks, 1);
        EXPECT_LE(v, static_cast<size_t>(shape.threads));
      }
    }
}

TEST(KernelsLayout, SupportIsExactlyTwelveCombinations) {
  int supported = 0;
  for (int t = 0; t <= static_cast<int>(DataType::Other); ++t) {
    for (int o = 0; o <= static_cast<int>(ReduceOp::Other); ++o) {
      const auto dt = static_cast<DataType>(t);
      const auto op = static_cast<ReduceOp>(o);
      const bool expect = (dt == DataType::Float32 || dt == DataType::Float16 || dt == DataType::Bfloat16) &&
                          (op == ReduceOp::Sum || op == ReduceOp::Prod || op == ReduceOp::Max || op == ReduceOp::Min);
      EXPECT_EQ(symmetricSupports(dt, op), expect) << t << " " << o;
      supported += symmetricSupports(dt, op);
    }
  }
  EXPECT_EQ(supported, 12);
}

}  // namespace
}  // namespace symmem::kernels

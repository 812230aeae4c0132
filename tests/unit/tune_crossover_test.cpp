// SPDX-License-Identifier: Apache-2.0
// The crossover rules of symmem-tune: margin against noise, monotone limits, two-shot only where it
// also beats one-shot. Inputs are shaped like real measurements (NCCL flat at small sizes, the
// kernels growing with size).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "tools/tune_crossover.h"

namespace symmem {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;
constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

// 8 B .. 64 MiB, x2 steps, from functions of the size.
template <class Nccl, class One, class Two>
std::vector<SizeMedians> sweep(Nccl nccl, One one, Two two) {
  std::vector<SizeMedians> out;
  for (uint64_t b = 8; b <= 64 * MiB; b *= 2) out.push_back({b, nccl(b), one(b), two(b)});
  return out;
}

// Latency model: fixed cost plus bytes over a bandwidth (GB/s = bytes per ns).
auto linear(double fixedUs, double gbPerS) {
  return [=](uint64_t b) { return fixedUs + static_cast<double>(b) / (gbPerS * 1000.0); };
}

TEST(TuneCrossover, CleanCurvesGiveBothLimits) {
  // NCCL 20 us + 40 GB/s; one-shot 5 us + 2 GB/s-equivalent; two-shot 9 us + 10 GB/s.
  const auto m = sweep(linear(20, 40), linear(5, 2), linear(9, 10));
  const Crossover c = findCrossover(m);
  // one-shot: 5 + b/2000 <= 0.95 (20 + b/40000) holds up to b ~ 28.7 KB -> 16 KiB (32 KiB fails).
  EXPECT_EQ(c.oneShotMaxBytes, 16 * KiB);
  // two-shot: 9 + b/10000 <= 0.95 (20 + b/40000) holds up to ~138 KB -> 128 KiB.
  EXPECT_EQ(c.twoShotMaxBytes, 128 * KiB);
  ASSERT_EQ(c.sizes.size(), m.size());
  for (const SizeVerdict& v : c.sizes) {
    const TunedChoice want = v.bytes <= 16 * KiB    ? TunedChoice::OneShot
                             : v.bytes <= 128 * KiB ? TunedChoice::TwoShot
                                                    : TunedChoice::Nccl;
    EXPECT_EQ(v.chosen, want) << v.bytes << ": " << v.why;
    EXPECT_FALSE(v.why.empty()) << v.bytes;
  }
}

TEST(TuneCrossover, NoisyMeasurementsKeepTheLimitsWithinOneStep) {
  // +-2% multiplicative noise on every median: the margin keeps the limits near the clean ones and
  // never lets a size win that is not within the noise of winning.
  const auto clean = sweep(linear(20, 40), linear(5, 2), linear(9, 10));
  std::mt19937 rng(1234);
  std::uniform_real_distribution<double> jitter(0.98, 1.02);
  for (int trial = 0; trial < 200; ++trial) {
    auto noisy = clean;
    for (SizeMedians& s : noisy) {
      s.ncclUs *= jitter(rng);
      s.oneShotUs *= jitter(rng);
      s.twoShotUs *= jitter(rng);
    }
    const Crossover c = findCrossover(noisy);
    EXPECT_GE(c.oneShotMaxBytes, 8 * KiB) << trial;
    EXPECT_LE(c.oneShotMaxBytes, 16 * KiB) << trial;
    EXPECT_GE(c.twoShotMaxBytes, 64 * KiB) << trial;
    EXPECT_LE(c.twoShotMaxBytes, 128 * KiB) << trial;
    for (const SizeVerdict& v : c.sizes) {
      const SizeMedians& s = *std::find_if(noisy.begin(), noisy.end(), [&](auto& x) { return x.bytes == v.bytes; });
      if (v.chosen == TunedChoice::OneShot) EXPECT_LE(s.oneShotUs, 0.95 * s.ncclUs);
      if (v.chosen == TunedChoice::TwoShot) EXPECT_LE(s.twoShotUs, 0.95 * s.ncclUs);
    }
  }
}

TEST(TuneCrossover, PathThatNeverWinsIsOff) {
  const auto m = sweep(linear(10, 100), linear(30, 2), linear(40, 10));
  const Crossover c = findCrossover(m);
  EXPECT_EQ(c.oneShotMaxBytes, 0u);
  EXPECT_EQ(c.twoShotMaxBytes, 0u);
  for (const SizeVerdict& v : c.sizes) EXPECT_EQ(v.chosen, TunedChoice::Nccl) << v.bytes;
}

TEST(TuneCrossover, TwoShotAloneWhenOneShotNeverWins) {
  // One-shot always slower than NCCL, two-shot better up to a point: two-shot from the smallest size.
  std::vector<SizeMedians> m = {{8, 20, 25, 10}, {16, 20, 25, 10}, {32, 20, 25, 30}};
  const Crossover c = findCrossover(m);
  EXPECT_EQ(c.oneShotMaxBytes, 0u);
  EXPECT_EQ(c.twoShotMaxBytes, 16u);
}

TEST(TuneCrossover, HoleInTheMiddleEndsTheRange) {
  std::vector<SizeMedians> m = {
      {1 * KiB, 20, 8, 30},  {2 * KiB, 20, 8, 30},
      {4 * KiB, 20, 21, 30},  // one-shot loses here (a noisy spike, or a real dip)
      {8 * KiB, 20, 9, 30},  {16 * KiB, 20, 10, 30},
  };
  const Crossover c = findCrossover(m);
  EXPECT_EQ(c.oneShotMaxBytes, 2 * KiB) << "a win above a loss is not taken";
  EXPECT_EQ(c.twoShotMaxBytes, 0u);
  EXPECT_EQ(c.sizes[3].chosen, TunedChoice::Nccl);
  EXPECT_TRUE(c.sizes[3].oneShotWins);
  EXPECT_NE(c.sizes[3].why.find("lost at 4KiB"), std::string::npos) << c.sizes[3].why;
}

TEST(TuneCrossover, TwoShotHoleEndsItsRangeToo) {
  std::vector<SizeMedians> m = {
      {1 * KiB, 20, 8, 12},
      {2 * KiB, 20, 30, 12},
      {4 * KiB, 20, 30, 25},
      {8 * KiB, 20, 30, 12},
  };
  const Crossover c = findCrossover(m);
  EXPECT_EQ(c.oneShotMaxBytes, 1 * KiB);
  EXPECT_EQ(c.twoShotMaxBytes, 2 * KiB);
  EXPECT_EQ(c.sizes[3].chosen, TunedChoice::Nccl);
}

TEST(TuneCrossover, TiesWithinTheMarginStayOnNccl) {
  // 4% faster is inside a 5% margin; exactly 5% faster is a win; 6% is a win.
  std::vector<SizeMedians> tie = {{8, 100, 96, kNotMeasured}};
  EXPECT_EQ(findCrossover(tie).oneShotMaxBytes, 0u);
  std::vector<SizeMedians> edge = {{8, 100, 95, kNotMeasured}};
  EXPECT_EQ(findCrossover(edge).oneShotMaxBytes, 8u);
  std::vector<SizeMedians> equal = {{8, 100, 100, 100}};
  const Crossover c = findCrossover(equal);
  EXPECT_EQ(c.oneShotMaxBytes, 0u);
  EXPECT_EQ(c.twoShotMaxBytes, 0u);
  // A larger margin turns a 6% win into a tie; margin 0 takes any strict or equal win.
  std::vector<SizeMedians> six = {{8, 100, 94, kNotMeasured}};
  EXPECT_EQ(findCrossover(six, 0.05).oneShotMaxBytes, 8u);
  EXPECT_EQ(findCrossover(six, 0.10).oneShotMaxBytes, 0u);
  EXPECT_EQ(findCrossover(equal, 0.0).oneShotMaxBytes, 8u);
}

TEST(TuneCrossover, TwoShotThatNeverBeatsOneShotIsOff) {
  // Two-shot beats NCCL by far at every size up to 64 KiB, but one-shot is faster still; at 128 KiB
  // both lose. Two-shot is never chosen.
  std::vector<SizeMedians> m;
  for (uint64_t b = 1 * KiB; b <= 64 * KiB; b *= 2) m.push_back({b, 50, 20, 30});
  m.push_back({128 * KiB, 35, 40, 45});
  const Crossover c = findCrossover(m);
  EXPECT_EQ(c.oneShotMaxBytes, 64 * KiB);
  EXPECT_EQ(c.twoShotMaxBytes, 0u);
  for (const SizeVerdict& v : c.sizes) EXPECT_FALSE(v.twoShotWins) << v.bytes;
}

TEST(TuneCrossover, TwoShotStopsWhereOneShotIsFasterAgain) {
  // A one-shot spike at 2 KiB ends the one-shot range; two-shot takes 2 KiB, but from 4 KiB one-shot is
  // faster than two-shot again, so two-shot is not extended there (and one-shot cannot come back).
  std::vector<SizeMedians> m = {{1 * KiB, 50, 20, 30}, {2 * KiB, 50, 60, 30}, {4 * KiB, 50, 20, 30}};
  const Crossover c = findCrossover(m);
  EXPECT_EQ(c.oneShotMaxBytes, 1 * KiB);
  EXPECT_EQ(c.twoShotMaxBytes, 2 * KiB);
  EXPECT_EQ(c.sizes[2].chosen, TunedChoice::Nccl);
  EXPECT_NE(c.sizes[2].why.find("not faster than one-shot"), std::string::npos) << c.sizes[2].why;
}

TEST(TuneCrossover, UnmeasuredPathLosesButDoesNotBlockTheOther) {
  // One-shot measured only up to 2 KiB (a capacity cap): above that two-shot is judged against NCCL alone.
  std::vector<SizeMedians> m = {
      {1 * KiB, 20, 5, 9},
      {2 * KiB, 20, 6, 9},
      {4 * KiB, 20, kNotMeasured, 10},
      {8 * KiB, kNotMeasured, 7, 5},
  };
  const Crossover c = findCrossover(m);
  EXPECT_EQ(c.oneShotMaxBytes, 2 * KiB);
  EXPECT_EQ(c.twoShotMaxBytes, 4 * KiB) << "NCCL not measured at 8 KiB: nothing wins there";
}

TEST(TuneCrossover, InputOrderDoesNotMatterAndLimitsAreOrdered) {
  auto m = sweep(linear(20, 40), linear(5, 2), linear(9, 10));
  std::reverse(m.begin(), m.end());
  const Crossover c = findCrossover(m);
  EXPECT_EQ(c.oneShotMaxBytes, 16 * KiB);
  EXPECT_EQ(c.twoShotMaxBytes, 128 * KiB);
  EXPECT_EQ(c.sizes.front().bytes, 8u);
  EXPECT_TRUE(c.twoShotMaxBytes == 0 || c.twoShotMaxBytes > c.oneShotMaxBytes);
}

TEST(TuneCrossover, EmptyInputTurnsBothOff) {
  const Crossover c = findCrossover({});
  EXPECT_EQ(c.oneShotMaxBytes, 0u);
  EXPECT_EQ(c.twoShotMaxBytes, 0u);
  EXPECT_TRUE(c.sizes.empty());
}

}  // namespace
}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
// symmem-tune's candidates and the rule at one size: the simplest candidate within the margin of the
// fastest. Inputs are shaped like real measurements (NCCL flat at small sizes, the kernels growing with
// size, forced NCCL configurations on either side of stock).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>

#include "tools/tune/crossover.h"

namespace symmem {
namespace {

SizeTimes at(uint64_t bytes, std::initializer_list<std::pair<TunePath, double>> medians) {
  SizeTimes t;
  t.bytes = bytes;
  for (auto [p, us] : medians) t.setMedian(p, us);
  return t;
}

TEST(TuneCandidates, OrderNamesAndKinds) {
  // The order is the simplicity order and the CSV's order; the names are the CSV's.
  const char* names[] = {"nccl",         "nccl-ring-ll",    "nccl-ring-ll128",  "nccl-ring-simple",
                         "nccl-tree-ll", "nccl-tree-ll128", "nccl-tree-simple", "oneshot-push",
                         "oneshot-pull", "oneshot-staged",  "oneshot-halves",   "twoshot-push",
                         "twoshot-pull", "twoshot-staged",  "twoshot-halves"};
  ASSERT_EQ(std::size(names), static_cast<size_t>(kNumTunePaths));
  std::set<std::string> headings;
  for (int i = 0; i < kNumTunePaths; ++i) {
    const TunePath p = tunePathAt(i);
    EXPECT_EQ(tunePathName(p), names[i]);
    EXPECT_LE(tunePathHeading(p).size(), 11u) << names[i];
    headings.insert(std::string(tunePathHeading(p)));
    EXPECT_EQ(isNcclPath(p), i < 7) << names[i];
    EXPECT_EQ(isNcclConfig(p), i >= 1 && i < 7) << names[i];
    EXPECT_EQ(isSymmetricPath(p), i >= 7) << names[i];
  }
  EXPECT_EQ(headings.size(), static_cast<size_t>(kNumTunePaths)) << "every column heading differs";
  EXPECT_EQ(tunePathHeading(TunePath::Nccl), "stock");
  EXPECT_EQ(tunePathHeading(TunePath::NcclRingSimple), "ring/simple");
  EXPECT_EQ(tunePathHeading(TunePath::OneShotPull), "1s-pull");
  EXPECT_EQ(tunePathLabel(TunePath::Nccl), "stock NCCL");
  EXPECT_EQ(tunePathLabel(TunePath::NcclTreeLL128), "NCCL tree/ll128");
  EXPECT_EQ(tunePathLabel(TunePath::TwoShotStaged), "two-shot staged");
}

TEST(TuneCandidates, ConfigsAndKernelsRoundTrip) {
  int configs = 0;
  for (int i = 0; i < kNumTunePaths; ++i) {
    const TunePath p = tunePathAt(i);
    if (isNcclConfig(p)) {
      ++configs;
      EXPECT_EQ(ncclConfigPath(ncclAlgoOf(p), ncclProtoOf(p)), p);
      EXPECT_NE(ncclAlgoOf(p), NcclAlgo::Any);
      EXPECT_NE(ncclProtoOf(p), NcclProto::Any);
    } else if (isSymmetricPath(p)) {
      EXPECT_EQ(symmetricPath(symAlgoOf(p), symVariantOf(p)), p);
    }
  }
  EXPECT_EQ(configs, kNumNcclConfigs);
  EXPECT_EQ(ncclAlgoOf(TunePath::Nccl), NcclAlgo::Any);
  EXPECT_EQ(ncclProtoOf(TunePath::Nccl), NcclProto::Any);
  EXPECT_EQ(ncclConfigPath(NcclAlgo::Ring, NcclProto::LL), TunePath::NcclRingLL);
  EXPECT_EQ(ncclConfigPath(NcclAlgo::Nvls, NcclProto::Simple), std::nullopt);
  EXPECT_EQ(ncclConfigPath(NcclAlgo::Any, NcclProto::Any), std::nullopt);
  EXPECT_EQ(symmetricPath(SymAlgo::TwoShot, SymVariant::Pull), TunePath::TwoShotPull);
  EXPECT_EQ(ncclTunePaths().count(), 7u);
  EXPECT_EQ(allTunePaths().count(), static_cast<size_t>(kNumTunePaths));
}

TEST(TuneRule, TheFastestWinsOnlyByTheMargin) {
  // One-shot pull 6.1 us against stock NCCL 13.6 us: far beyond the margin.
  const SizeChoice c =
      chooseAtSize(at(64, {{TunePath::Nccl, 13.6}, {TunePath::OneShotPush, 9.0}, {TunePath::OneShotPull, 6.1}}), 0.05);
  EXPECT_EQ(c.chosen, TunePath::OneShotPull);
  EXPECT_EQ(c.fastest, TunePath::OneShotPull);
  EXPECT_TRUE(c.measured);
  EXPECT_EQ(c.why, "one-shot pull 6.10 us < 0.95 x stock NCCL 13.60 us");
}

TEST(TuneRule, ANearTieKeepsTheSimplerCandidate) {
  // Push 7.0 us is within 5% of pull 6.8 us: push, the simpler, is kept.
  const SizeChoice c =
      chooseAtSize(at(64, {{TunePath::Nccl, 13.6}, {TunePath::OneShotPush, 7.0}, {TunePath::OneShotPull, 6.8}}), 0.05);
  EXPECT_EQ(c.chosen, TunePath::OneShotPush);
  EXPECT_EQ(c.fastest, TunePath::OneShotPull);
  EXPECT_EQ(c.why, "one-shot push 7.00 us within 5% of one-shot pull 6.80 us: simpler kept");
  // Stock within the margin of the fastest kernel stays: 100 x 0.95 <= 96.
  const SizeChoice tie = chooseAtSize(at(8, {{TunePath::Nccl, 100}, {TunePath::OneShotPush, 96}}), 0.05);
  EXPECT_EQ(tie.chosen, TunePath::Nccl);
  EXPECT_NE(tie.why.find("within 5% of one-shot push 96.00 us: simpler kept"), std::string::npos) << tie.why;
  // At exactly the margin the simpler one is kept too (t x (1 - margin) <= t_fastest); beyond it, not.
  EXPECT_EQ(chooseAtSize(at(8, {{TunePath::Nccl, 100}, {TunePath::OneShotPush, 95}}), 0.05).chosen, TunePath::Nccl);
  EXPECT_EQ(chooseAtSize(at(8, {{TunePath::Nccl, 100}, {TunePath::OneShotPush, 94}}), 0.05).chosen,
            TunePath::OneShotPush);
  // A larger margin turns a 6% win into a tie; margin 0 keeps only an exact tie.
  EXPECT_EQ(chooseAtSize(at(8, {{TunePath::Nccl, 100}, {TunePath::OneShotPush, 94}}), 0.10).chosen, TunePath::Nccl);
  EXPECT_EQ(chooseAtSize(at(8, {{TunePath::Nccl, 100}, {TunePath::OneShotPush, 100}}), 0.0).chosen, TunePath::Nccl);
  EXPECT_EQ(chooseAtSize(at(8, {{TunePath::Nccl, 100}, {TunePath::OneShotPush, 99.9}}), 0.0).chosen,
            TunePath::OneShotPush);
}

TEST(TuneRule, AnNcclConfigBeatsStockByTheMargin) {
  // The published AMD Turin case: stock NCCL picks Simple, forcing LL takes 32 KiB from 48.2 to 26.2 us.
  const SizeChoice c = chooseAtSize(
      at(32 * 1024, {{TunePath::Nccl, 48.2}, {TunePath::NcclRingLL, 26.2}, {TunePath::NcclRingSimple, 48.0}}), 0.05);
  EXPECT_EQ(c.chosen, TunePath::NcclRingLL);
  EXPECT_EQ(c.why, "NCCL ring/ll 26.20 us < 0.95 x stock NCCL 48.20 us");
  // A config as fast as stock (what stock itself runs) is no reason for a band.
  const SizeChoice same = chooseAtSize(at(32 * 1024, {{TunePath::Nccl, 48.2}, {TunePath::NcclRingSimple, 48.0}}), 0.05);
  EXPECT_EQ(same.chosen, TunePath::Nccl);
}

TEST(TuneRule, NaNNeverWinsAndTheAllowedSetLimitsTheChoice) {
  const SizeTimes t = at(8, {{TunePath::Nccl, 20}, {TunePath::OneShotPush, kNotMeasured}, {TunePath::TwoShotPull, 8}});
  EXPECT_EQ(chooseAtSize(t, 0.05).chosen, TunePath::TwoShotPull);
  const SizeChoice ncclOnly = chooseAtSize(t, 0.05, ncclTunePaths());
  EXPECT_EQ(ncclOnly.chosen, TunePath::Nccl);
  EXPECT_EQ(ncclOnly.why, "stock NCCL 20.00 us is the fastest");
  // Nothing measured: stock NCCL, flagged as such.
  const SizeChoice none = chooseAtSize(at(8, {}), 0.05);
  EXPECT_FALSE(none.measured);
  EXPECT_EQ(none.chosen, TunePath::Nccl);
  // Stock NCCL without a number: the fastest of the rest, said so.
  const SizeChoice noStock = chooseAtSize(at(8, {{TunePath::OneShotPush, 5}}), 0.05);
  EXPECT_EQ(noStock.chosen, TunePath::OneShotPush);
  EXPECT_NE(noStock.why.find("stock NCCL not measured"), std::string::npos) << noStock.why;
}

TEST(TuneRule, NoisyNearTiesNeverPickAPathOutsideTheMargin) {
  // Whatever the noise, the chosen candidate is within the margin of the fastest, and no simpler
  // candidate is.
  std::mt19937 rng(1234);
  std::uniform_real_distribution<double> us(5.0, 6.0);
  for (int trial = 0; trial < 500; ++trial) {
    SizeTimes t;
    t.bytes = 1024;
    for (int i = 0; i < kNumTunePaths; ++i) t.medianUs[static_cast<size_t>(i)] = us(rng);
    const SizeChoice c = chooseAtSize(t, 0.05);
    const double fastest = t.median(c.fastest);
    EXPECT_LE(t.median(c.chosen) * 0.95, fastest) << trial;
    for (int i = 0; i < tunePathIndex(c.chosen); ++i) EXPECT_GT(t.medianUs[static_cast<size_t>(i)] * 0.95, fastest);
    for (int i = 0; i < kNumTunePaths; ++i) EXPECT_LE(fastest, t.medianUs[static_cast<size_t>(i)]);
  }
}

}  // namespace
}  // namespace symmem

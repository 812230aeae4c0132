// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where the symmetric kernels stop paying off: from per-size median latencies of stock NCCL, our
// one-shot and our two-shot kernels to the two byte limits a table entry holds.
//
// Rules (docs/tuning.md explains why):
//  - A path "wins" at a size only if its median is at most (1 - margin) x NCCL's median there: a
//    tie inside the margin is noise, and NCCL, the safe default, keeps the size.
//  - The one-shot limit is the largest measured size S such that one-shot wins at S and at every
//    measured size below S. One loss ends the range: the table has one limit per path, so a win
//    above a loss (a "hole") cannot be expressed, and guessing across it would route sizes that lost.
//  - The two-shot limit is the largest S above the one-shot limit such that, at every measured size
//    from the first one above the one-shot limit up to S, two-shot wins against NCCL and is faster
//    than one-shot (where one-shot was measured). It is 0 (off) when the first such size already fails.
//  - A path without a measurement at a size (NaN: not run, failed, or gave wrong results) loses there.
// Pure: no CUDA, no I/O; symmem-tune and the unit tests call it.
#include <cstdint>
#include <string>
#include <vector>

namespace symmem {

// Median per-call latency in microseconds of each path at one message size; NaN: not measured.
struct SizeMedians {
  uint64_t bytes = 0;
  double ncclUs = 0;
  double oneShotUs = 0;
  double twoShotUs = 0;
};

enum class TunedChoice : int { Nccl, OneShot, TwoShot };
const char* tunedChoiceName(TunedChoice c);  // "nccl", "one-shot", "two-shot"

// What the limits mean for one measured size, and why.
struct SizeVerdict {
  uint64_t bytes = 0;
  TunedChoice chosen = TunedChoice::Nccl;  // what the written limits route this size to
  bool oneShotWins = false;                // one-shot beats NCCL by the margin here
  bool twoShotWins = false;                // two-shot beats NCCL by the margin and is faster than one-shot
  std::string why;                         // one line, e.g. "one-shot 6.20 us <= 0.95 x NCCL 13.64 us"
};

struct Crossover {
  uint64_t oneShotMaxBytes = 0;    // 0: one-shot off
  uint64_t twoShotMaxBytes = 0;    // 0: two-shot off; otherwise > oneShotMaxBytes
  std::vector<SizeVerdict> sizes;  // one per input size, in ascending size order
};

inline constexpr double kDefaultTuneMargin = 0.05;

// `medians` may come in any order; sizes must be distinct and non-zero. margin is in [0, 1).
Crossover findCrossover(std::vector<SizeMedians> medians, double margin = kDefaultTuneMargin);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// symmem-bench's command line, parsed strictly and without touching the machine (so the tests can run
// it on CPU): every value is checked before a rank is forked.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/sym_variant.h"
#include "tools/common/cli_values.h"

namespace symmem {

struct BenchOptions {
  size_t minBytes = 8;                  // -b
  size_t maxBytes = 64u << 20;          // -e
  int factor = 2;                       // -f
  DataType dtype = DataType::Bfloat16;  // --dtype bfloat16|half|float (or bf16|fp16|fp32)
  std::string csv;                      // --csv
  int iters = 200;                      // --iters: calls per timed batch
  int reps = 7;                         // --reps: timed repetitions
  int nGpus = 0;                        // --ngpus: 0 = every GPU device node
  size_t oneShotMax = 1u << 20;         // --one-shot-max: 0 turns the one-shot kernel off
  size_t twoShotMax = 64u << 20;        // --two-shot-max: 0 turns the two-shot kernel off
  int maxBlocks = 0;                    // --max-blocks: 0 = the kernels' own cap
  int64_t timeoutMs = 10000;            // the kernels' peer wait
  int timeoutSec = 540;                 // --timeout-s: the whole run
  bool eager = true;                    // --no-eager
  bool pdl = true;                      // --no-pdl
  bool streamOrder = true;              // --no-stream-order
  // --variants: the kernel variants measured, each once, in the order push, pull, staged, halves whatever
  // the order on the command line (the table's columns stay put from run to run). Halves only where the
  // ranks form two halves (measuredVariants, tools/bench/paths.h).
  std::vector<SymVariant> variants = {SymVariant::Push, SymVariant::Pull, SymVariant::Staged, SymVariant::Halves};
  // --halves: the ranks' halves, one per rank (0 or 1), declared instead of found in the topology; as
  // many as the ranks (checked when their number is known).
  std::vector<int> halves;
  bool help = false;  // -h / --help
};

using BenchArgsResult = ArgsResult<BenchOptions>;

BenchArgsResult parseBenchArgs(const std::vector<std::string>& args);  // args without the program name

std::string benchUsage();

// Why the bench cannot run with `gpus` (fewer than 2) GPUs found, in one line.
std::string tooFewGpusText(int gpus);

}  // namespace symmem

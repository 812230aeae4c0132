// SPDX-License-Identifier: Apache-2.0
#include "tools/bench/options.h"

#include <algorithm>
#include <functional>
#include <map>
#include <string_view>

#include "core/symmetric_limits.h"
#include "core/table_file.h"
#include "tools/common/cli_values.h"
#include "tools/common/forked_ranks.h"
#include "tools/common/rank_halves.h"

namespace symmem {

namespace {

constexpr const char* kTool = "symmem-bench";
constexpr uint64_t kMaxMessageBytes = 16ull << 30;
constexpr int64_t kMaxTimeoutSec = 7 * 24 * 3600;

// --variants: "push,staged" -> {Push, Staged}. Every name once (a repeat is refused: it would time the
// same kernels twice under one column), no empty names; the result is in the variants' own order.
std::string parseVariantList(const std::string& flag, const std::string& text, std::vector<SymVariant>& out) {
  const std::string expected = "expected a comma-separated list of push, pull, staged and halves, each at most once";
  std::vector<bool> named(kNumSymVariants, false);
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view item =
        std::string_view(text).substr(start, comma == std::string::npos ? comma : comma - start);
    if (item.empty()) return "bad " + flag + " '" + text + "': empty name; " + expected;
    const std::optional<SymVariant> v = parseSymVariant(item);
    if (!v) return "bad " + flag + " '" + text + "': no variant '" + std::string(item) + "'; " + expected;
    if (named[static_cast<int>(*v)])
      return "bad " + flag + " '" + text + "': '" + std::string(item) + "' named twice; " + expected;
    named[static_cast<int>(*v)] = true;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  out.clear();
  for (int i = 0; i < kNumSymVariants; ++i)
    if (named[i]) out.push_back(static_cast<SymVariant>(i));
  return {};
}

}  // namespace

std::string tooFewGpusText(int gpus) {
  if (gpus <= 0)
    return "symmem-bench: no NVIDIA GPU on this machine (no /dev/nvidiaN device node); it measures all-reduces "
           "across 2 or more GPUs";
  return "symmem-bench: needs at least 2 GPUs, and this machine has " + std::to_string(gpus) +
         " (--ngpus N sets the count where the device nodes do not show every GPU)";
}

std::string benchUsage() {
  return "usage: symmem-bench [-b MIN] [-e MAX] [-f FACTOR] [--dtype bfloat16|half|float] [--csv PATH]\n"
         "                    [--iters N] [--reps N] [--ngpus N] [--one-shot-max BYTES] [--two-shot-max BYTES]\n"
         "                    [--variants LIST] [--max-blocks N] [--no-pdl] [--no-stream-order] [--no-eager]\n"
         "                    [--halves LIST] [--timeout-s S]\n"
         "Times the all-reduce side by side: stock NCCL, NCCL's symmetric windows, and this project's one-shot\n"
         "and two-shot kernels in each variant asked; eager and in CUDA graphs, every result checked once.\n"
         "  --variants LIST  comma-separated kernel variants to run (default: push,pull,staged,halves):\n"
         "      push    every rank writes its data into every peer's buffer at once\n"
         "      pull    each rank publishes its data in its own buffer and the peers read it over P2P\n"
         "      staged  pushes to one peer per step (peer rank+k at step k): one stream out, one in per GPU\n"
         "      halves  reduces inside each half, one flow per GPU across the middle to its partner; only where\n"
         "              the GPUs form two halves of 2 or more (two sockets, two switches), else skipped saying why\n"
         "  --halves LIST  the ranks' halves, one per rank (0,0,1,1), declared instead of found in the topology\n"
         "paths (the CSV's path column): nccl, nccl-win, one-shot and two-shot (push), one-shot-pull,\n"
         "two-shot-pull, one-shot-staged, two-shot-staged, one-shot-halves, two-shot-halves\n"
         "sizes accept K/M/G suffixes (K = 1024); defaults: -b 8 -e 64M -f 2, bfloat16 sum, 200 iters, 7 reps,\n"
         "every GPU, --one-shot-max 1M --two-shot-max 64M (0 turns a kernel off, at most 1G), --timeout-s 540\n";
}

BenchArgsResult parseBenchArgs(const std::vector<std::string>& args) {
  BenchArgsResult result;
  BenchOptions& o = result.options;
  auto count = [](int& field, int64_t min, int64_t max) {
    return [&field, min, max](const std::string& flag, const std::string& v) {
      int64_t n = 0;
      std::string why = parseCountArg(flag, v, min, max, n);
      if (why.empty()) field = static_cast<int>(n);
      return why;
    };
  };
  auto size = [](size_t& field, uint64_t min, uint64_t max) {
    return [&field, min, max](const std::string& flag, const std::string& v) {
      uint64_t b = 0;
      std::string why = parseSizeArg(flag, v, min, max, b);
      if (why.empty()) field = static_cast<size_t>(b);
      return why;
    };
  };
  using Parser = std::function<std::string(const std::string&, const std::string&)>;
  const std::map<std::string, Parser> takesValue = {
      {"-b", size(o.minBytes, 1, kMaxMessageBytes)},
      {"-e", size(o.maxBytes, 1, kMaxMessageBytes)},
      {"-f", count(o.factor, 2, 1024)},
      {"--iters", count(o.iters, 1, 1000000)},
      {"--reps", count(o.reps, 1, 10000)},
      {"--ngpus", count(o.nGpus, 2, harness::kMaxForkedRanks)},
      {"--one-shot-max", size(o.oneShotMax, 0, kSymmetricMaxLimitBytes)},
      {"--two-shot-max", size(o.twoShotMax, 0, kSymmetricMaxLimitBytes)},
      {"--max-blocks", count(o.maxBlocks, 0, 65535)},
      {"--timeout-s", count(o.timeoutSec, 1, kMaxTimeoutSec)},
      {"--dtype",
       [&o](const std::string& flag, const std::string& v) { return parseMeasuredTypeArg(flag, v, o.dtype); }},
      {"--variants",
       [&o](const std::string& flag, const std::string& v) { return parseVariantList(flag, v, o.variants); }},
      {"--halves", [&o](const std::string& flag, const std::string& v) { return parseHalvesArg(flag, v, o.halves); }},
      {"--csv",
       [&o](const std::string& flag, const std::string& v) {
         if (v.empty()) return flag + " needs a file name";
         o.csv = v;
         return std::string();
       }},
  };
  const std::map<std::string, bool*> switches = {
      {"--no-eager", &o.eager}, {"--no-pdl", &o.pdl}, {"--no-stream-order", &o.streamOrder}};

  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      o.help = true;
      continue;
    }
    if (auto s = switches.find(a); s != switches.end()) {
      *s->second = false;
      continue;
    }
    const auto parser = takesValue.find(a);
    if (parser == takesValue.end()) {
      result.error = unknownOptionMessage(kTool, a);
      return result;
    }
    if (i + 1 >= args.size()) {
      result.error = a + " needs a value";
      return result;
    }
    if (std::string why = parser->second(a, args[++i]); !why.empty()) {
      result.error = std::move(why);
      return result;
    }
  }
  if (!o.halves.empty() && o.nGpus > 0 && static_cast<int>(o.halves.size()) != o.nGpus)
    result.error = "--halves names " + std::to_string(o.halves.size()) + " ranks; --ngpus " + std::to_string(o.nGpus) +
                   " runs " + std::to_string(o.nGpus);
  else if (!o.halves.empty() && std::find(o.variants.begin(), o.variants.end(), SymVariant::Halves) == o.variants.end())
    result.error = "--halves declares halves for the halves variant, which --variants leaves out";
  else if (o.minBytes > o.maxBytes)
    result.error = "-b " + formatBytes(o.minBytes) + " is above -e " + formatBytes(o.maxBytes);
  return result;
}

}  // namespace symmem

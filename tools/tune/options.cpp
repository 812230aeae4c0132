// SPDX-License-Identifier: Apache-2.0
#include "tools/tune/options.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "core/table_file.h"
#include "tools/common/cli_values.h"
#include "tools/common/sample_topologies.h"

namespace symmem {

namespace {

// "0,1,2,3" -> {0,1,2,3}; false on anything else (empty items, signs, duplicates). The range is
// checked by the caller, which names it.
bool parseIndexList(const std::string& text, std::vector<int>& out) {
  constexpr int kNoLimit = 1 << 30;
  return parseIndexListArg("", text, kNoLimit, out).empty();
}

bool isPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// "a,b,c" -> {"a", "b", "c"}; an empty item stays (the callers refuse it by name).
std::vector<std::string> commaItems(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

std::string lowered(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// --variants: "pull,push" -> {Push, Pull}. Each name at most once; the result in the variants' order.
std::string parseVariants(const std::string& text, std::vector<SymVariant>& out) {
  const std::string expected = "expected a comma-separated list of push, pull, staged and halves, each at most once";
  std::vector<bool> named(kNumSymVariants, false);
  for (const std::string& item : commaItems(text)) {
    const std::optional<SymVariant> v = parseSymVariant(item);
    if (!v)
      return "bad --variants '" + text + "': " + (item.empty() ? "empty name" : "no variant '" + item + "'") + "; " +
             expected;
    if (named[static_cast<size_t>(*v)]) return "bad --variants '" + text + "': '" + item + "' named twice; " + expected;
    named[static_cast<size_t>(*v)] = true;
  }
  out.clear();
  for (int i = 0; i < kNumSymVariants; ++i)
    if (named[static_cast<size_t>(i)]) out.push_back(static_cast<SymVariant>(i));
  return {};
}

// --nccl-configs: default, all, none, or a list like "ring/ll,tree/simple" (any case).
std::string parseNcclConfigs(const std::string& text, TuneOptions& o) {
  const std::string v = lowered(text);
  o.ncclConfigList.clear();
  if (v == "default" || v == "all" || v == "none") {
    o.ncclConfigs = v == "default" ? NcclConfigSet::Default : v == "all" ? NcclConfigSet::All : NcclConfigSet::None;
    return {};
  }
  const std::string expected =
      "expected default, all, none, or a comma-separated list of ALGO/PROTO with ALGO ring or tree and PROTO ll, "
      "ll128 or simple (ring/ll,tree/simple)";
  TunePathSet named;
  for (const std::string& item : commaItems(v)) {
    const size_t slash = item.find('/');
    const std::string algo = item.substr(0, slash);
    const std::string proto = slash == std::string::npos ? "" : item.substr(slash + 1);
    const NcclAlgo a = algo == "ring" ? NcclAlgo::Ring : algo == "tree" ? NcclAlgo::Tree : NcclAlgo::Any;
    const NcclProto p = proto == "ll"       ? NcclProto::LL
                        : proto == "ll128"  ? NcclProto::LL128
                        : proto == "simple" ? NcclProto::Simple
                                            : NcclProto::Any;
    const std::optional<TunePath> config = ncclConfigPath(a, p);
    if (!config) return "bad --nccl-configs '" + text + "': no configuration '" + item + "'; " + expected;
    if (named[static_cast<size_t>(tunePathIndex(*config))])
      return "bad --nccl-configs '" + text + "': '" + item + "' named twice; " + expected;
    named[static_cast<size_t>(tunePathIndex(*config))] = true;
  }
  for (int i = 0; i < kNumTunePaths; ++i)
    if (named[static_cast<size_t>(i)]) o.ncclConfigList.push_back(tunePathAt(i));
  o.ncclConfigs = NcclConfigSet::List;
  return {};
}

}  // namespace

std::string tuneUsage() {
  return "usage: symmem-tune [--gpus 0,1,...] [--ranks 2,4,...] [--min SIZE] [--max SIZE] [--margin PERCENT]\n"
         "                   [--variants LIST] [--halves LIST] [--nccl-configs default|all|none|LIST] [--csv FILE]\n"
         "                   [--quick] [--out FILE] [--iters N] [--reps N] [--rounds N] [--dtype bfloat16|half|float]\n"
         "                   [--nccl-lib PATH] [--timeout-s S] [--install | --install-system]\n"
         "                   [--plan [--topo FILE[,P2P_FILE]] [--cc X.Y]]\n"
         "Measures stock NCCL, NCCL forced to each ring/tree x ll/ll128/simple configuration, and the symmetric\n"
         "one-shot and two-shot all-reduce in each variant on this machine's GPUs (CUDA graphs, median of timed\n"
         "batches); per size it keeps the simplest path within the margin of the fastest, and writes symmetric\n"
         "and NCCL bands into a table file for SYMMEM_TABLE.\n"
         "  --gpus         GPUs to use, as nvidia-smi numbers them (default: all)\n"
         "  --ranks        world sizes to measure, 2..8 (default: 2, 4, 8 up to the GPU count, and the count)\n"
         "  --min/--max    smallest and largest message, powers of two with K/M/G suffixes (default 8 to 64M)\n"
         "  --margin       how much faster a path must be than a simpler one to be chosen (default 5%)\n"
         "  --variants     kernel variants to time, of push, pull, staged, halves (default: all four); halves only\n"
         "                 where the ranks' GPUs form two halves of 2 or more (else skipped, saying why)\n"
         "  --halves       the halves of the world of that many ranks, one per rank (0,0,1,1): declared instead\n"
         "                 of found in the topology; without --ranks, that world alone\n"
         "  --nccl-configs NCCL configurations to time beside stock NCCL: default (ring/tree x ll/simple, and\n"
         "                 ll128 where the link is NVLink), all, none, or a list like ring/ll,tree/simple\n"
         "  --csv          also write every median to FILE (ranks,link,cc,bytes,path,median_us,min_us,max_us,chosen)\n"
         "  --quick        every 4th power of two, 3 batches in 1 round, 100 calls per batch\n"
         "  --out          table file to write (default symmem-table.txt)\n"
         "  --install      write the table for this machine where the plugin finds it with no SYMMEM_TABLE:\n"
         "                 $XDG_CONFIG_HOME/nccl-symmem (default ~/.config/nccl-symmem), instead of --out\n"
         "  --install-system  the same in /etc/nccl-symmem, for every user of the machine\n"
         "  --iters        calls per timed graph at sizes up to 256 KiB (default 200; fewer above)\n"
         "  --reps         timed graph replays per path and round (default 7)\n"
         "  --rounds       rounds over the paths of one set of ranks, taken in turn (default 3)\n"
         "  --dtype        element type of the measured all-reduce: bfloat16, half or float, or bf16, fp16, fp32\n"
         "                 (default bfloat16)\n"
         "  --nccl-lib     NCCL library to load (default libnccl.so.2 from the library path)\n"
         "  --timeout-s    give up on one set of ranks (a world's stock run, or one NCCL configuration) after\n"
         "                 this many seconds (default 1800)\n"
         "  --plan         check the machine, print what would be measured and how long it may take; measure nothing\n"
         "  --topo         with --plan: plan for the machine this topology file describes (nvidia-smi topo -m, with\n"
         "                 its topo -p2p matrix after a comma, or hwloc XML), not this one; no GPU or NCCL needed\n"
         "  --cc           with --plan: the capability of the planned GPUs (a topology file names none)\n" +
         sampleTopologiesHelp("symmem-tune", sampleTopologiesDir());
}

TuneArgsResult parseTuneArgs(const std::vector<std::string>& args) {
  TuneArgsResult result;
  TuneOptions& o = result.options;
  bool itersSet = false, repsSet = false, roundsSet = false, outSet = false;
  auto fail = [&](std::string message) {
    result.error = std::move(message);
    return result;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      o.help = true;
      continue;
    }
    if (a == "--quick") {
      o.quick = true;
      continue;
    }
    if (a == "--plan") {
      o.planOnly = true;
      continue;
    }
    if (a == "--install" || a == "--install-system") {
      const TuneInstall where = a == "--install" ? TuneInstall::User : TuneInstall::System;
      if (o.install != TuneInstall::None && o.install != where)
        return fail("--install and --install-system name different places; give one");
      o.install = where;
      continue;
    }
    static const std::set<std::string> kTakesValue = {
        "--gpus",     "--ranks",        "--min",   "--max",    "--margin",   "--iters",
        "--reps",     "--rounds",       "--dtype", "--out",    "--nccl-lib", "--timeout-s",
        "--variants", "--nccl-configs", "--csv",   "--halves", "--topo",     "--cc"};
    if (!kTakesValue.count(a)) return fail(unknownOptionMessage("symmem-tune", a));
    if (i + 1 >= args.size()) return fail(a + " needs a value");
    const std::string& v = args[++i];
    uint64_t bytes = 0;
    int number = 0;
    if (a == "--gpus") {
      if (!parseIndexList(v, o.gpus)) return fail("--gpus takes distinct GPU numbers like 0,1,2,3, not '" + v + "'");
    } else if (a == "--ranks") {
      if (!parseIndexList(v, o.worldSizes))
        return fail("--ranks takes distinct world sizes like 2,4,8, not '" + v + "'");
      for (int w : o.worldSizes)
        if (w < 2 || w > 8)
          return fail("--ranks " + std::to_string(w) +
                      ": world sizes are 2..8 (the symmetric kernels take at most 8 ranks)");
      std::sort(o.worldSizes.begin(), o.worldSizes.end());
    } else if (a == "--min" || a == "--max") {
      if (!parseBytes(v, bytes) || !isPowerOfTwo(bytes))
        return fail(a + " takes a power-of-two size like 8, 4K, 64MiB, not '" + v + "'");
      (a == "--min" ? o.minBytes : o.maxBytes) = bytes;
    } else if (a == "--margin") {
      if (std::string why = parsePercentArg(a, v, 0, 50, o.margin); !why.empty()) return fail(why);
    } else if (a == "--iters" || a == "--reps" || a == "--rounds" || a == "--timeout-s") {
      int64_t parsed = 0;
      if (std::string why = parseCountArg(a, v, 1, 100000, parsed); !why.empty()) return fail(why);
      number = static_cast<int>(parsed);
      if (a == "--iters")
        o.callsPerBatch = number, itersSet = true;
      else if (a == "--reps")
        o.batchesPerRound = number, repsSet = true;
      else if (a == "--rounds")
        o.rounds = number, roundsSet = true;
      else
        o.timeoutSec = number;
    } else if (a == "--dtype") {
      if (const std::string e = parseMeasuredTypeArg(a, v, o.dtype); !e.empty()) return fail(e);
    } else if (a == "--out") {
      if (v.empty()) return fail("--out needs a file name");
      o.out = v;
      outSet = true;
    } else if (a == "--nccl-lib") {
      if (v.empty()) return fail("--nccl-lib needs a path");
      o.ncclLibrary = v;
    } else if (a == "--variants") {
      if (std::string why = parseVariants(v, o.variants); !why.empty()) return fail(why);
    } else if (a == "--halves") {
      if (std::string why = parseHalvesArg(a, v, o.halves); !why.empty()) return fail(why);
    } else if (a == "--nccl-configs") {
      if (std::string why = parseNcclConfigs(v, o); !why.empty()) return fail(why);
    } else if (a == "--csv") {
      if (v.empty()) return fail("--csv needs a file name");
      o.csv = v;
    } else if (a == "--topo") {
      o.topoFiles.clear();
      size_t start = 0;
      while (start <= v.size()) {
        const size_t comma = std::min(v.find(',', start), v.size());
        if (comma == start) return fail("--topo takes FILE or FILE,P2P_FILE, not '" + v + "'");
        o.topoFiles.push_back(v.substr(start, comma - start));
        start = comma + 1;
      }
    } else if (a == "--cc") {
      o.cc = parseCapability(v);
      if (!o.cc) return fail("--cc '" + v + "': " + kCapabilityForms);
    }
  }
  if ((!o.topoFiles.empty() || o.cc) && !o.planOnly)
    return fail(std::string(o.topoFiles.empty() ? "--cc" : "--topo") +
                " plans only (add --plan): a measurement runs on this machine's own GPUs");
  if (!o.topoFiles.empty() && o.install != TuneInstall::None)
    return fail("--install writes this machine's table; --topo plans for another machine");
  if (o.quick) {
    o.sizeStep = 4;
    if (!itersSet) o.callsPerBatch = 100;
    if (!repsSet) o.batchesPerRound = 3;
    if (!roundsSet) o.rounds = 1;
  }
  if (!o.halves.empty()) {
    const int n = static_cast<int>(o.halves.size());
    if (std::find(o.variants.begin(), o.variants.end(), SymVariant::Halves) == o.variants.end())
      return fail("--halves declares halves for the halves variant, which --variants leaves out");
    if (o.worldSizes.empty())
      o.worldSizes = {n};
    else if (std::find(o.worldSizes.begin(), o.worldSizes.end(), n) == o.worldSizes.end())
      return fail("--halves names " + std::to_string(n) + " ranks; --ranks has no world of " + std::to_string(n));
  }
  if (o.minBytes > o.maxBytes)
    return fail("--min " + formatBytes(o.minBytes) + " is above --max " + formatBytes(o.maxBytes));
  if (o.minBytes < tuneElementBytes(o))
    return fail("--min " + formatBytes(o.minBytes) + " is smaller than one " + std::string(dataTypeName(o.dtype)) +
                " element");
  if (o.maxBytes > (1ull << 30)) return fail("--max " + formatBytes(o.maxBytes) + " is above 1GiB");
  if (!o.csv.empty() && o.csv == o.out) return fail("--csv and --out name the same file (" + o.csv + ")");
  if (o.install != TuneInstall::None && outSet)
    return fail("--install and --install-system choose the table's file themselves; drop --out");
  return result;
}

std::vector<uint64_t> tuneSizes(const TuneOptions& options) {
  std::vector<uint64_t> sizes;
  for (uint64_t b = options.minBytes; b <= options.maxBytes; b *= static_cast<uint64_t>(options.sizeStep))
    sizes.push_back(b);
  return sizes;
}

int callsForSize(uint64_t bytes, int callsPerBatch) {
  constexpr uint64_t kFullCountUpTo = 256 * 1024;
  if (bytes <= kFullCountUpTo) return callsPerBatch;
  const uint64_t scaled = static_cast<uint64_t>(callsPerBatch) * kFullCountUpTo / bytes;
  return static_cast<int>(std::max<uint64_t>(scaled, std::min(10, callsPerBatch)));
}

size_t tuneElementBytes(const TuneOptions& options) { return dataTypeSize(options.dtype); }

std::vector<TunePath> ncclConfigsFor(const TuneOptions& options, LinkClass link) {
  switch (options.ncclConfigs) {
    case NcclConfigSet::None:
      return {};
    case NcclConfigSet::List:
      return options.ncclConfigList;
    case NcclConfigSet::Default:
    case NcclConfigSet::All:
      break;
  }
  std::vector<TunePath> configs;
  for (int i = 0; i < kNumTunePaths; ++i) {
    const TunePath p = tunePathAt(i);
    if (!isNcclConfig(p)) continue;
    // On PCIe NCCL leaves LL128 off (it needs 128-byte stores seen in order): a band for it would not apply.
    if (options.ncclConfigs == NcclConfigSet::Default && ncclProtoOf(p) == NcclProto::LL128 &&
        link != LinkClass::NvLink)
      continue;
    configs.push_back(p);
  }
  return configs;
}

std::vector<TunePath> symmetricPathsFor(const TuneOptions& options) {
  std::vector<TunePath> paths;
  for (SymAlgo algo : {SymAlgo::OneShot, SymAlgo::TwoShot})
    for (SymVariant v : options.variants) paths.push_back(symmetricPath(algo, v));
  return paths;
}

}  // namespace symmem

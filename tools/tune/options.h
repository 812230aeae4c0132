// SPDX-License-Identifier: Apache-2.0
#pragma once
// symmem-tune's command line, parsed without touching the machine (so the tests can run it on CPU).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/capability.h"
#include "core/link_class.h"
#include "core/sym_variant.h"
#include "tools/common/cli_values.h"
#include "tools/common/rank_halves.h"
#include "tools/tune/crossover.h"

namespace symmem {

// Which NCCL configurations (forced algorithm/protocol, tools/tune/crossover.h) are timed beside stock NCCL.
enum class NcclConfigSet {
  Default,  // ring/tree x ll/simple everywhere, and x ll128 where the world's link is NVLink (NCCL leaves
            // LL128 off on PCIe, so a band for it would not apply there)
  All,      // all six, LL128 on PCIe too
  None,     // stock NCCL only
  List,     // the configs in TuneOptions::ncclConfigList
};

// Where --install puts the table: nowhere (--out), the user's directory, or the system's.
enum class TuneInstall { None, User, System };

struct TuneOptions {
  std::vector<int> gpus;            // --gpus: NVML / nvidia-smi indices; empty: every GPU of the node
  std::vector<int> worldSizes;      // --ranks: empty: 2, 4, 8, ... up to the GPU count, plus the count itself
  uint64_t minBytes = 8;            // --min
  uint64_t maxBytes = 64ull << 20;  // --max
  int sizeStep = 2;                 // x2 between measured sizes; --quick: x4
  double margin = 0.05;  // --margin (percent on the command line): how much faster than a simpler path a path must be
  int callsPerBatch = 200;  // --iters: calls captured in one graph at small sizes (fewer for large sizes)
  int batchesPerRound = 7;  // --reps: timed graph replays per path and round
  int rounds = 3;           // --rounds: the paths are timed in turn, this many times (drift hits them alike)
  DataType dtype = DataType::Bfloat16;       // --dtype bfloat16|half|float (or bf16|fp16|fp32)
  std::string out = "symmem-table.txt";      // --out
  std::string ncclLibrary = "libnccl.so.2";  // --nccl-lib
  int timeoutSec = 1800;  // --timeout-s: per set of ranks (a world's stock set, one NCCL configuration)
  // --variants: the kernel variants timed (one-shot and two-shot of each), in the order push, pull, staged,
  // halves. Halves only where the ranks form two halves (plan.h); elsewhere it is skipped, with a note.
  std::vector<SymVariant> variants = {SymVariant::Push, SymVariant::Pull, SymVariant::Staged, SymVariant::Halves};
  // --halves: the halves of the world of halves.size() ranks, declared (one half per rank, 0 or 1; checked:
  // two equal halves of at least 2 ranks, rank 0 in half 0) instead of found in the topology. Empty: the
  // topology's.
  std::vector<int> halves;
  NcclConfigSet ncclConfigs = NcclConfigSet::Default;  // --nccl-configs default|all|none|LIST
  std::vector<TunePath> ncclConfigList;                // with LIST: in the candidates' order
  std::string csv;                                     // --csv: every median to this file ("": none)
  bool quick = false;                                  // --quick
  bool planOnly = false;  // --plan: check the machine, print what would be measured and the estimate, then exit
  // With --plan only: plan for the machine these topology files describe (--topo FILE[,P2P_FILE], as
  // SYMMEM_TOPO_FILE takes them) instead of this one, its GPUs of capability --cc (a file names none).
  std::vector<std::string> topoFiles;
  std::optional<ComputeCapability> cc;
  // --install / --install-system: write the table where the plugin finds it without SYMMEM_TABLE
  // (core/installed_table.h), in place of --out.
  TuneInstall install = TuneInstall::None;
  bool help = false;
};

using TuneArgsResult = ArgsResult<TuneOptions>;

TuneArgsResult parseTuneArgs(const std::vector<std::string>& args);  // args without the program name

std::string tuneUsage();

// The measured sizes: minBytes, minBytes * step, ... up to maxBytes.
std::vector<uint64_t> tuneSizes(const TuneOptions& options);

// Calls in one timed graph for a message of `bytes`: the full count up to 256 KiB, then fewer so a
// large size does not take minutes, never below 10 (or the full count, if that is smaller). The same
// on every rank: each rank's graph must hold the same collectives.
int callsForSize(uint64_t bytes, int callsPerBatch);

// Element size of --dtype.
size_t tuneElementBytes(const TuneOptions& options);

// The NCCL configurations timed for a world whose link is `link`, in the candidates' order.
std::vector<TunePath> ncclConfigsFor(const TuneOptions& options, LinkClass link);
// The symmetric paths timed: one-shot of each variant, then two-shot of each.
std::vector<TunePath> symmetricPathsFor(const TuneOptions& options);

}  // namespace symmem

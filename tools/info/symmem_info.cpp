// SPDX-License-Identifier: Apache-2.0
// symmem-info: what the plugin would do, and why.
//
//   symmem-info                         detected machine, or the bundled default without GPUs; the
//                                       first line is the verdict (sizes on the symmetric kernels, and
//                                       whether NCCL_TUNER_PLUGIN in this shell loads the plugin)
//   symmem-info --cc 12.0 --link pcie-switch --ranks 4
//   symmem-info --topo FILE             classified topology (nvidia-smi topo -m text, hwloc XML)
//   symmem-info --env                   the settings table docs/settings.md carries
//   symmem-info --check [--table F]     validate the table/topology files and settings (exit 1 on a problem)
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/collective.h"
#include "core/decision.h"
#include "core/decision_table.h"
#include "core/setting_names.h"
#include "core/settings.h"
#include "core/symmetric_limits.h"
#include "core/table_file.h"
#include "plugin/nccl/nccl_support.h"
#include "plugin/process/process.h"
#include "plugin/process/process_context.h"
#include "plugin/process/table_in_force.h"
#include "symmem/version.h"
#include "tools/common/nccl_library.h"
#include "tools/common/sample_topologies.h"
#include "tools/info/check.h"
#include "tools/info/expectations.h"
#include "tools/info/plugin_load_check.h"
#include "tools/info/topology.h"
#include "topology/halves.h"

namespace {

using namespace symmem;

struct Options {
  std::optional<ComputeCapability> cc;
  std::optional<LinkClass> link;
  std::optional<int> ranks;
  std::string topoFile;
  std::string tableFile;
  std::string pluginPath;
  DataType dtype = DataType::Bfloat16;
  ReduceOp op = ReduceOp::Sum;
  bool env = false;
  bool dumpTable = false;
  bool check = false;
  bool defaultMachine = false;
  bool p2p = true;
};

void usage(FILE* out) {
  fprintf(out,
          "usage: symmem-info [--cc X.Y] [--link nvlink|pcie-switch|pcie-root|pcie-sys] [--ranks N]\n"
          "                   [--topo FILE] [--dtype bfloat16|half|float] [--op sum|prod|min|max] [--no-p2p]\n"
          "                   [--table FILE] [--default-machine] [--plugin PATH]\n"
          "       symmem-info --env           the SYMMEM_* settings as the Markdown table of docs/settings.md\n"
          "       symmem-info --dump-table    the decision table in use, in table-file format (a start for edits)\n"
          "       symmem-info --check         check the table file (--table or SYMMEM_TABLE), the topology file\n"
          "                                   (--topo or SYMMEM_TOPO_FILE) and the settings; each problem on one\n"
          "                                   line, exit 1 when there is one, 0 when all is clean\n"
          "--table FILE uses FILE instead of SYMMEM_TABLE; --default-machine shows the bundled default machine\n"
          "whatever GPUs this machine has; --cc overrides SYMMEM_CC, which overrides the detected capability.\n"
          "Prints first the verdict (which sizes take the symmetric kernels; whether NCCL_TUNER_PLUGIN here loads\n"
          "the plugin), then the version, the NCCL in use, the SYMMEM_* settings, the decision for every power-of-two\n"
          "all-reduce size from 8 B to 256 MiB, and what to expect against NCCL on boxes of this kind (published\n"
          "figures, each with its source, and the time per decode step of 120 all-reduces). Without GPUs and\n"
          "without arguments it shows the bundled default: 8x RTX PRO 6000 Blackwell (capability 12.0) on PCIe,\n"
          "dual socket.\n");
  fputs(sampleTopologiesHelp("symmem-info", sampleTopologiesDir()).c_str(), out);
}

bool parseArgs(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        fprintf(stderr, "symmem-info: %s needs a value\n", name);
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      exit(0);
    } else if (a == "--env") {
      o.env = true;
    } else if (a == "--dump-table") {
      o.dumpTable = true;
    } else if (a == "--check") {
      o.check = true;
    } else if (a == "--default-machine") {
      o.defaultMachine = true;
    } else if (a == "--table") {
      const char* v = value("--table");
      if (!v) return false;
      o.tableFile = v;
    } else if (a == "--no-p2p") {
      o.p2p = false;
    } else if (a == "--cc") {
      const char* v = value("--cc");
      if (!v || !(o.cc = parseCapability(v))) {
        fprintf(stderr, "symmem-info: bad --cc '%s' (%s)\n", v ? v : "", kCapabilityForms);
        return false;
      }
    } else if (a == "--link") {
      const char* v = value("--link");
      if (!v || !(o.link = parseLinkClass(v)) || *o.link == LinkClass::Unknown) {
        fprintf(stderr, "symmem-info: bad --link '%s' (nvlink, pcie-switch, pcie-root, pcie-sys)\n", v ? v : "");
        return false;
      }
    } else if (a == "--ranks") {
      const char* v = value("--ranks");
      int64_t n = 0;
      if (!v || !parseInt64(v, n) || n < 1 || n > 1024) {
        fprintf(stderr, "symmem-info: bad --ranks '%s' (1 to 1024)\n", v ? v : "");
        return false;
      }
      o.ranks = static_cast<int>(n);
    } else if (a == "--plugin") {
      const char* v = value("--plugin");
      if (!v) return false;
      o.pluginPath = v;
    } else if (a == "--topo") {
      const char* v = value("--topo");
      if (!v) return false;
      o.topoFile = v;
    } else if (a == "--dtype") {
      const char* v = value("--dtype");
      if (!v) return false;
      o.dtype = dataTypeFromName(v);
      if (o.dtype == DataType::Other) {
        fprintf(stderr,
                "symmem-info: bad --dtype '%s': expected one of NCCL's names (bfloat16, half, float, double, int32, "
                "...) or bf16, fp16, fp32, fp64\n",
                v);
        return false;
      }
    } else if (a == "--op") {
      const char* v = value("--op");
      if (!v) return false;
      std::string s = v;
      if (s == "sum")
        o.op = ReduceOp::Sum;
      else if (s == "prod")
        o.op = ReduceOp::Prod;
      else if (s == "min")
        o.op = ReduceOp::Min;
      else if (s == "max")
        o.op = ReduceOp::Max;
      else if (s == "avg")
        o.op = ReduceOp::Avg;
      else {
        fprintf(stderr, "symmem-info: bad --op '%s'\n", v);
        return false;
      }
    } else {
      fprintf(stderr, "symmem-info: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return false;
    }
  }
  return true;
}

// The loaded NCCL's version, and on a second line what the plugin does with it.
std::string loadedNcclVersion() {
  const char* candidates[] = {"libnccl.so.2", SYMMEM_BUILT_NCCL_LIBRARY};
  for (const char* name : candidates) {
    NcclLibrary nccl = loadNcclLibrary(name);
    if (nccl.handle == nullptr) continue;
    int code = 0;
    std::string result =
        nccl.getVersion && nccl.getVersion(&code) == ncclSuccess
            ? ncclVersionText(code) + " (" + name + ")\n  with it:          " + ncclSupport(code).summary
            : "unknown";
    // Only the version is wanted here: the library is closed again.
    unloadNcclLibrary(nccl);
    return result;
  }
  return "not loadable here (libnccl.so.2 not on the library path)";
}

void printSettings(const Settings& settings, const std::vector<std::string>& unknownNames) {
  printf("settings:\n");
  for (const SettingSpec& spec : settingSpecs()) {
    const SettingValue& v = settings.value(spec.id);
    std::string shown = v.text.empty() ? "(unset)" : v.text;
    std::string source(settingSourceName(v.source));
    if (v.source == SettingSource::InvalidUsedDefault) source += ": '" + v.raw + "'";
    printf("  %-18s = %-12s [%s]\n", spec.name, shown.c_str(), source.c_str());
  }
  for (const std::string& w : unknownNames) printf("  warning: %s\n", w.c_str());
}

// The buffer every GPU allocates for the entry (the symmetric setup refuses what the rule refuses:
// then no call takes the symmetric path).
uint64_t printBuffer(const Thresholds& entry, int nRanks) {
  const uint64_t largest = std::max(entry.oneShotMaxBytes, entry.twoShotMaxBytes);
  if (largest == 0) {
    printf("  symmetric buffer: none (both symmetric paths off)\n");
    return 0;
  }
  if (const std::string why = symmetricLimitProblem(nRanks, entry.oneShotMaxBytes, entry.twoShotMaxBytes);
      !why.empty()) {
    printf("  symmetric buffer: refused by the setup (%s); every call stays on NCCL\n", why.c_str());
    return 0;
  }
  printf("  symmetric buffer: %s per GPU (cap %s)\n",
         approximateBytes(symmetricBufferBytes(nRanks, entry.oneShotMaxBytes, entry.twoShotMaxBytes)).c_str(),
         formatBytes(kSymmetricBufferCapBytes).c_str());
  return largest;
}

// "oneshot pull <=16KiB, twoshot pull <=128KiB": the entry's symmetric bands in order, or "none".
std::string symBandsText(const Thresholds& entry) {
  std::string text;
  for (int i = 0; i < entry.numSymBands; ++i) {
    const SymBand& b = entry.symBands[i];
    text += (i ? ", " : "") + std::string(symAlgoName(b.algo)) + " " + std::string(symVariantName(b.variant)) +
            " <=" + formatBytes(b.maxBytes);
  }
  return text.empty() ? "none" : text;
}

void printDecisions(const DecisionTable& table, const CommFacts& baseFacts, const Policy& policy, DataType dtype,
                    ReduceOp op, const char* ccSource) {
  const TableLookup found = lookupWithFallbackWarning(table, baseFacts.cc, baseFacts.link, baseFacts.nRanks);
  CommFacts facts = baseFacts;
  if (found.entry) {
    auto limit = [](uint64_t b) { return b ? "<=" + formatBytes(b) : std::string(" off"); };
    printf("table entry: cc=%s link=%s ranks=%s oneshot%s twoshot%s bands=%d%s\n  source: %s\n",
           found.used.str().c_str(), std::string(linkClassName(found.entry->link)).c_str(),
           found.entry->nRanks == kBeyondEightRanks ? "9+" : std::to_string(found.entry->nRanks).c_str(),
           limit(found.entry->oneShotMaxBytes).c_str(), limit(found.entry->twoShotMaxBytes).c_str(),
           found.entry->numBands, found.exact ? "" : "  (nearest lower capability: unlisted GPU)", found.entry->source);
    printf("  symmetric bands: %s\n", symBandsText(*found.entry).c_str());
    // The interposer sizes its buffers for the largest message the table sends to the symmetric path.
    if (facts.nRanks <= kSymmetricMaxRanks) facts.symmetricCapacityBytes = printBuffer(*found.entry, facts.nRanks);
  } else {
    printf("table entry: none (every call stays on NCCL)\n");
  }
  printf("\nall-reduce %s %s, %d ranks, cc %s%s, link %s, P2P %s%s:\n", std::string(dataTypeName(dtype)).c_str(),
         std::string(reduceOpName(op)).c_str(), facts.nRanks, facts.cc.known() ? facts.cc.str().c_str() : "unknown",
         ccSource, std::string(linkClassName(facts.link)).c_str(), facts.allPairsP2p ? "yes" : "no",
         facts.halves == 2 ? ", two halves" : "");
  printf("  %10s  %-26s  %s\n", "bytes", "path", "why");
  for (uint64_t bytes = 8; bytes <= (256ull << 20); bytes *= 2) {
    const CollRequest request{Collective::AllReduce, op, dtype, bytes};
    const Decision d = decide(request, facts, found.entry, policy);
    std::string path(pathName(d.path));
    if (d.symmetric()) path.append(" ").append(symVariantName(d.variant));
    if (d.path == Path::NcclTuned) {
      path.append(" ").append(ncclAlgoName(d.algo)).append("/").append(ncclProtoName(d.proto));
      if (d.nChannels) path += " ch" + std::to_string(d.nChannels);
    }
    printf("  %10s  %-26s  %s\n", formatBytes(bytes).c_str(), path.c_str(), std::string(reasonText(d.reason)).c_str());
  }
}

// The table in use: --table FILE over the built-in one (a bad file is an error here: the user named
// it), else the one the plugin chooses for `machine` (SYMMEM_TABLE, a table installed for it, or
// the built-in one; plugin/process/table_in_force.h), said in `why`.
bool tableInUse(const Options& opt, const Topology& machine, DecisionTable& table, std::string* why = nullptr) {
  if (opt.tableFile.empty()) {
    const TableInForce inForce = tableInForce(Process::get().settings(), machine, thisDriverMajor());
    table = inForce.table;
    if (why) {
      *why = "Decision table: " + std::string(tableSourceName(inForce.choice.source)) +
             (inForce.choice.path.empty() ? "" : " " + inForce.choice.path) + " (" + inForce.choice.why + ")\n";
      for (const std::string& line : inForce.choice.ignored) *why += "  " + line + "\n";
    }
    return true;
  }
  if (why) *why = "Decision table: --table " + opt.tableFile + "\n";
  const TableFileResult file = readTableFile(opt.tableFile);
  if (!file.ok()) {
    fprintf(stderr, "symmem-info: %s\n", file.error.c_str());
    return false;
  }
  table = DecisionTable::builtIn();
  applyTableFile(file, table);
  return true;
}

// The symmetric buffer the setup would give `entry` (0: none, or refused), as printBuffer says it.
uint64_t symmetricCapacity(const Thresholds& entry, int nRanks) {
  if (nRanks > kSymmetricMaxRanks) return 0;
  if (!symmetricLimitProblem(nRanks, entry.oneShotMaxBytes, entry.twoShotMaxBytes).empty()) return 0;
  return std::max(entry.oneShotMaxBytes, entry.twoShotMaxBytes);
}

// What NCCL_TUNER_PLUGIN (`value`, null when unset) makes of the plugin in processes started from this
// shell. NCCL takes "none" for no plugin, and a name as libnccl-tuner-<name>.so or as the file itself.
std::string tunerPluginVerdict(const char* value) {
  if (value == nullptr || *value == '\0') return "NCCL_TUNER_PLUGIN unset: the plugin is inactive in this shell";
  const std::string v = value;
  if (strcasecmp(value, "none") == 0) return "NCCL_TUNER_PLUGIN=none: NCCL loads no tuner plugin in this shell";
  const std::string base = v.substr(v.rfind('/') == std::string::npos ? 0 : v.rfind('/') + 1);
  if (v != "symmem" && base != "libnccl-tuner-symmem.so")
    return "NCCL_TUNER_PLUGIN=" + v + " names another tuner plugin: this one is inactive in this shell";
  if (v.find('/') != std::string::npos && access(v.c_str(), R_OK) != 0)
    return "NCCL_TUNER_PLUGIN=" + v + " does not exist: NCCL loads no tuner plugin";
  return "NCCL_TUNER_PLUGIN=" + v + ": NCCL loads this plugin in this shell";
}

// The bottom line, printed first: "8 ranks, pcie-sys: symmetric kernels up to 128KiB, NCCL above;
// NCCL_TUNER_PLUGIN unset: the plugin is inactive in this shell".
std::string verdictLine(const DecisionTable& table, CommFacts facts, const Policy& policy, DataType dtype, ReduceOp op,
                        const Settings& settings, bool pluginLoads) {
  const TableLookup found = lookupWithFallbackWarning(table, facts.cc, facts.link, facts.nRanks);
  if (found.entry) facts.symmetricCapacityBytes = symmetricCapacity(*found.entry, facts.nRanks);
  uint64_t largestSymmetric = 0;
  std::string whyNot;
  for (uint64_t bytes = 8; bytes <= (256ull << 20); bytes *= 2) {
    const Decision d = decide(CollRequest{Collective::AllReduce, op, dtype, bytes}, facts, found.entry, policy);
    if (d.symmetric())
      largestSymmetric = bytes;
    else if (whyNot.empty())
      whyNot = std::string(reasonText(d.reason));
  }
  std::string line = std::to_string(facts.nRanks) + " ranks, " + std::string(linkClassName(facts.link)) + ": ";
  line += largestSymmetric ? "symmetric kernels up to " + formatBytes(largestSymmetric) + ", NCCL above"
                           : "NCCL at every size: " + whyNot;
  line += "; " + tunerPluginVerdict(std::getenv("NCCL_TUNER_PLUGIN"));
  if (!settings.flag(SettingId::Enable)) line += "; SYMMEM_ENABLE=0: it would change nothing";
  if (!pluginLoads) line += "; the plugin check below FAILED";
  return line;
}

// The halves of ranks 0..nRanks-1 as the plugin's setup gives them (plugin/interpose/comm_setup.cpp):
// SYMMEM_HALVES=auto those of the machine's first nRanks GPUs (topology/halves.h), split the first and second half of
// the ranks, off none. A band naming the halves variant runs it only where they exist.
void addHalves(const Topology& topology, const Settings& settings, CommFacts& facts) {
  const int n = facts.nRanks;
  const HalvesMode mode = halvesModeFrom(settings);
  if (mode == HalvesMode::Off || n < 2 || n > kMaxHalvesRanks) return;
  std::vector<int> halfOf(static_cast<size_t>(n));
  if (mode == HalvesMode::Split) {
    if (n < 4 || n % 2 != 0) return;
    for (int r = 0; r < n; ++r) halfOf[static_cast<size_t>(r)] = r >= n / 2 ? 1 : 0;
    facts.middle = facts.link;
  } else {
    if (n > topology.gpuCount()) return;
    std::vector<int> gpus(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) gpus[static_cast<size_t>(r)] = r;
    const Halves h = halvesOf(topology, gpus);
    if (!h.ok) return;
    halfOf = h.halfOf;
    facts.middle = middleLinkClass(h.level);
  }
  facts.halves = 2;
  for (int r = 0; r < n; ++r)
    facts.halfOf[static_cast<size_t>(r)] = static_cast<uint8_t>(halfOf[static_cast<size_t>(r)]);
}

int check(const Options& opt, const Settings& settings, const std::vector<std::string>& unknownNames) {
  CheckInputs in;
  in.tablePath = !opt.tableFile.empty() ? opt.tableFile : settings.text(SettingId::Table);
  in.topoPath = !opt.topoFile.empty() ? opt.topoFile : settings.text(SettingId::TopoFile);
  in.settings = &settings;
  in.unknownNames = unknownNames;
  const std::vector<std::string> problems = configurationProblems(in);
  for (const std::string& p : problems) printf("problem: %s\n", p.c_str());
  const std::string checked = "table " + (in.tablePath.empty() ? "(built-in)" : in.tablePath) + ", topology " +
                              (in.topoPath.empty() ? "(discovered)" : in.topoPath) + ", SYMMEM_* settings";
  if (problems.empty()) {
    printf("no problems (%s)\n", checked.c_str());
    return 0;
  }
  printf("%zu problem%s (%s)\n", problems.size(), problems.size() == 1 ? "" : "s", checked.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // keep stdout and the library's stderr warnings in order
  Options opt;
  if (!parseArgs(argc, argv, opt)) return 2;
  if (opt.env) {
    fputs(settingsMarkdownTable().c_str(), stdout);
    return 0;
  }
  DecisionTable table;
  if (opt.dumpTable) {
    if (!tableInUse(opt, Process::get().topology(), table)) return 1;
    fputs(formatTable(table.entries(), table.meta).c_str(), stdout);
    return 0;
  }

  const Settings& settings = Process::get().settings();
  const std::vector<std::string> unknownNames = unknownSettingWarnings(environ);
  if (opt.check) return check(opt, settings, unknownNames);

  // Facts: --topo file, else the detected node, else the bundled default; explicit flags win. Worked
  // out before anything is printed: the verdict comes first, and an error goes to stderr alone.
  const std::string topoFile = opt.defaultMachine      ? ""
                               : !opt.topoFile.empty() ? opt.topoFile
                                                       : settings.text(SettingId::TopoFile);
  MachineView machine = describeMachine(topoFile, settings, opt.defaultMachine);
  if (machine.failed) {
    fputs(machine.text.c_str(), stderr);
    return 1;
  }
  std::string tableWhy;
  if (!tableInUse(opt, machine.topology, table, &tableWhy)) return 1;

  CommFacts facts;
  facts.nNodes = 1;
  facts.nRanks = opt.ranks.value_or(machine.gpuCount);
  // The capability as the tuner takes it (plugin/process/process_context.cpp): SYMMEM_CC over the detected one;
  // --cc over both.
  const char* ccSource = "";
  facts.cc = machine.cc;
  if (const std::string& cc = settings.text(SettingId::Capability); !cc.empty()) {
    facts.cc = *parseCapability(cc);  // validated by the settings registry
    ccSource = " (SYMMEM_CC)";
  }
  if (opt.cc) {
    facts.cc = *opt.cc;
    ccSource = " (--cc)";
  }
  facts.link = opt.link.value_or(machine.link);
  facts.allPairsP2p = opt.p2p && (opt.link ? true : machine.allPairsP2p);
  addHalves(machine.topology, settings, facts);
  const PluginLoadReport load = checkPluginLoads(opt.pluginPath.empty() ? defaultPluginPath() : opt.pluginPath);
  const Policy policy = policyFrom(settings);

  printf("%s\n\n", verdictLine(table, facts, policy, opt.dtype, opt.op, settings, load.ok).c_str());
  printf("nccl-symmem %s\n", SYMMEM_VERSION_STRING);
  printf("NCCL built against: %s\n", SYMMEM_BUILT_NCCL_VERSION);
  printf("NCCL loaded:        %s\n", loadedNcclVersion().c_str());
  printSettings(settings, unknownNames);
  printf("\n");
  fputs(load.text.c_str(), stdout);
  printf("\n");
  fputs(machine.text.c_str(), stdout);
  printf("\n%s", tableWhy.c_str());
  printf("\n");
  printDecisions(table, facts, policy, opt.dtype, opt.op, ccSource);
  printf("\nwhat to expect against NCCL, %d ranks, %s (docs/your-box.md; every table: docs/sources.md):\n%s",
         facts.nRanks, std::string(linkClassName(facts.link)).c_str(),
         expectationText(facts.link, facts.nRanks, kAllReducesPerDecodeStep).c_str());
  return load.ok ? 0 : 1;
}

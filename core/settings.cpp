// SPDX-License-Identifier: Apache-2.0
#include "core/settings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <sstream>

#include "core/capability.h"
#include "core/log.h"

namespace symmem {

namespace {
constexpr int64_t kNoLimit = 0;

// The registry. Order here is the order of the docs table.
constexpr SettingSpec kSpecs[] = {
    {SettingId::Enable, "SYMMEM_ENABLE", SettingType::Bool, "1", kNoLimit, kNoLimit, nullptr,
     "Master switch. 0: the plugin changes nothing (NCCL's own choices, calls forwarded untouched)."},
    {SettingId::Symmetric, "SYMMEM_SYMMETRIC", SettingType::Bool, "1", kNoLimit, kNoLimit, nullptr,
     "Route eligible small all-reduces to the symmetric-memory kernels. 0: keep them on NCCL."},
    {SettingId::Tuner, "SYMMEM_TUNER", SettingType::Bool, "1", kNoLimit, kNoLimit, nullptr,
     "Apply the table's NCCL algorithm/protocol/channel bands through the tuner. 0: NCCL's own model."},
    {SettingId::Table, "SYMMEM_TABLE", SettingType::Path, "", kNoLimit, kNoLimit, nullptr,
     "Decision table file (written by symmem-tune) that overrides built-in entries with the same key. Unset: the table "
     "symmem-tune --install wrote for this machine, if any (docs/tuning.md)."},
    {SettingId::TopoFile, "SYMMEM_TOPO_FILE", SettingType::Path, "", kNoLimit, kNoLimit, nullptr,
     "Topology file (nvidia-smi topo -m text or hwloc XML) used instead of NVML/hwloc discovery."},
    {SettingId::Capability, "SYMMEM_CC", SettingType::Capability, "", kNoLimit, kNoLimit, nullptr,
     "Compute capability the decision assumes (e.g. 12.0), for planning with SYMMEM_TOPO_FILE; unset: detected."},
    {SettingId::ForcePath, "SYMMEM_FORCE_PATH", SettingType::Choice, "auto", kNoLimit, kNoLimit,
     "auto|oneshot|twoshot|nccl",
     "For testing: send every eligible all-reduce down one path instead of the table's choice."},
    {SettingId::TimeoutMs, "SYMMEM_TIMEOUT_MS", SettingType::Int, "600000", 1, 86400000, nullptr,
     "How long a kernel waits for a peer before it stops and the communicator's calls fail, in ms. As long "
     "as PyTorch's NCCL watchdog by default: ranks legitimately drift apart (checkpoints, evaluation)."},
    {SettingId::Attach, "SYMMEM_ATTACH", SettingType::Bool, "1", kNoLimit, kNoLimit, nullptr,
     "When loaded only as NCCL's tuner, bind the process's ncclAllReduce and lifecycle calls to the plugin."},
    {SettingId::Hooks, "SYMMEM_HOOKS", SettingType::Bool, "1", kNoLimit, kNoLimit, nullptr,
     "Attach by redirecting the code of libnccl's entry points, which reaches every caller (ctypes, dlsym). "
     "0, or where code cannot be patched: GOT rebinding only."},
    {SettingId::Disassembler, "SYMMEM_DISASSEMBLER", SettingType::Path, "", kNoLimit, kNoLimit, nullptr,
     "Zydis shared library the code hooks decode with (name or path); unset: the version the plugin was built for, "
     "looked for next to the plugin first, then on the library path."},
    {SettingId::P2pCheck, "SYMMEM_P2P_CHECK", SettingType::Bool, "1", kNoLimit, kNoLimit, nullptr,
     "At setup, write a pattern through every peer mapping and check it before trusting P2P."},
    {SettingId::LogDetail, "SYMMEM_LOG", SettingType::Choice, "info", kNoLimit, kNoLimit, "quiet|warn|info|trace",
     "Detail of the plugin's own messages: warn, info (one line per communicator), trace (per call). Whatever "
     "NCCL_DEBUG says, a few lines starting nccl-symmem: reach stderr once per process and cause (the plugin "
     "active and its table; code hooks refused; a driver too old); quiet: those too are left out."},
    {SettingId::SharedGpuTest, "SYMMEM_TEST_SHARED_GPU", SettingType::Bool, "0", kNoLimit, kNoLimit, nullptr,
     "For testing only: ranks in separate processes that share one GPU form a symmetric communicator (each with its "
     "own NCCL_HOSTID; tests/multiproc/launch_ranks.py). Holds only when every rank sets it. No latency figures."},
    {SettingId::Halves, "SYMMEM_HALVES", SettingType::Choice, "auto", kNoLimit, kNoLimit, "auto|off|split",
     "The two halves the halves variant runs over (docs/kernels.md, \"Two halves\"). auto: from the topology (two "
     "sockets, root complexes or switches). off: none, flat kernels only. split: ranks 0..n/2-1 and n/2..n-1, for a "
     "box whose topology cannot be read, and for testing. Every rank must say the same."},
    {SettingId::Stats, "SYMMEM_STATS", SettingType::Bool, "1", kNoLimit, kNoLimit, nullptr,
     "Count every all-reduce by route, reason, size and eager/captured, and publish the counts for symmem-stat "
     "(docs/live-stats.md); about 1 ns per call. 0: no counters, no file."},
    {SettingId::StatsDir, "SYMMEM_STATS_DIR", SettingType::Path, "", kNoLimit, kNoLimit, nullptr,
     "Directory of the live statistics file (one per process, mode 0600). Unset: /dev/shm. symmem-stat reads the "
     "same variable."},
    {SettingId::StatsGpu, "SYMMEM_STATS_GPU", SettingType::Choice, "sampled", kNoLimit, kNoLimit, "off|sampled|every",
     "With SYMMEM_STATS: what the symmetric kernels keep themselves, which graph replays need (the host sees a "
     "captured call once). sampled: every execution counted per algorithm, and one call in 64 of each kernel and "
     "size (the first always; a captured one on each replay) timed; every: every call timed; off: nothing. Cost "
     "per call: docs/live-stats.md."},
};
static_assert(std::size(kSpecs) == static_cast<size_t>(SettingId::kCount), "one spec per SettingId");

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool inChoices(const char* choices, const std::string& value) {
  std::string_view all(choices);
  size_t start = 0;
  while (start <= all.size()) {
    size_t bar = all.find('|', start);
    std::string_view one = all.substr(start, bar == std::string_view::npos ? all.size() - start : bar - start);
    if (one == value) return true;
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  return false;
}

// Returns the canonical text, or an error message.
bool canonical(const SettingSpec& spec, const std::string& raw, std::string& out, std::string& why) {
  const std::string v = trim(raw);
  switch (spec.type) {
    case SettingType::Bool: {
      bool b = false;
      if (!parseBool(v, b)) {
        why = "expected 0/1, true/false, yes/no or on/off";
        return false;
      }
      out.assign(1, b ? '1' : '0');  // not `= b ? "1" : "0"`, which GCC 12 at -O3 flags falsely (-Wrestrict)
      return true;
    }
    case SettingType::Int: {
      int64_t n = 0;
      if (!parseInt64(v, n)) {
        why = "expected an integer";
        return false;
      }
      if (n < spec.min || n > spec.max) {
        why = "out of range [" + std::to_string(spec.min) + ", " + std::to_string(spec.max) + "]";
        return false;
      }
      out = std::to_string(n);
      return true;
    }
    case SettingType::Choice: {
      const std::string l = lower(v);
      if (!inChoices(spec.choices, l)) {
        why = std::string("expected one of ") + spec.choices;
        return false;
      }
      out = l;
      return true;
    }
    case SettingType::Capability: {
      if (v.empty()) {
        out.clear();
        return true;
      }
      auto cc = parseCapability(v);
      if (!cc) {
        why = kCapabilityForms;
        return false;
      }
      out = cc->str();
      return true;
    }
    case SettingType::Path:
      out = v;  // existence is checked by the user of the path, which can say what it expected
      return true;
  }
  return false;
}
}  // namespace

std::span<const SettingSpec> settingSpecs() { return kSpecs; }

bool parseBool(std::string_view text, bool& out) {
  const std::string l = lower(text);
  if (l == "1" || l == "true" || l == "yes" || l == "on") {
    out = true;
    return true;
  }
  if (l == "0" || l == "false" || l == "no" || l == "off") {
    out = false;
    return true;
  }
  return false;
}

bool parseInt64(std::string_view text, int64_t& out) {
  if (text.empty()) return false;
  const char* b = text.data();
  const char* e = b + text.size();
  if (*b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && p == e && b != e;
}

Settings Settings::load(const EnvLookup& env, std::vector<std::string>* problems) {
  Settings s;
  s.values_.resize(std::size(kSpecs));
  for (const SettingSpec& spec : kSpecs) {
    SettingValue& v = s.values_[idx(spec.id)];
    v.text = spec.defaultValue;
    const char* raw = env ? env(spec.name) : nullptr;
    if (raw == nullptr) continue;
    v.raw = raw;
    std::string text, why;
    if (canonical(spec, v.raw, text, why)) {
      v.text = text;
      v.source = SettingSource::Environment;
    } else {
      v.source = SettingSource::InvalidUsedDefault;
      if (problems) {
        problems->push_back(std::string(spec.name) + "='" + v.raw + "' is not valid (" + why +
                            "); using the default '" + spec.defaultValue + "'");
      }
    }
  }
  // The user's configuration home, where installed tables are looked for (core/installed_table.h):
  // XDG's rule, an absolute $XDG_CONFIG_HOME, else $HOME/.config.
  auto absolute = [&](const char* name) -> std::string {
    const char* v = env ? env(name) : nullptr;
    return v != nullptr && v[0] == '/' ? std::string(v) : std::string();
  };
  s.userConfigHome_ = absolute("XDG_CONFIG_HOME");
  if (s.userConfigHome_.empty()) {
    const std::string home = absolute("HOME");
    if (!home.empty()) s.userConfigHome_ = home + "/.config";
  }
  return s;
}

int64_t Settings::integer(SettingId id) const {
  int64_t n = 0;
  parseInt64(values_[idx(id)].text, n);
  return n;
}

std::string_view settingSourceName(SettingSource s) {
  switch (s) {
    case SettingSource::Default:
      return "default";
    case SettingSource::Environment:
      return "environment";
    case SettingSource::InvalidUsedDefault:
      return "invalid, default used";
  }
  return "default";
}

std::string_view settingTypeName(SettingType t) {
  switch (t) {
    case SettingType::Bool:
      return "bool";
    case SettingType::Int:
      return "integer";
    case SettingType::Choice:
      return "choice";
    case SettingType::Path:
      return "path";
    case SettingType::Capability:
      return "capability";
  }
  return "?";
}

std::string settingsMarkdownTable() {
  std::ostringstream out;
  out << "| Variable | Type | Default | Allowed values | Meaning |\n";
  out << "|---|---|---|---|---|\n";
  for (const SettingSpec& spec : kSpecs) {
    std::string allowed;
    switch (spec.type) {
      case SettingType::Bool:
        allowed = "0/1, true/false, yes/no, on/off";
        break;
      case SettingType::Int:
        allowed = std::to_string(spec.min) + " .. " + std::to_string(spec.max);
        break;
      case SettingType::Choice:
        allowed = spec.choices;
        break;
      case SettingType::Path:
        allowed = "file path";
        break;
      case SettingType::Capability:
        allowed = "major.minor (12.0), a major alone (12), sm_120";
        break;
    }
    std::string def = spec.defaultValue[0] ? std::string("`") + spec.defaultValue + "`" : "(unset)";
    // '|' inside a cell would break the Markdown table.
    std::replace(allowed.begin(), allowed.end(), '|', ',');
    out << "| `" << spec.name << "` | " << settingTypeName(spec.type) << " | " << def << " | " << allowed << " | "
        << spec.meaning << " |\n";
  }
  return out.str();
}

}  // namespace symmem

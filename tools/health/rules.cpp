// SPDX-License-Identifier: Apache-2.0
#include "tools/health/rules.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "core/decision_table.h"
#include "core/sym_variant.h"
#include "core/text_columns.h"

namespace symmem {

std::string_view healthSeverityName(HealthSeverity s) {
  switch (s) {
    case HealthSeverity::Ok:
      return "ok";
    case HealthSeverity::Note:
      return "note";
    case HealthSeverity::Slow:
      return "slow";
    case HealthSeverity::NotUseful:
      return "not useful";
    case HealthSeverity::Unsafe:
      return "unsafe";
  }
  return "ok";
}

namespace {

// ---- words and numbers -----------------------------------------------------------------------------

std::string printed(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Bandwidth with the digits that matter: "376 GB/s", "54.1 GB/s", "1.35 GB/s".
std::string gbs(double v) {
  if (!std::isfinite(v)) return "-";
  const char* format = v >= 100 ? "%.0f GB/s" : v >= 10 ? "%.1f GB/s" : "%.2f GB/s";
  return printed(format, v);
}

std::string micros(double v) { return std::isfinite(v) ? printed("%.2f us", v) : "-"; }

std::string percent(double share) { return printed("%.0f %%", share * 100.0); }

std::string sizeText(uint64_t bytes) {
  constexpr uint64_t KiB = 1024;
  constexpr uint64_t MiB = 1024 * KiB;
  if (bytes >= MiB && bytes % MiB == 0) return std::to_string(bytes / MiB) + " MiB";
  if (bytes >= KiB && bytes % KiB == 0) return std::to_string(bytes / KiB) + " KiB";
  return std::to_string(bytes) + " B";
}

// "a", "a and b", "a, b and c", and past `shown` items "a, b, c and 4 more".
std::string listed(const std::vector<std::string>& items, size_t shown = 6) {
  std::string out;
  const size_t n = std::min(items.size(), shown);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += (i + 1 == n && items.size() <= shown) ? " and " : ", ";
    out += items[i];
  }
  if (items.size() > shown) out += " and " + std::to_string(items.size() - shown) + " more";
  return out;
}

std::string countOf(size_t n, size_t of, std::string_view noun) {
  return std::to_string(n) + " of " + std::to_string(of) + " " + std::string(noun);
}

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2.0;
}

// ---- the measurements, looked up ------------------------------------------------------------------

class View {
 public:
  explicit View(const HealthMeasurements& m) : m_(m) {
    for (const HealthPair& p : m.pairs) {
      if (p.a != p.b) links_.push_back(&p);
    }
  }

  const HealthMeasurements& m() const { return m_; }
  const std::vector<const HealthPair*>& links() const { return links_; }  // every pair but loopback

  // The GPU at this position in m.gpus (what HealthPair::a and ::b hold), or null.
  const HealthGpu* gpu(int position) const {
    if (position < 0 || static_cast<size_t>(position) >= m_.gpus.size()) return nullptr;
    return &m_.gpus[static_cast<size_t>(position)];
  }

  // "GPU3": the GPU at `position` by its nvidia-smi index.
  std::string gpuShort(int position) const {
    const HealthGpu* g = gpu(position);
    return "GPU" + std::to_string(g != nullptr ? g->index : position);
  }

  // "GPU3 (0000:01:00.0)", or "GPU3" when the bus id is unknown.
  std::string gpuName(int position) const {
    const HealthGpu* g = gpu(position);
    std::string out = gpuShort(position);
    if (g != nullptr && !g->busId.empty()) out += " (" + g->busId + ")";
    return out;
  }

  // "GPU0->GPU1".
  std::string pairName(const HealthPair& p) const { return gpuShort(p.a) + "->" + gpuShort(p.b); }

  // The pair's detail without the "GPU0->GPU1: " the probe may start it with.
  std::string detailOf(const HealthPair& p) const {
    const std::string prefix = pairName(p) + ": ";
    return p.detail.rfind(prefix, 0) == 0 ? p.detail.substr(prefix.size()) : p.detail;
  }

  // "GPU0 (0000:41:00.0) and GPU1 (0000:61:00.0)": every GPU the pairs touch, once.
  std::string gpusOf(const std::vector<const HealthPair*>& pairs) const {
    std::set<int> seen;
    std::vector<std::string> names;
    for (const HealthPair* p : pairs) {
      for (int i : {p->a, p->b}) {
        if (seen.insert(i).second) names.push_back(gpuName(i));
      }
    }
    return listed(names, 8);
  }

  // Whether the driver lets `a` reach `b`: cudaDeviceCanAccessPeer where the probe got it, else the
  // topology's status (no when either direction of access is refused, yes when both are allowed).
  static Support p2p(const HealthPair& p) {
    if (p.driverP2p != Support::Unknown) return p.driverP2p;
    if (p.nvmlRead == Support::No || p.nvmlWrite == Support::No) return Support::No;
    if (p.nvmlRead == Support::Yes && p.nvmlWrite == Support::Yes) return Support::Yes;
    return Support::Unknown;
  }

  static bool broken(const HealthPair& p) { return patternFailed(p.writeCheck) || patternFailed(p.readCheck); }

  // The one capability every GPU has; unknown when any is unknown or they differ.
  ComputeCapability commonCapability() const {
    if (m_.gpus.empty()) return {};
    const ComputeCapability first = m_.gpus.front().cc;
    for (const HealthGpu& g : m_.gpus) {
      if (g.cc != first) return {};
    }
    return first;
  }

  int gpuCount() const { return static_cast<int>(m_.gpus.size()); }

  // The distinct path tokens of the pairs, best first: "NV18", "PIX, NODE, SYS".
  std::string pathTokens() const {
    std::map<std::pair<int, int>, std::string> tokens;
    for (const HealthPair* p : links_) {
      tokens.emplace(std::pair{static_cast<int>(p->path), -p->nvlinks}, pathToken(p->path, p->nvlinks));
    }
    std::vector<std::string> out;
    for (const auto& [key, token] : tokens) out.push_back(token);
    std::string joined;
    for (const std::string& t : out) joined += (joined.empty() ? "" : ", ") + t;
    return joined;
  }

 private:
  const HealthMeasurements& m_;
  std::vector<const HealthPair*> links_;
};

// ---- what the built-in table does with these GPUs ------------------------------------------------

std::string_view algoWords(SymAlgo a) { return a == SymAlgo::OneShot ? "one-shot" : "two-shot"; }

// The symmetric bands of the built-in entry for (cc, link, n): "one-shot pull to 64 KiB, two-shot
// staged to 512 KiB and NCCL above"; empty when no entry applies or it keeps every size on NCCL.
struct TablePlan {
  std::string bands;
  bool usesPull = false;
  bool known = false;  // the capability and link were known, so the table was asked
};

TablePlan tablePlan(ComputeCapability cc, LinkClass link, int nRanks) {
  TablePlan plan;
  if (!cc.known() || link == LinkClass::Unknown || nRanks < 2) return plan;
  plan.known = true;
  const TableLookup look = DecisionTable::builtIn().thresholdsFor(cc, link, nRanks);
  if (look.entry == nullptr || look.entry->numSymBands == 0) return plan;
  std::vector<std::string> parts;
  for (int i = 0; i < look.entry->numSymBands; ++i) {
    const SymBand& b = look.entry->symBands[static_cast<size_t>(i)];
    parts.push_back(std::string(algoWords(b.algo)) + " " + std::string(symVariantName(b.variant)) + " to " +
                    sizeText(b.maxBytes));
    plan.usesPull = plan.usesPull || b.variant == SymVariant::Pull;
  }
  parts.emplace_back("NCCL above");
  plan.bands = listed(parts, parts.size());
  return plan;
}

// The short rule for when the table cannot be asked (capability unknown or mixed).
std::string simpleRule(LinkClass link, int nRanks) {
  if (link == LinkClass::Unknown) return "while the link class is unknown the plugin keeps every all-reduce on NCCL";
  if (link == LinkClass::NvLink) return "on NVLink the built-in table pushes at every size it takes";
  if (nRanks <= 3) return "on PCIe with 2-3 GPUs the built-in table pushes";
  return "on PCIe Gen5 with 4-8 GPUs the built-in table pulls its one-shot and pulls or stages its two-shot";
}

std::string fabricWords(LinkClass link) {
  switch (link) {
    case LinkClass::NvLink:
      return "on NVLink";
    case LinkClass::PcieSameSwitch:
      return "behind one PCIe switch fabric";
    case LinkClass::PcieSameRoot:
      return "on PCIe, meeting at a CPU root complex";
    case LinkClass::PcieCrossSocket:
      return "on PCIe, some pairs across CPU sockets";
    case LinkClass::Unknown:
      return "on a link of unknown class";
  }
  return "on a link of unknown class";
}

// ---- the fixes ---------------------------------------------------------------------------------------

// For P2P that the driver reports but that drops, corrupts or hangs (the NCCL troubleshooting guide's
// "PCI Access Control Services (ACS)"; NVIDIA/nccl #631, #2079; vllm-project/vllm #33041).
std::vector<std::string> brokenFixes() {
  return {
      "sudo lspci -vvv | grep -i acsctl   (SrcValid+ on a bridge: ACS is on there; ReqRedir+/CmpltRedir+ redirect "
      "peer traffic)",
      "sudo setpci -s <bridge> ECAP_ACS+0x6.w=0000   (each bridge between the GPUs that shows SrcValid+; lost at "
      "reboot), or disable ACS / IO virtualization in the BIOS",
      "kernel command line: iommu=pt (Intel: intel_iommu=on iommu=pt; AMD: amd_iommu=on iommu=pt), or the IOMMU off",
      "in a virtual machine: the hypervisor must allow P2P between the GPUs",
      "until fixed: NCCL_P2P_DISABLE=1 for NCCL, and SYMMEM_ENABLE=0 to keep the plugin off",
      "then check again: symmem-health (or p2pBandwidthLatencyTest from the CUDA samples)",
  };
}

// ---- the rules -----------------------------------------------------------------------------------------

using Findings = std::vector<HealthFinding>;

// One GPU (or the probe's loopback pair): nothing to exchange with; say whether the measuring worked.
void oneGpu(const View& v, Findings& out) {
  const HealthPair* loop = nullptr;
  for (const HealthPair& p : v.m().pairs) {
    if (p.a == p.b) loop = &p;
  }
  const int index = loop != nullptr ? loop->a : 0;
  std::string msg = "one GPU: the plugin has no peer to exchange data with; every all-reduce stays on NCCL.";
  if (loop == nullptr || (loop->writeCheck == PatternResult::NotRun && loop->readCheck == PatternResult::NotRun)) {
    msg += " The loopback measurement did not run on " + v.gpuName(index) + ".";
  } else if (View::broken(*loop)) {
    const PatternResult r = patternFailed(loop->writeCheck) ? loop->writeCheck : loop->readCheck;
    msg += " The measuring itself failed on " + v.gpuName(index) + " (" + std::string(patternResultName(r)) +
           (loop->detail.empty() ? "" : ": " + v.detailOf(*loop)) + ").";
  } else {
    msg += " The measuring itself works on " + v.gpuName(index) + ": a kernel wrote its own memory and read it back";
    if (std::isfinite(loop->writeLatencyUs) || std::isfinite(loop->writeGBs)) {
      msg += " (write " + micros(loop->writeLatencyUs) + ", " + gbs(loop->writeGBs) + ")";
    }
    msg += ".";
  }
  out.push_back({HealthSeverity::NotUseful, "one-gpu", msg, {"symmem-health --gpus 0,1,... on a node with 2-8 GPUs"}});
}

// P2P reported but broken: the written-and-read-back pattern came back wrong, hung or faulted.
void brokenPairs(const View& v, Findings& out) {
  std::vector<const HealthPair*> bad;
  std::vector<std::string> named;
  for (const HealthPair* p : v.links()) {
    if (!View::broken(*p)) continue;
    bad.push_back(p);
    std::string what;
    if (patternFailed(p->writeCheck)) what = "write check " + std::string(patternResultName(p->writeCheck));
    if (patternFailed(p->readCheck)) {
      what += (what.empty() ? "" : ", ") + std::string("read check ") + std::string(patternResultName(p->readCheck));
    }
    if (!p->detail.empty()) what += ": " + v.detailOf(*p);
    named.push_back(v.pairName(*p) + " (" + what + ")");
  }
  if (bad.empty()) return;
  std::string msg = "P2P is reported but broken on " + countOf(bad.size(), v.links().size(), "pairs") + ": " +
                    listed(named, 4) + ", between " + v.gpusOf(bad) +
                    ". The usual cause is PCIe ACS redirecting peer traffic up to the root complex, where the IOMMU "
                    "drops or mistranslates it; the plugin must not be used until this is fixed.";
  out.push_back({HealthSeverity::Unsafe, "p2p-broken", msg, brokenFixes()});
}

// Every pair passed alone, but the writes of all GPUs at once did not come back as written.
void brokenAtOnce(const View& v, Findings& out) {
  const HealthAllAtOnce& all = v.m().allAtOnce;
  if (!patternFailed(all.check)) return;
  std::string msg = "P2P fails with every GPU writing at once (" + std::string(patternResultName(all.check)) +
                    (all.detail.empty() ? "" : ": " + all.detail) +
                    "). Loaded P2P that drops or hangs points at the IOMMU or ACS on the path (NCCL hangs at 8+ "
                    "GPUs are reported with the IOMMU translating); the plugin must not be used until this is fixed.";
  out.push_back({HealthSeverity::Unsafe, "p2p-broken-at-once", msg, brokenFixes()});
}

// Consumer cards and VMs: the driver refuses P2P on some pair (or on all of them).
void missingP2p(const View& v, Findings& out) {
  std::vector<std::string> none;
  for (const HealthPair* p : v.links()) {
    if (View::p2p(*p) == Support::No) none.push_back(v.pairName(*p));
  }
  if (none.empty()) return;
  std::string geforce;
  for (int i = 0; i < v.gpuCount(); ++i) {
    const std::string& name = v.m().gpus[static_cast<size_t>(i)].name;
    if (name.find("GeForce") != std::string::npos) {
      geforce = " NVIDIA's driver does not allow P2P on most GeForce cards (" + v.gpuName(i) + " is an " + name +
                "; nvidia-smi topo -p2p rw shows GNS for them).";
      break;
    }
  }
  const std::vector<std::string> fixes = {
      "nvidia-smi topo -p2p rw   (GNS: the GPU or its driver refuses; CNS: the chipset; TNS: the topology; NS: not "
      "supported, as in many virtual machines)",
      "in a virtual machine: the hypervisor must allow P2P between the GPUs",
  };
  if (none.size() == v.links().size()) {
    const std::string msg = "no pair has P2P: the driver refuses peer access on " + listed(none, 4) +
                            ". The plugin's setup sees it and keeps every all-reduce on NCCL." + geforce;
    out.push_back({HealthSeverity::NotUseful, "no-p2p", msg, fixes});
    return;
  }
  const std::string msg = countOf(none.size(), v.links().size(), "pairs") + " have no P2P: " + listed(none, 6) +
                          ". The plugin's setup sees it and keeps every communicator that includes such a pair on "
                          "NCCL; communicators whose pairs all have P2P can take the symmetric path.";
  out.push_back({HealthSeverity::Note, "p2p-missing", msg, fixes});
}

// Direct-attach boxes (PHB, NODE, SYS) where the driver stages kernel peer accesses through system
// memory: the pattern comes back right, but about an order of magnitude slower than the GPU's own link,
// or with a write latency far above a P2P write. The fix is the driver registry keys that the RTX PRO
// 6000 community notes give (local-inference-lab/rtx6kpro, hardware/topology.md "nvidia ForceP2P" and
// optimization/pcie-oneshot-allreduce.md "Critical Prerequisite"): without them a PCIe one-shot
// all-reduce ran 242 us where it runs 17 us with them.
void stagedThroughSystemMemory(const View& v, Findings& out) {
  std::vector<const HealthPair*> staged;
  for (const HealthPair* p : v.links()) {
    if (p->path != PathKind::Phb && p->path != PathKind::Node && p->path != PathKind::Sys) continue;
    if (p->writeCheck != PatternResult::Ok) continue;
    const HealthGpu* g = v.gpu(p->a);
    const double host = g != nullptr ? g->hostCopyGBs : NAN;
    const bool slowWrites =
        std::isfinite(host) && std::isfinite(p->writeGBs) && p->writeGBs < kStagedBandwidthShare * host;
    const bool slowLatency = std::isfinite(p->writeLatencyUs) && p->writeLatencyUs > kStagedWriteLatencyUs;
    if (slowWrites || slowLatency) staged.push_back(p);
  }
  if (staged.empty()) return;
  const HealthPair& worst =
      **std::min_element(staged.begin(), staged.end(), [](const HealthPair* x, const HealthPair* y) {
        const double xs = std::isfinite(x->writeGBs) ? x->writeGBs : 1e300;
        const double ys = std::isfinite(y->writeGBs) ? y->writeGBs : 1e300;
        return xs < ys;
      });
  std::vector<std::string> names;
  for (const HealthPair* p : staged) names.push_back(v.pairName(*p));
  const HealthGpu* g = v.gpu(worst.a);
  std::string example = v.pairName(worst) + " writes " + gbs(worst.writeGBs);
  if (g != nullptr && std::isfinite(g->hostCopyGBs)) {
    example += " where " + v.gpuName(worst.a) + "'s own link moves " + gbs(g->hostCopyGBs) + " from host memory";
  }
  if (std::isfinite(worst.writeLatencyUs)) {
    example += ", " + micros(worst.writeLatencyUs) + " per write (a P2P write takes about 0.4-0.5 us on PCIe Gen5)";
  }
  const std::string msg =
      "GPU-to-GPU traffic is staged through system memory on " + countOf(staged.size(), v.links().size(), "pairs") +
      " (" + listed(names, 6) + "): " + example +
      ". The symmetric kernels would run slower than NCCL here; the driver registry keys below, reported by the RTX "
      "PRO "
      "6000 community for direct-attach hosts (not documented by NVIDIA), make the driver map peers directly.";
  out.push_back({HealthSeverity::NotUseful,
                 "sysmem-staging",
                 msg,
                 {
                     "/etc/modprobe.d/nvidia-p2p-override.conf: options nvidia NVreg_RegistryDwords=\"ForceP2P=0x11;"
                     "RMForceP2PType=1;RMPcieP2PType=2;GrdmaPciTopoCheckOverride=1;EnableResizableBar=1\"",
                     "reload the nvidia modules (or reboot), then: grep RegistryDwords /proc/driver/nvidia/params",
                     "then check again: symmem-health",
                     "until then: SYMMEM_ENABLE=0 keeps the plugin off (NCCL's own transports are not affected)",
                 }});
}

// All GPUs at once against one pair alone, per GPU.
struct AtOnce {
  int position = 0;
  double write = NAN, read = NAN;            // summed over peers, every GPU running
  double aloneWrite = NAN, aloneRead = NAN;  // median over its peers, one pair running
};

// Posted-write collapse on PCIe switch fabrics (rtx6kpro hardware/collapse-report.md; b12x PR 139),
// and its relatives: reads collapsing too (the fabric saturates), or reads alone collapsing.
void collapse(const View& v, Findings& out) {
  const HealthMeasurements& m = v.m();
  const auto& w = m.allAtOnce.writeGBsPerGpu;
  const auto& r = m.allAtOnce.readGBsPerGpu;
  std::vector<AtOnce> writesOnly, both, readsOnly;
  size_t measured = 0;
  for (size_t i = 0; i < m.gpus.size(); ++i) {
    AtOnce a;
    a.position = static_cast<int>(i);
    a.write = i < w.size() ? w[i] : NAN;
    a.read = i < r.size() ? r[i] : NAN;
    if (!std::isfinite(a.write) && !std::isfinite(a.read)) continue;
    std::vector<double> ws, rs;
    for (const HealthPair* p : v.links()) {
      if (p->a != static_cast<int>(i)) continue;
      ws.push_back(p->writeGBs);
      rs.push_back(p->readGBs);
    }
    a.aloneWrite = median(ws);
    a.aloneRead = median(rs);
    if (!std::isfinite(a.aloneRead)) a.aloneRead = a.aloneWrite;  // one link: its write figure stands in
    ++measured;
    const bool wLow = std::isfinite(a.write) && std::isfinite(a.aloneWrite) && a.write < kCollapseShare * a.aloneWrite;
    const bool rLow = std::isfinite(a.read) && std::isfinite(a.aloneRead) && a.read < kCollapseShare * a.aloneRead;
    const bool readsHold = std::isfinite(a.read) && std::isfinite(a.write) && a.read >= kHoldsUpFactor * a.write;
    const bool writesHold = std::isfinite(a.read) && std::isfinite(a.write) && a.write >= kHoldsUpFactor * a.read;
    if (wLow && !rLow && (readsHold || !std::isfinite(a.read))) {
      writesOnly.push_back(a);
    } else if (rLow && !wLow && (writesHold || !std::isfinite(a.write))) {
      readsOnly.push_back(a);
    } else if (wLow || rLow) {
      both.push_back(a);
    }
  }
  if (measured == 0) return;
  const int n = v.gpuCount();
  const TablePlan plan = tablePlan(v.commonCapability(), m.link, n);
  const auto worst = [](std::vector<AtOnce>& list, bool byWrite) -> const AtOnce& {
    return *std::min_element(list.begin(), list.end(), [&](const AtOnce& x, const AtOnce& y) {
      return byWrite ? x.write / x.aloneWrite < y.write / y.aloneWrite : x.read / x.aloneRead < y.read / y.aloneRead;
    });
  };
  const std::vector<std::string> tuneFixes = {
      "symmem-tune   (measures the kernels against NCCL per size on this machine and writes a table file)",
      "SYMMEM_TABLE=<the file symmem-tune wrote>",
  };
  if (!writesOnly.empty()) {
    const AtOnce& a = worst(writesOnly, true);
    std::string msg = "with every GPU writing at once, posted writes collapse on " +
                      countOf(writesOnly.size(), measured, "GPUs") + ": " + v.gpuName(a.position) + " writes " +
                      gbs(a.write) + " in all against " + gbs(a.aloneWrite) + " into one peer alone (" +
                      percent(a.write / a.aloneWrite) + ")";
    msg += std::isfinite(a.read) ? ", while reads at once hold " + gbs(a.read) + "."
                                 : "; reads at once were not measured.";
    msg += " The pull variant avoids it (its data moves as reads, which PCIe does not post); ";
    if (plan.usesPull) {
      msg += "the built-in table already uses pull at 4-8 ranks on Gen5 PCIe (here: " + plan.bands + ")";
    } else if (!plan.bands.empty()) {
      msg += "the built-in table does not pull here (" + plan.bands + "), a table file with pull bands would";
    } else {
      msg += "the built-in table uses pull at 4-8 ranks on Gen5 PCIe";
    }
    msg += "; symmem-tune confirms it per size.";
    out.push_back({HealthSeverity::Slow, "posted-write-collapse", msg, tuneFixes});
  }
  if (!both.empty()) {
    const AtOnce& a = worst(both, true);
    const std::string msg =
        "with every GPU moving data at once, writes and reads both fall far below one pair alone on " +
        countOf(both.size(), measured, "GPUs") + ": " + v.gpuName(a.position) + " writes " + gbs(a.write) +
        " and reads " + gbs(a.read) + " in all against " + gbs(a.aloneWrite) + " and " + gbs(a.aloneRead) +
        " with one peer alone: the fabric (root complex or switch uplinks) saturates. Pulling does not avoid it; "
        "staged "
        "(one peer per step) or NCCL wins at larger sizes, and symmem-tune measures where.";
    out.push_back({HealthSeverity::Slow, "all-at-once-collapse", msg, tuneFixes});
  }
  if (!readsOnly.empty()) {
    const AtOnce& a = worst(readsOnly, false);
    std::string msg =
        "with every GPU reading at once, reads collapse on " + countOf(readsOnly.size(), measured, "GPUs") + ": " +
        v.gpuName(a.position) + " reads " + gbs(a.read) + " in all against " + gbs(a.aloneRead) +
        " from one peer alone, while writes at once hold " + gbs(a.write) + ". Pushing is the faster direction here";
    msg += plan.usesPull
               ? ", and the built-in table pulls (" + plan.bands + "); symmem-tune measures which wins per size."
               : "; symmem-tune measures which variant wins per size.";
    out.push_back({HealthSeverity::Slow, "read-collapse", msg, tuneFixes});
  }
}

// A pair far slower than the pairs with the same path: ACS redirect behind a switch, a link trained
// below its width or generation.
void slowPairs(const View& v, Findings& out) {
  std::map<std::pair<PathKind, int>, std::vector<const HealthPair*>> byPath;
  for (const HealthPair* p : v.links()) {
    if (std::isfinite(p->writeGBs)) byPath[{p->path, p->nvlinks}].push_back(p);
  }
  std::vector<std::string> slow;
  for (const auto& [key, pairs] : byPath) {
    if (key.first == PathKind::Unknown || static_cast<int>(pairs.size()) < kMinSiblings) continue;
    std::vector<double> values;
    for (const HealthPair* p : pairs) values.push_back(p->writeGBs);
    const double typical = median(values);
    for (const HealthPair* p : pairs) {
      if (p->writeGBs < kSlowPairShare * typical) {
        slow.push_back(v.pairName(*p) + " writes " + gbs(p->writeGBs) + " against the " + gbs(typical) + " of its " +
                       pathToken(key.first, key.second) + " siblings (" + percent(p->writeGBs / typical) + ")");
      }
    }
  }
  if (slow.empty()) return;
  const std::string msg = countOf(slow.size(), v.links().size(), "pairs") +
                          " run much slower than their siblings: " + listed(slow, 4) +
                          ". Behind a PCIe switch, ACS redirect sends the traffic up to the root port and halves it; "
                          "otherwise a link may have trained below its width or generation.";
  out.push_back({HealthSeverity::Note,
                 "slow-pair",
                 msg,
                 {"sudo lspci -vvv | grep -i acsctl   (ReqRedir+ / CmpltRedir+ on a switch port: ACS redirect is on)",
                  "nvidia-smi -q -d PCIE   (Link Generation and Width: current against max)"}});
}

// P2P reported, but the pattern check did not run (an earlier step failed, or it was skipped).
void unchecked(const View& v, Findings& out) {
  std::vector<std::string> names;
  for (const HealthPair* p : v.links()) {
    if (View::p2p(*p) != Support::Yes || View::broken(*p)) continue;
    if (p->writeCheck == PatternResult::NotRun || p->readCheck == PatternResult::NotRun) {
      names.push_back(v.pairName(*p) + (p->detail.empty() ? "" : " (" + v.detailOf(*p) + ")"));
    }
  }
  if (names.empty()) return;
  const std::string msg = "P2P is reported but the pattern check did not run on " +
                          countOf(names.size(), v.links().size(), "pairs") + ": " + listed(names, 6) +
                          "; the verdict does not cover them.";
  out.push_back(
      {HealthSeverity::Note,
       "p2p-unchecked",
       msg,
       {"symmem-health --gpus <the pair's two GPUs> --timeout-s 60   (more time per step; the table's detail column "
        "says which step stopped)"}});
}

void mixedGpus(const View& v, Findings& out) {
  std::set<ComputeCapability> ccs;
  for (const HealthGpu& g : v.m().gpus) {
    if (g.cc.known()) ccs.insert(g.cc);
  }
  if (ccs.size() < 2) return;
  std::vector<std::string> names;
  for (const ComputeCapability& cc : ccs) names.push_back(cc.str());
  out.push_back({HealthSeverity::Note,
                 "mixed-gpus",
                 "the GPUs differ (capability " + listed(names, names.size()) +
                     "): communicators that mix them stay on NCCL; each kind alone can take the symmetric path.",
                 {"symmem-health --gpus <the GPUs of one kind>"}});
}

// What the plugin's decision will do with these GPUs: no entry (or an unknown link) keeps NCCL.
void tableEntry(const View& v, Findings& out) {
  const HealthMeasurements& m = v.m();
  if (m.link == LinkClass::Unknown) {
    out.push_back({HealthSeverity::Note,
                   "link-unknown",
                   "the link class of these GPUs is unknown (topology from: " +
                       (m.topologySource.empty() ? std::string("nothing") : m.topologySource) +
                       "): the plugin keeps every all-reduce on NCCL until it learns it.",
                   {"symmem-info   (shows what the plugin reads: NVML, hwloc or SYMMEM_TOPO_FILE)"}});
    return;
  }
  const ComputeCapability cc = v.commonCapability();
  const TablePlan plan = tablePlan(cc, m.link, v.gpuCount());
  if (!plan.known || !plan.bands.empty()) return;
  const std::string msg = "the built-in table keeps every all-reduce on NCCL for " + std::to_string(v.gpuCount()) +
                          " GPUs of capability " + cc.str() + " on " + std::string(linkClassName(m.link)) +
                          ": the plugin would gain nothing here.";
  out.push_back({HealthSeverity::NotUseful,
                 "no-table-entry",
                 msg,
                 {"symmem-tune   (measures this machine and writes a table file for SYMMEM_TABLE; the kernels take 2-8 "
                  "GPUs of capability 8.0 and up)"}});
}

// Healthy: what the fabric is and what the plugin does on it.
void healthy(const View& v, Findings& out) {
  const HealthMeasurements& m = v.m();
  size_t working = 0, checked = 0;
  for (const HealthPair* p : v.links()) {
    if (View::p2p(*p) != Support::Yes || View::broken(*p)) continue;
    ++working;
    if (p->writeCheck == PatternResult::Ok && p->readCheck == PatternResult::Ok) ++checked;
  }
  if (working == 0) return;
  const int n = v.gpuCount();
  std::string msg = "P2P works on ";
  msg += working == v.links().size() ? "every pair" : countOf(working, v.links().size(), "pairs");
  msg += " (" + std::to_string(n) + " GPUs " + fabricWords(m.link);
  const std::string tokens = v.pathTokens();
  if (!tokens.empty()) msg += (tokens.find(',') == std::string::npos ? ", path " : ", paths ") + tokens;
  msg += "; ";
  msg += checked == working ? "writes and reads came back as written" : countOf(checked, working, "pairs") + " checked";
  msg += "). ";
  const ComputeCapability cc = v.commonCapability();
  const TablePlan plan = tablePlan(cc, m.link, n);
  if (!plan.bands.empty()) {
    msg +=
        "For " + std::to_string(n) + " GPUs of capability " + cc.str() + " the built-in table runs " + plan.bands + ".";
  } else {
    std::string rule = simpleRule(m.link, n);
    rule[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(rule[0])));
    msg += rule + ".";
  }
  msg += " Run symmem-tune to measure the crossovers on this machine.";
  out.push_back({HealthSeverity::Ok, "p2p-ok", msg, {"symmem-tune"}});
}

int exitFor(const Findings& f) {
  bool notUseful = false;
  for (const HealthFinding& x : f) {
    if (x.severity == HealthSeverity::Unsafe) return kHealthExitUnsafe;
    notUseful = notUseful || x.severity == HealthSeverity::NotUseful;
  }
  return notUseful ? kHealthExitNotUseful : kHealthExitOk;
}

// The short reason each finding gives in the summary line.
std::string_view shortReason(std::string_view code) {
  static const std::map<std::string_view, std::string_view> reasons = {
      {"p2p-broken", "P2P is reported but broken"},
      {"p2p-broken-at-once", "P2P fails with all GPUs at once"},
      {"one-gpu", "one GPU"},
      {"no-p2p", "no pair has P2P"},
      {"sysmem-staging", "GPU-to-GPU traffic is staged through system memory"},
      {"no-table-entry", "the built-in table keeps these GPUs on NCCL"},
      {"nothing-measured", "nothing was measured"},
  };
  const auto it = reasons.find(code);
  return it == reasons.end() ? code : it->second;
}

std::string summaryFor(const Findings& f, int exitCode) {
  std::vector<std::string> reasons;
  size_t slow = 0, notes = 0;
  for (const HealthFinding& x : f) {
    const bool counts = (exitCode == kHealthExitUnsafe && x.severity == HealthSeverity::Unsafe) ||
                        (exitCode != kHealthExitUnsafe && x.severity == HealthSeverity::NotUseful);
    if (counts) reasons.emplace_back(shortReason(x.code));
    slow += x.severity == HealthSeverity::Slow ? 1 : 0;
    notes += x.severity == HealthSeverity::Note ? 1 : 0;
  }
  const std::string code = " (exit " + std::to_string(exitCode) + ")";
  switch (exitCode) {
    case kHealthExitUnsafe:
      return "verdict: not safe" + code + ": " + listed(reasons) +
             "; keep the plugin off (SYMMEM_ENABLE=0) until it is fixed";
    case kHealthExitNotUseful:
      return "verdict: not useful" + code + ": " + listed(reasons) + "; the plugin would gain nothing here";
    case kHealthExitCouldNotRun:
      return "verdict: the check could not run" + code + ": " + listed(reasons);
    default:
      break;
  }
  std::string out = "verdict: safe and useful" + code;
  std::vector<std::string> extra;
  if (slow > 0) extra.push_back(std::to_string(slow) + (slow == 1 ? " suggestion" : " suggestions"));
  if (notes > 0) extra.push_back(std::to_string(notes) + (notes == 1 ? " note" : " notes"));
  if (!extra.empty()) out += ", with " + listed(extra);
  return out;
}

// ---- the table ------------------------------------------------------------------------------------------

std::string number(double v, const char* format) { return std::isfinite(v) ? printed(format, v) : "-"; }

}  // namespace

HealthVerdict judgeHealth(const HealthMeasurements& m) {
  HealthVerdict verdict;
  Findings& f = verdict.findings;
  const View v(m);
  if (m.gpus.empty() || m.pairs.empty()) {
    f.push_back({HealthSeverity::NotUseful,
                 "nothing-measured",
                 m.gpus.empty() ? "no GPU was measured." : "no pair was measured.",
                 {"symmem-health --help"}});
    verdict.exitCode = kHealthExitCouldNotRun;
    verdict.summary = summaryFor(f, verdict.exitCode);
    return verdict;
  }
  if (m.loopback || m.gpus.size() < 2 || v.links().empty()) {
    oneGpu(v, f);
  } else {
    brokenPairs(v, f);
    brokenAtOnce(v, f);
    missingP2p(v, f);
    stagedThroughSystemMemory(v, f);
    collapse(v, f);
    slowPairs(v, f);
    unchecked(v, f);
    mixedGpus(v, f);
    const bool anyP2p = std::any_of(v.links().begin(), v.links().end(),
                                    [](const HealthPair* p) { return View::p2p(*p) == Support::Yes; });
    if (anyP2p) tableEntry(v, f);
    if (exitFor(f) == kHealthExitOk) healthy(v, f);
  }
  std::stable_sort(f.begin(), f.end(),
                   [](const HealthFinding& a, const HealthFinding& b) { return a.severity > b.severity; });
  verdict.exitCode = exitFor(f);
  verdict.summary = summaryFor(f, verdict.exitCode);
  return verdict;
}

std::string healthTable(const HealthMeasurements& m) {
  std::string out = "GPUs (link class " + std::string(linkClassName(m.link)) +
                    (m.topologySource.empty() ? "" : "; topology from " + m.topologySource) + ")\n";
  std::vector<std::vector<std::string>> gpus = {{"gpu", "bus id", "name", "cc", "host copy"}};
  for (const HealthGpu& g : m.gpus) {
    gpus.push_back({"GPU" + std::to_string(g.index), g.busId.empty() ? "-" : g.busId, g.name.empty() ? "-" : g.name,
                    g.cc.known() ? g.cc.str() : "-", gbs(g.hostCopyGBs)});
  }
  out += textColumns(gpus, "  ");
  out += "Pairs (GPU a acting on the memory of GPU b, one pair at a time)\n";
  std::vector<std::vector<std::string>> pairs = {
      {"pair", "path", "p2p", "nvml r/w", "write chk", "read chk", "write lat", "read lat", "write", "read", "detail"}};
  const View v(m);
  for (const HealthPair& p : m.pairs) {
    pairs.push_back({p.a == p.b ? v.gpuShort(p.a) + " (loopback)" : v.pairName(p), pathToken(p.path, p.nvlinks),
                     std::string(supportName(p.driverP2p)),
                     std::string(supportName(p.nvmlRead)) + "/" + std::string(supportName(p.nvmlWrite)),
                     std::string(patternResultName(p.writeCheck)), std::string(patternResultName(p.readCheck)),
                     number(p.writeLatencyUs, "%.2f us"), number(p.readLatencyUs, "%.2f us"), gbs(p.writeGBs),
                     gbs(p.readGBs), p.detail});
  }
  out += textColumns(pairs, "  ");
  const HealthAllAtOnce& all = m.allAtOnce;
  if (!all.writeGBsPerGpu.empty() || !all.readGBsPerGpu.empty() || all.check != PatternResult::NotRun) {
    out += "All GPUs at once (per GPU, summed over its peers; check " + std::string(patternResultName(all.check)) +
           (all.detail.empty() ? "" : ": " + all.detail) + ")\n";
    std::vector<std::vector<std::string>> rows = {{"gpu", "write", "read"}};
    const size_t n = std::max(all.writeGBsPerGpu.size(), all.readGBsPerGpu.size());
    for (size_t i = 0; i < n; ++i) {
      const std::string name = i < m.gpus.size() ? "GPU" + std::to_string(m.gpus[i].index) : "#" + std::to_string(i);
      rows.push_back({name, gbs(i < all.writeGBsPerGpu.size() ? all.writeGBsPerGpu[i] : NAN),
                      gbs(i < all.readGBsPerGpu.size() ? all.readGBsPerGpu[i] : NAN)});
    }
    out += textColumns(rows, "  ");
  }
  return out;
}

std::string verdictText(const HealthVerdict& v) {
  std::string out;
  for (const HealthFinding& f : v.findings) {
    std::string tag(healthSeverityName(f.severity));
    for (char& c : tag) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out += "[" + tag + "] " + f.code + ": " + f.message + "\n";
    for (const std::string& fix : f.fixes) out += "    fix: " + fix + "\n";
  }
  out += v.summary + "\n";
  return out;
}

}  // namespace symmem

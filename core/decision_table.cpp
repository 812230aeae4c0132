// SPDX-License-Identifier: Apache-2.0
#include "core/decision_table.h"

#include <algorithm>
#include <array>

#include "core/log.h"
#include "core/settings.h"
#include "core/table_file.h"

namespace symmem {

namespace {

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;

// Per world size: index 0..6 is 2..8 ranks, index 7 the rule beyond eight ranks.
using PerWorldSize = std::array<uint64_t, 8>;

struct BuiltInRow {
  ComputeCapability cc;
  LinkClass link;
  PerWorldSize oneShot;
  PerWorldSize twoShot;
  const char* source;
};

// ---- NVLink ----------------------------------------------------------------------------------------
// 2x H200 NVLink, measured side by side by symmem-bench (docs/kernels.md, bf16 sum, CUDA graph; data
// in docs/results/kernels_bf16_h200x2.csv): the one-shot kernel beats stock NCCL at every size up to
// 1 MiB (6.38 vs 13.56 us at 1 MiB) and beats the two-shot kernel there (8.84 us); two-shot beats NCCL
// at 2 MiB (10.45 vs 26.40 us) and 8 MiB (37.22 vs 44.77 us) and loses from 16 MiB (85.01 vs 72.79 us).
// nccl-tests through the plugin agree on the same machine (docs/validation.md). One-shot traffic per
// rank grows with n-1 peers, so the limits for more ranks are scaled down from the 2-rank measurement
// (derived, not measured). Beyond 8 ranks both are off: neither kernel takes more than 8 ranks
// (core/symmetric_limits.h).
constexpr PerWorldSize kNvlOneShot{1 * MiB, 512 * KiB, 512 * KiB, 256 * KiB, 256 * KiB, 256 * KiB, 256 * KiB, 0};
constexpr PerWorldSize kNvlTwoShot{8 * MiB, 4 * MiB, 4 * MiB, 2 * MiB, 2 * MiB, 2 * MiB, 2 * MiB, 0};
constexpr const char* kNvlSource = "2x H200 NVLink, symmem-bench (docs/kernels.md); >2 ranks scaled by peer count";

// ---- PCIe Gen5 (capability 9.0 and up on PCIe boards; 12.0 RTX PRO 6000 is the first target) -------
// Every figure here is cited with its origin in docs/sources.md.
// 8x RTX PRO 6000 on PCIe switches (rtx6kpro hardware/pcie-bandwidth.md): a custom all-reduce kernel
// for switch topologies ran 7.5 / 9.2 / 16.5 us against NCCL's 24.6 / 24.2 / 24.5 us at 256 B / 8 KiB /
// 32 KiB and lost at 64 KiB (25.9 vs 24.1 us) and 256 KiB (73.6 vs 28.0 us): so 32 KiB at 8 ranks.
// Pairs behind one switch run P2P at ~54 GB/s (same notes), so fewer ranks keep the one-shot longer
// (scaled by peer count, derived). pcie-root and pcie-sys take the same 32 KiB at 8 ranks without a
// measurement behind it: the same notes report that kernel slower than NCCL on dual-CPU machines
// without switches (no sizes given), and on a dual-socket box with Broadcom switches a custom kernel
// lost to NCCL from 8 KiB at 8 GPUs while winning up to 64 KiB at 4 GPUs of one socket
// (rtx6kpro hardware/asus-esc8000a-e13p-broadcom-switches.md). Two-shot: 16x RTX PRO 6000 in four
// switch islands ran b12x's island reduce-scatter (pull transfers, not push) at 26.0 vs 39.7 us for
// NCCL at 112 KiB (b12x PR 139): allowed behind switches. All-to-all writes through the root complex
// fall to a fraction of what one destination gets (FlashInfer PR 4393; p2pmark's 8-GPU
// dense-interconnect scores of 0.38-0.44, rtx6kpro), so two-shot stays off there beyond 4 ranks.
constexpr PerWorldSize kGen5SwitchOneShot{128 * KiB, 64 * KiB, 64 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 0};
constexpr PerWorldSize kGen5SwitchTwoShot{1 * MiB, 512 * KiB, 512 * KiB, 256 * KiB, 256 * KiB, 256 * KiB, 256 * KiB, 0};
constexpr PerWorldSize kGen5RootOneShot{64 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 0};
constexpr PerWorldSize kGen5RootTwoShot{512 * KiB, 256 * KiB, 256 * KiB, 0, 0, 0, 0, 0};
constexpr PerWorldSize kGen5SysOneShot{32 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 0};
constexpr PerWorldSize kGen5SysTwoShot{0, 0, 0, 0, 0, 0, 0, 0};
constexpr const char* kGen5Source = "8x/16x RTX PRO 6000 PCIe Gen5 reports (docs/sources.md); fewer ranks scaled";

// ---- PCIe Gen4 (capabilities 8.x) -----------------------------------------------------------------
// 4x V100 behind one PCIe (PLX) switch, PCIe Gen3, fp16, CUDA graphs (haohervchb/sglang-V100 PR 2,
// docs/sources.md): one-shot push 4.0 / 11.8 / 44.5 us against NCCL's 19.4 / 24.2 / 51.8 us at 4 / 32 /
// 128 KiB, and 120.3 vs 83.5 us at 384 KiB: the crossover lies between 128 and 384 KiB on Gen3. Gen4
// doubles the bandwidth; 64 KiB at 4 ranks behind a switch stays below the largest size that won.
// Other classes keep half the Gen5 limits (derived). Two-shot only behind a switch, few ranks.
constexpr PerWorldSize kGen4SwitchOneShot{128 * KiB, 64 * KiB, 64 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 0};
constexpr PerWorldSize kGen4SwitchTwoShot{512 * KiB, 256 * KiB, 256 * KiB, 0, 0, 0, 0, 0};
constexpr PerWorldSize kGen4RootOneShot{32 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 0};
constexpr PerWorldSize kGen4SysOneShot{16 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 0};
constexpr PerWorldSize kNone{0, 0, 0, 0, 0, 0, 0, 0};
constexpr const char* kGen4Source = "4x V100 PCIe switch report (docs/sources.md), scaled for Gen4";

// NVLink bridges of workstation Ampere cards (RTX A6000: 4 links x 14.062 GB/s, 112.5 GB/s both
// directions together; fixture rtx-a6000-x3-nvlink-bridge-pair, docs/sources.md) move about what a
// Gen5 x16 link does: same limits as kGen5Switch.
constexpr const char* kBridgeSource = "RTX A6000 NVLink bridge (56 GB/s) treated like a Gen5 switch";

constexpr BuiltInRow kRows[] = {
    // 8.0 A100: SXM boards are NVSwitch (9.0 shape); PCIe boards are Gen4.
    {{8, 0}, LinkClass::NvLink, kNvlOneShot, kNvlTwoShot, kNvlSource},
    {{8, 0}, LinkClass::PcieSameSwitch, kGen4SwitchOneShot, kGen4SwitchTwoShot, kGen4Source},
    {{8, 0}, LinkClass::PcieSameRoot, kGen4RootOneShot, kNone, kGen4Source},
    {{8, 0}, LinkClass::PcieCrossSocket, kGen4SysOneShot, kNone, kGen4Source},
    // 8.6 RTX A6000 / A40 / RTX 3090: PCIe Gen4 and NVLink bridge pairs.
    {{8, 6}, LinkClass::NvLink, kGen5SwitchOneShot, kGen5SwitchTwoShot, kBridgeSource},
    {{8, 6}, LinkClass::PcieSameSwitch, kGen4SwitchOneShot, kGen4SwitchTwoShot, kGen4Source},
    {{8, 6}, LinkClass::PcieSameRoot, kGen4RootOneShot, kNone, kGen4Source},
    {{8, 6}, LinkClass::PcieCrossSocket, kGen4SysOneShot, kNone, kGen4Source},
    // 8.9 L40S / RTX 6000 Ada / RTX 4090 (GeForce has no P2P: the topology says so, not this table).
    {{8, 9}, LinkClass::NvLink, kGen5SwitchOneShot, kGen5SwitchTwoShot, kBridgeSource},
    {{8, 9}, LinkClass::PcieSameSwitch, kGen4SwitchOneShot, kGen4SwitchTwoShot, kGen4Source},
    {{8, 9}, LinkClass::PcieSameRoot, kGen4RootOneShot, kNone, kGen4Source},
    {{8, 9}, LinkClass::PcieCrossSocket, kGen4SysOneShot, kNone, kGen4Source},
    // 9.0 H100 / H200 / H20: NVSwitch boards measured here; PCIe boards (H100 PCIe, H200 NVL) are Gen5.
    {{9, 0}, LinkClass::NvLink, kNvlOneShot, kNvlTwoShot, kNvlSource},
    {{9, 0}, LinkClass::PcieSameSwitch, kGen5SwitchOneShot, kGen5SwitchTwoShot, kGen5Source},
    {{9, 0}, LinkClass::PcieSameRoot, kGen5RootOneShot, kGen5RootTwoShot, kGen5Source},
    {{9, 0}, LinkClass::PcieCrossSocket, kGen5SysOneShot, kGen5SysTwoShot, kGen5Source},
    // 10.0 B200 / 10.3 B300: NVLink 5 is faster than Hopper's; 9.0's limits are the conservative start.
    {{10, 0}, LinkClass::NvLink, kNvlOneShot, kNvlTwoShot, kNvlSource},
    {{10, 0}, LinkClass::PcieSameSwitch, kGen5SwitchOneShot, kGen5SwitchTwoShot, kGen5Source},
    {{10, 0}, LinkClass::PcieSameRoot, kGen5RootOneShot, kGen5RootTwoShot, kGen5Source},
    {{10, 0}, LinkClass::PcieCrossSocket, kGen5SysOneShot, kGen5SysTwoShot, kGen5Source},
    {{10, 3}, LinkClass::NvLink, kNvlOneShot, kNvlTwoShot, kNvlSource},
    {{10, 3}, LinkClass::PcieSameSwitch, kGen5SwitchOneShot, kGen5SwitchTwoShot, kGen5Source},
    {{10, 3}, LinkClass::PcieSameRoot, kGen5RootOneShot, kGen5RootTwoShot, kGen5Source},
    {{10, 3}, LinkClass::PcieCrossSocket, kGen5SysOneShot, kGen5SysTwoShot, kGen5Source},
    // 12.0 RTX PRO 6000 Blackwell / RTX 5090 on PCIe Gen5: the first-class target.
    {{12, 0}, LinkClass::NvLink, kNvlOneShot, kNvlTwoShot, kNvlSource},
    {{12, 0}, LinkClass::PcieSameSwitch, kGen5SwitchOneShot, kGen5SwitchTwoShot, kGen5Source},
    {{12, 0}, LinkClass::PcieSameRoot, kGen5RootOneShot, kGen5RootTwoShot, kGen5Source},
    {{12, 0}, LinkClass::PcieCrossSocket, kGen5SysOneShot, kGen5SysTwoShot, kGen5Source},
    // 12.1 GB10 (DGX Spark class): same Blackwell client architecture as 12.0.
    {{12, 1}, LinkClass::NvLink, kNvlOneShot, kNvlTwoShot, kNvlSource},
    {{12, 1}, LinkClass::PcieSameSwitch, kGen5SwitchOneShot, kGen5SwitchTwoShot, kGen5Source},
    {{12, 1}, LinkClass::PcieSameRoot, kGen5RootOneShot, kGen5RootTwoShot, kGen5Source},
    {{12, 1}, LinkClass::PcieCrossSocket, kGen5SysOneShot, kGen5SysTwoShot, kGen5Source},
};

DecisionTable makeBuiltIn() {
  DecisionTable table;
  for (const BuiltInRow& row : kRows) {
    for (int i = 0; i < 8; ++i) {
      Thresholds t;
      t.cc = row.cc;
      t.link = row.link;
      t.nRanks = i < 7 ? i + 2 : kBeyondEightRanks;
      t.oneShotMaxBytes = row.oneShot[i];
      t.twoShotMaxBytes = row.twoShot[i];
      t.source = row.source;
      table.set(t);
    }
  }
  return table;
}

bool sameKey(const Thresholds& a, ComputeCapability cc, LinkClass link, int nRanks) {
  return a.cc == cc && a.link == link && a.nRanks == nRanks;
}

}  // namespace

const DecisionTable& DecisionTable::builtIn() {
  static const DecisionTable table = makeBuiltIn();
  return table;
}

void DecisionTable::set(const Thresholds& entry) {
  for (Thresholds& t : entries_) {
    if (sameKey(t, entry.cc, entry.link, entry.nRanks)) {
      t = entry;
      return;
    }
  }
  entries_.push_back(entry);
}

TableLookup DecisionTable::thresholdsFor(ComputeCapability cc, LinkClass link, int nRanks) const {
  TableLookup result;
  if (link == LinkClass::Unknown || nRanks < 2 || !cc.known()) return result;
  const int key = nRanks > 8 ? kBeyondEightRanks : nRanks;

  // Capabilities that have an entry for this link and world size.
  std::vector<ComputeCapability> candidates;
  for (const Thresholds& t : entries_)
    if (t.link == link && t.nRanks == key) candidates.push_back(t.cc);
  if (candidates.empty()) return result;
  std::sort(candidates.begin(), candidates.end());

  ComputeCapability chosen{};
  if (std::find(candidates.begin(), candidates.end(), cc) != candidates.end()) {
    chosen = cc;
    result.exact = true;
  } else {
    // Nearest lower of the same major, else the nearest lower of a lower major: the highest
    // candidate below cc satisfies both rules, as the list is ordered by (major, minor).
    for (const ComputeCapability& c : candidates)
      if (c < cc) chosen = c;
    if (!chosen.known()) return result;
  }
  for (const Thresholds& t : entries_) {
    if (sameKey(t, chosen, link, key)) {
      result.entry = &t;
      result.used = chosen;
      return result;
    }
  }
  return result;
}

DecisionTable tableFor(const Settings& settings) {
  DecisionTable t = DecisionTable::builtIn();
  const std::string& path = settings.text(SettingId::Table);
  if (path.empty() || !settings.flag(SettingId::Enable)) return t;
  TableFileResult file = readTableFile(path);
  if (!file.ok()) {
    SYMMEM_WARN("%s; using the built-in decision table", file.error.c_str());
    return t;
  }
  applyTableFile(file, t);
  SYMMEM_INFO(kLogTuning | kLogInit, "decision table %s: %zu entries override the built-in ones", path.c_str(),
              file.entries.size());
  return t;
}

TableLookup lookupWithFallbackWarning(const DecisionTable& table, ComputeCapability cc, LinkClass link, int nRanks) {
  TableLookup found = table.thresholdsFor(cc, link, nRanks);
  if (!cc.known() || link == LinkClass::Unknown || nRanks < 2) return found;
  if (found.entry && !found.exact) {
    SYMMEM_WARN_ONCE("cc-fallback-" + cc.str(),
                     "compute capability %s has no table entry; using the entry of %s (run symmem-tune to measure "
                     "this GPU)",
                     cc.str().c_str(), found.used.str().c_str());
  } else if (!found.entry) {
    SYMMEM_WARN_ONCE("cc-none-" + cc.str() + "-" + std::string(linkClassName(link)),
                     "compute capability %s, link %s: no table entry at or below it; staying on NCCL", cc.str().c_str(),
                     std::string(linkClassName(link)).c_str());
  }
  return found;
}

}  // namespace symmem

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
using PerWorldVariant = std::array<SymVariant, 8>;

// The symmetric bands of one row, per world size: one-shot up to oneShot, then two-shot up to twoShot,
// each in its variant (core/sym_variant.h).
struct SymLimits {
  PerWorldSize oneShot;
  PerWorldVariant oneShotVariant;
  PerWorldSize twoShot;
  PerWorldVariant twoShotVariant;
};

struct BuiltInRow {
  ComputeCapability cc;
  LinkClass link;
  SymLimits limits;
  const char* source;
};

constexpr SymVariant kPush = SymVariant::Push;
constexpr SymVariant kPull = SymVariant::Pull;
constexpr SymVariant kStaged = SymVariant::Staged;
constexpr PerWorldVariant kAllPush{kPush, kPush, kPush, kPush, kPush, kPush, kPush, kPush};
constexpr PerWorldSize kNone{0, 0, 0, 0, 0, 0, 0, 0};

// ---- NVLink ----------------------------------------------------------------------------------------
// 2x H200 NVLink, measured side by side by symmem-bench (docs/kernels.md, bf16 sum, CUDA graph; data
// in docs/results/kernels_bf16_h200x2.csv): the one-shot kernel beats stock NCCL at every size up to
// 1 MiB (6.38 vs 13.56 us at 1 MiB) and beats the two-shot kernel there (8.84 us); two-shot beats NCCL
// at 2 MiB (10.45 vs 26.40 us) and 8 MiB (37.22 vs 44.77 us) and loses from 16 MiB (85.01 vs 72.79 us).
// nccl-tests through the plugin agree on the same machine (docs/validation.md). One-shot traffic per
// rank grows with n-1 peers, so the limits for more ranks are scaled down from the 2-rank measurement
// (derived, not measured). Beyond 8 ranks both are off: neither kernel takes more than 8 ranks
// (core/symmetric_limits.h). NVLink does not collapse under concurrent writers: push throughout.
constexpr SymLimits kNvl{{1 * MiB, 512 * KiB, 512 * KiB, 256 * KiB, 256 * KiB, 256 * KiB, 256 * KiB, 0},
                         kAllPush,
                         {8 * MiB, 4 * MiB, 4 * MiB, 2 * MiB, 2 * MiB, 2 * MiB, 2 * MiB, 0},
                         kAllPush};
constexpr const char* kNvlSource = "2x H200 NVLink, symmem-bench (docs/kernels.md); >2 ranks scaled by peer count";

// ---- PCIe Gen5 (capability 9.0 and up on PCIe boards; 12.0 RTX PRO 6000 is the first target) -------
// Defaults from published measurements, every figure cited with its origin in docs/sources.md;
// symmem-tune measures the real answer for a machine.
//
// Sizes. 8x RTX PRO 6000 on PCIe switches (rtx6kpro hardware/pcie-bandwidth.md): a custom one-shot
// push kernel ran 7.5 / 9.2 / 16.5 us against NCCL's 24.6 / 24.2 / 24.5 us at 256 B / 8 KiB / 32 KiB
// and lost at 64 KiB (25.9 vs 24.1 us) and 256 KiB (73.6 vs 28.0 us): one-shot up to 32 KiB at 8 ranks,
// more for fewer ranks (scaled by peer count, derived). Two-shot: 16x RTX PRO 6000 in four switch
// islands ran b12x's island reduce-scatter, which pulls in every phase, at 20.5 / 22.4 / 26.0 / 37.6 us
// against NCCL's 36.1 / 36.5 / 39.7 / 39.3 us at 14 / 56 / 112 / 168 KiB (b12x PR 139).
//
// Variants. Posted writes collapse on PCIe switch fabrics when several GPUs of one switch write to
// destinations behind two or more root complexes (rtx6kpro hardware/collapse-report.md): Broadcom
// PEX890xx from two writers on one virtual switch (36.8 -> 2.7 GB/s), Microchip PM50100 from four
// writers per switch (~52 -> ~7 GB/s per pair); reads are unaffected on every platform, and b12x
// measured 52 GB/s peer reads against 2.6 GB/s peer writes. The trigger needs two writers of one switch
// and two destinations beyond it on different roots: at least 4 ranks. So 2-3 ranks keep push (one
// writer per link, the fastest direction on a quiet link), and 4-8 ranks pull their one-shot (the
// all-to-all write pattern of a one-shot push is the trigger itself).
//   pcie-switch, two-shot at 4-8: staged, FlashInfer's answer (PR 4393): one outbound and one inbound
//     stream per GPU, from 32 KiB (its policy's crossover); behind one switch fabric no second root
//     is involved, so the posted writes that remain are safe and cheaper than read round trips.
//   pcie-root and pcie-sys, two-shot at 4-8: pull. Staging still lets two GPUs of one virtual switch
//     write to two roots at once, which is all that Broadcom's trigger needs.
// Extent. Speculative decoding of 1-8 tokens at hidden size 7168 all-reduces 14-115 KiB of bf16; the
// two-shot pull bands reach 128 KiB at 5-8 ranks on pcie-root and pcie-sys (b12x's pulls won to 168
// KiB on 16 GPUs). Before, two-shot was off there: a custom one-shot *push* kernel lost to NCCL from
// 8 KiB at 8 GPUs on a dual-socket Broadcom box (rtx6kpro hardware/asus-esc8000a-e13p-broadcom-
// switches.md), the collapse at work; for the same reason the one-shot pull band across sockets stops
// at 16 KiB at 5-8 ranks (b12x routes to its pulling island kernel above 28 KiB). pcie-sys keeps
// two-shot off at 2-3 ranks: nothing published measures it.
constexpr PerWorldVariant kPullFromFour{kPush, kPush, kPull, kPull, kPull, kPull, kPull, kPush};
constexpr PerWorldVariant kStagedFromFour{kPush, kPush, kStaged, kStaged, kStaged, kStaged, kStaged, kPush};
constexpr SymLimits kGen5Switch{{128 * KiB, 64 * KiB, 64 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 0},
                                kPullFromFour,
                                {1 * MiB, 512 * KiB, 512 * KiB, 256 * KiB, 256 * KiB, 256 * KiB, 256 * KiB, 0},
                                kStagedFromFour};
constexpr SymLimits kGen5Root{{64 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 0},
                              kPullFromFour,
                              {512 * KiB, 256 * KiB, 256 * KiB, 128 * KiB, 128 * KiB, 128 * KiB, 128 * KiB, 0},
                              kPullFromFour};
constexpr SymLimits kGen5Sys{{32 * KiB, 32 * KiB, 32 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 0},
                             kPullFromFour,
                             {0, 0, 128 * KiB, 128 * KiB, 128 * KiB, 128 * KiB, 128 * KiB, 0},
                             kPullFromFour};
constexpr const char* kGen5SwitchSource =
    "8x/16x RTX PRO 6000 PCIe reports; pull one-shot, staged two-shot from 4 ranks (posted-write collapse; "
    "docs/sources.md)";
constexpr const char* kGen5Source =
    "8x/16x RTX PRO 6000 PCIe reports; pull from 4 ranks (posted-write collapse; docs/sources.md)";

// ---- PCIe Gen4 (capabilities 8.x) -----------------------------------------------------------------
// 4x V100 behind one PCIe (PLX) switch, PCIe Gen3, fp16, CUDA graphs (haohervchb/sglang-V100 PR 2,
// docs/sources.md): one-shot push 4.0 / 11.8 / 44.5 us against NCCL's 19.4 / 24.2 / 51.8 us at 4 / 32 /
// 128 KiB, and 120.3 vs 83.5 us at 384 KiB: the crossover lies between 128 and 384 KiB on Gen3. Gen4
// doubles the bandwidth; 64 KiB at 4 ranks behind a switch stays below the largest size that won.
// Other classes keep half the Gen5 limits (derived). Two-shot only behind a switch, few ranks. Push
// throughout: it is what was measured at 4 ranks there, the same report has pull kernels never
// completing over P2P on that host, and the collapse reports are all of Gen5 AMD hosts.
constexpr SymLimits kGen4Switch{{128 * KiB, 64 * KiB, 64 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 32 * KiB, 0},
                                kAllPush,
                                {512 * KiB, 256 * KiB, 256 * KiB, 0, 0, 0, 0, 0},
                                kAllPush};
constexpr SymLimits kGen4Root{
    {32 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 0}, kAllPush, kNone, kAllPush};
constexpr SymLimits kGen4Sys{
    {16 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 16 * KiB, 0}, kAllPush, kNone, kAllPush};
constexpr const char* kGen4Source = "4x V100 PCIe switch report (docs/sources.md), scaled for Gen4";

// NVLink bridges of workstation Ampere cards (RTX A6000: 4 links x 14.062 GB/s, 112.5 GB/s both
// directions together; fixture rtx-a6000-x3-nvlink-bridge-pair, docs/sources.md) move about what a
// Gen5 x16 link does: the sizes of kGen5Switch, and push, as on every NVLink.
constexpr SymLimits kBridge{kGen5Switch.oneShot, kAllPush, kGen5Switch.twoShot, kAllPush};
constexpr const char* kBridgeSource = "RTX A6000 NVLink bridge (56 GB/s) treated like a Gen5 switch, push";

constexpr BuiltInRow kRows[] = {
    // 8.0 A100: SXM boards are NVSwitch (9.0 shape); PCIe boards are Gen4.
    {{8, 0}, LinkClass::NvLink, kNvl, kNvlSource},
    {{8, 0}, LinkClass::PcieSameSwitch, kGen4Switch, kGen4Source},
    {{8, 0}, LinkClass::PcieSameRoot, kGen4Root, kGen4Source},
    {{8, 0}, LinkClass::PcieCrossSocket, kGen4Sys, kGen4Source},
    // 8.6 RTX A6000 / A40 / RTX 3090: PCIe Gen4 and NVLink bridge pairs.
    {{8, 6}, LinkClass::NvLink, kBridge, kBridgeSource},
    {{8, 6}, LinkClass::PcieSameSwitch, kGen4Switch, kGen4Source},
    {{8, 6}, LinkClass::PcieSameRoot, kGen4Root, kGen4Source},
    {{8, 6}, LinkClass::PcieCrossSocket, kGen4Sys, kGen4Source},
    // 8.9 L40S / RTX 6000 Ada / RTX 4090 (GeForce has no P2P: the topology says so, not this table).
    {{8, 9}, LinkClass::NvLink, kBridge, kBridgeSource},
    {{8, 9}, LinkClass::PcieSameSwitch, kGen4Switch, kGen4Source},
    {{8, 9}, LinkClass::PcieSameRoot, kGen4Root, kGen4Source},
    {{8, 9}, LinkClass::PcieCrossSocket, kGen4Sys, kGen4Source},
    // 9.0 H100 / H200 / H20: NVSwitch boards measured here; PCIe boards (H100 PCIe, H200 NVL) are Gen5.
    {{9, 0}, LinkClass::NvLink, kNvl, kNvlSource},
    {{9, 0}, LinkClass::PcieSameSwitch, kGen5Switch, kGen5SwitchSource},
    {{9, 0}, LinkClass::PcieSameRoot, kGen5Root, kGen5Source},
    {{9, 0}, LinkClass::PcieCrossSocket, kGen5Sys, kGen5Source},
    // 10.0 B200 / 10.3 B300: NVLink 5 is faster than Hopper's; 9.0's limits are the conservative start.
    {{10, 0}, LinkClass::NvLink, kNvl, kNvlSource},
    {{10, 0}, LinkClass::PcieSameSwitch, kGen5Switch, kGen5SwitchSource},
    {{10, 0}, LinkClass::PcieSameRoot, kGen5Root, kGen5Source},
    {{10, 0}, LinkClass::PcieCrossSocket, kGen5Sys, kGen5Source},
    {{10, 3}, LinkClass::NvLink, kNvl, kNvlSource},
    {{10, 3}, LinkClass::PcieSameSwitch, kGen5Switch, kGen5SwitchSource},
    {{10, 3}, LinkClass::PcieSameRoot, kGen5Root, kGen5Source},
    {{10, 3}, LinkClass::PcieCrossSocket, kGen5Sys, kGen5Source},
    // 12.0 RTX PRO 6000 Blackwell / RTX 5090 on PCIe Gen5: the first-class target.
    {{12, 0}, LinkClass::NvLink, kNvl, kNvlSource},
    {{12, 0}, LinkClass::PcieSameSwitch, kGen5Switch, kGen5SwitchSource},
    {{12, 0}, LinkClass::PcieSameRoot, kGen5Root, kGen5Source},
    {{12, 0}, LinkClass::PcieCrossSocket, kGen5Sys, kGen5Source},
    // 12.1 GB10 (DGX Spark class): same Blackwell client architecture as 12.0.
    {{12, 1}, LinkClass::NvLink, kNvl, kNvlSource},
    {{12, 1}, LinkClass::PcieSameSwitch, kGen5Switch, kGen5SwitchSource},
    {{12, 1}, LinkClass::PcieSameRoot, kGen5Root, kGen5Source},
    {{12, 1}, LinkClass::PcieCrossSocket, kGen5Sys, kGen5Source},
};

DecisionTable makeBuiltIn() {
  DecisionTable table;
  for (const BuiltInRow& row : kRows) {
    for (int i = 0; i < 8; ++i) {
      Thresholds t;
      t.cc = row.cc;
      t.link = row.link;
      t.nRanks = i < 7 ? i + 2 : kBeyondEightRanks;
      const SymLimits& l = row.limits;
      std::array<SymBand, 2> bands{};
      size_t n = 0;
      if (l.oneShot[i] > 0) bands[n++] = {l.oneShot[i], SymAlgo::OneShot, l.oneShotVariant[i]};
      if (l.twoShot[i] > l.oneShot[i]) bands[n++] = {l.twoShot[i], SymAlgo::TwoShot, l.twoShotVariant[i]};
      setSymBands(t, std::span<const SymBand>(bands.data(), n));
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
  const std::string& path = settings.text(SettingId::Table);
  if (path.empty() || !settings.flag(SettingId::Enable)) return DecisionTable::builtIn();
  return tableWithFile(path);
}

DecisionTable tableWithFile(const std::string& path, std::string* error) {
  DecisionTable t = DecisionTable::builtIn();
  TableFileResult file = readTableFile(path);
  if (!file.ok()) {
    // Once per process and file: a tool that asks for the table in force more than once says it once.
    SYMMEM_WARN_ONCE("table:" + path, "%s; using the built-in decision table", file.error.c_str());
    if (error) *error = file.error;
    return t;
  }
  applyTableFile(file, t);
  for (const std::string& note : file.notes) SYMMEM_INFO(kLogTuning | kLogInit, "%s", note.c_str());
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

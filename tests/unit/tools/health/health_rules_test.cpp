// SPDX-License-Identifier: Apache-2.0
// symmem-health's rules against recorded machines (tests/data/tools/health/*.csv, each saying where its
// numbers come from): the exit code, the finding codes and the phrase each message must print, which
// is the promise to the user. Variants of a fixture move one value across a threshold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tools/health/csv.h"
#include "tools/health/rules.h"

namespace symmem {
namespace {

HealthMeasurements load(const std::string& name) {
  const std::string path = std::string(SYMMEM_TEST_DATA_DIR) + "/tools/health/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream text;
  text << in.rdbuf();
  HealthMeasurements m;
  std::string error;
  EXPECT_TRUE(parseHealthCsv(text.str(), &m, &error)) << path << ": " << error;
  return m;
}

std::vector<std::string> codes(const HealthVerdict& v) {
  std::vector<std::string> out;
  for (const HealthFinding& f : v.findings) out.push_back(f.code);
  return out;
}

const HealthFinding& finding(const HealthVerdict& v, const std::string& code) {
  for (const HealthFinding& f : v.findings) {
    if (f.code == code) return f;
  }
  ADD_FAILURE() << "no finding " << code << " in:\n" << verdictText(v);
  static const HealthFinding none;
  return none;
}

bool anyFixHas(const HealthFinding& f, const std::string& text) {
  return std::any_of(f.fixes.begin(), f.fixes.end(),
                     [&](const std::string& x) { return x.find(text) != std::string::npos; });
}

#define EXPECT_HAS(haystack, needle) EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

HealthPair& pairOf(HealthMeasurements& m, int a, int b) {
  for (HealthPair& p : m.pairs) {
    if (p.a == a && p.b == b) return p;
  }
  ADD_FAILURE() << "no pair " << a << "->" << b;
  return m.pairs.front();
}

TEST(HealthRules, NvLinkPairIsHealthy) {
  const HealthVerdict v = judgeHealth(load("nvlink-h200-x2.csv"));
  EXPECT_EQ(v.exitCode, 0);
  EXPECT_EQ(codes(v), std::vector<std::string>{"p2p-ok"});
  const HealthFinding& ok = finding(v, "p2p-ok");
  EXPECT_EQ(ok.severity, HealthSeverity::Ok);
  EXPECT_HAS(ok.message,
             "P2P works on every pair (2 GPUs on NVLink, path NV18; writes and reads came back as written)");
  EXPECT_HAS(ok.message, "the built-in table runs one-shot push to 1 MiB, two-shot push to 8 MiB and NCCL above");
  EXPECT_HAS(ok.message, "Run symmem-tune to measure the crossovers");
  EXPECT_EQ(v.summary, "verdict: safe and useful (exit 0)");
}

TEST(HealthRules, PcieSwitchIsHealthy) {
  const HealthVerdict v = judgeHealth(load("pcie-switch-x4-pix.csv"));
  EXPECT_EQ(v.exitCode, 0);
  EXPECT_EQ(codes(v), std::vector<std::string>{"p2p-ok"});
  const HealthFinding& ok = finding(v, "p2p-ok");
  EXPECT_HAS(ok.message, "4 GPUs behind one PCIe switch fabric, path PIX");
  // 4 ranks on a Gen5 switch: the built-in table pulls its one-shot and stages its two-shot.
  EXPECT_HAS(ok.message, "one-shot pull to 64 KiB, two-shot staged to 512 KiB and NCCL above");
  EXPECT_HAS(ok.message, "Run symmem-tune to measure the crossovers");
}

TEST(HealthRules, PostedWriteCollapseSuggestsPull) {
  const HealthVerdict v = judgeHealth(load("pcie-switch-x8-write-collapse.csv"));
  EXPECT_EQ(v.exitCode, 0);  // slow, not unsafe
  EXPECT_EQ(codes(v), (std::vector<std::string>{"posted-write-collapse", "p2p-ok"}));
  const HealthFinding& c = finding(v, "posted-write-collapse");
  EXPECT_EQ(c.severity, HealthSeverity::Slow);
  EXPECT_HAS(c.message, "posted writes collapse on 8 of 8 GPUs");
  // GPU0's median pair alone is 50 GB/s (four SYS pairs at 50, three at 54-54.1).
  EXPECT_HAS(c.message, "GPU0 (0000:06:00.0) writes 1.35 GB/s in all against 50.0 GB/s into one peer alone (3 %)");
  EXPECT_HAS(c.message, "while reads at once hold 25.6 GB/s");
  EXPECT_HAS(c.message, "The pull variant avoids it");
  EXPECT_HAS(c.message, "the built-in table already uses pull at 4-8 ranks on Gen5 PCIe");
  EXPECT_HAS(c.message, "one-shot pull to 16 KiB, two-shot pull to 128 KiB");
  EXPECT_HAS(c.message, "symmem-tune confirms it per size");
  EXPECT_TRUE(anyFixHas(c, "symmem-tune"));
  EXPECT_HAS(v.summary, "safe and useful (exit 0), with 1 suggestion");
}

TEST(HealthRules, ReadsCollapsingTooPointAtStagedOrNccl) {
  // The same machine's 56-flow all-to-all: 36.5 GB/s written, 53.9 GB/s read in all (4.6 and 6.7 per GPU).
  HealthMeasurements m = load("pcie-switch-x8-write-collapse.csv");
  std::fill(m.allAtOnce.writeGBsPerGpu.begin(), m.allAtOnce.writeGBsPerGpu.end(), 4.6);
  std::fill(m.allAtOnce.readGBsPerGpu.begin(), m.allAtOnce.readGBsPerGpu.end(), 6.7);
  const HealthVerdict v = judgeHealth(m);
  EXPECT_EQ(v.exitCode, 0);
  EXPECT_EQ(codes(v), (std::vector<std::string>{"all-at-once-collapse", "p2p-ok"}));
  const HealthFinding& c = finding(v, "all-at-once-collapse");
  EXPECT_HAS(c.message, "writes and reads both fall far below one pair alone on 8 of 8 GPUs");
  EXPECT_HAS(c.message, "Pulling does not avoid it; staged (one peer per step) or NCCL wins at larger sizes");
}

TEST(HealthRules, ReadsCollapsingAloneFavourPush) {
  HealthMeasurements m = load("pcie-switch-x8-write-collapse.csv");
  std::fill(m.allAtOnce.writeGBsPerGpu.begin(), m.allAtOnce.writeGBsPerGpu.end(), 30.0);
  std::fill(m.allAtOnce.readGBsPerGpu.begin(), m.allAtOnce.readGBsPerGpu.end(), 3.0);
  const HealthVerdict v = judgeHealth(m);
  EXPECT_EQ(codes(v), (std::vector<std::string>{"read-collapse", "p2p-ok"}));
  EXPECT_HAS(finding(v, "read-collapse").message, "Pushing is the faster direction here, and the built-in table pulls");
}

TEST(HealthRules, CollapseNeedsWritesBelowAQuarterAndReadsHoldingUp) {
  HealthMeasurements m = load("pcie-switch-x8-write-collapse.csv");
  // GPU0 alone writes 50 GB/s (median): 13 GB/s at once keeps 26 %, not a collapse; 12 keeps 24 %.
  auto only = [&](double w, double r) {
    HealthMeasurements x = m;
    std::fill(x.allAtOnce.writeGBsPerGpu.begin(), x.allAtOnce.writeGBsPerGpu.end(), 40.0);
    std::fill(x.allAtOnce.readGBsPerGpu.begin(), x.allAtOnce.readGBsPerGpu.end(), 40.0);
    x.allAtOnce.writeGBsPerGpu[0] = w;
    x.allAtOnce.readGBsPerGpu[0] = r;
    return codes(judgeHealth(x));
  };
  EXPECT_EQ(only(13.0, 40.0), std::vector<std::string>{"p2p-ok"});
  EXPECT_EQ(only(12.0, 40.0), (std::vector<std::string>{"posted-write-collapse", "p2p-ok"}));
  // Reads at once below twice the writes: not the write-only fingerprint, and reads at 20 of 40.1 hold.
  EXPECT_EQ(only(12.0, 20.0), (std::vector<std::string>{"all-at-once-collapse", "p2p-ok"}));
  // Healthy fabrics keep 38-96 % under all-to-all: nothing to say.
  EXPECT_EQ(only(19.0, 16.0), std::vector<std::string>{"p2p-ok"});
}

TEST(HealthRules, SystemMemoryStagingIsNotUseful) {
  const HealthVerdict v = judgeHealth(load("direct-attach-x2-sysmem-staging.csv"));
  EXPECT_EQ(v.exitCode, 3);
  EXPECT_EQ(codes(v), std::vector<std::string>{"sysmem-staging"});
  const HealthFinding& s = finding(v, "sysmem-staging");
  EXPECT_EQ(s.severity, HealthSeverity::NotUseful);
  EXPECT_HAS(s.message,
             "GPU-to-GPU traffic is staged through system memory on 2 of 2 pairs (GPU0->GPU1 and GPU1->GPU0)");
  EXPECT_HAS(s.message, "GPU0->GPU1 writes 3.70 GB/s where GPU0's own link moves 52.7 GB/s from host memory, 14.00 us");
  EXPECT_HAS(s.message, "The symmetric kernels would run slower than NCCL here");
  EXPECT_TRUE(anyFixHas(s, "/etc/modprobe.d/"));
  EXPECT_TRUE(anyFixHas(s,
                        "options nvidia NVreg_RegistryDwords=\"ForceP2P=0x11;RMForceP2PType=1;RMPcieP2PType=2;"
                        "GrdmaPciTopoCheckOverride=1;EnableResizableBar=1\""));
  EXPECT_TRUE(anyFixHas(s, "SYMMEM_ENABLE=0"));
  EXPECT_EQ(v.summary,
            "verdict: not useful (exit 3): GPU-to-GPU traffic is staged through system memory; the plugin would gain "
            "nothing here");
}

TEST(HealthRules, StagingIsFoundByLatencyOrBandwidthAlone) {
  const HealthMeasurements staged = load("direct-attach-x2-sysmem-staging.csv");
  auto verdictWith = [&](auto change) {
    HealthMeasurements m = staged;
    for (HealthPair& p : m.pairs) change(m, p);
    return judgeHealth(m);
  };
  // Latency unknown: 3.7 GB/s against a 52.7 GB/s host copy is below a fifth.
  EXPECT_EQ(verdictWith([](HealthMeasurements&, HealthPair& p) { p.writeLatencyUs = NAN; }).exitCode, 3);
  // Host copy unknown: 14 us per write is above 5 us.
  EXPECT_EQ(verdictWith([](HealthMeasurements& m, HealthPair&) {
              for (HealthGpu& g : m.gpus) g.hostCopyGBs = NAN;
            }).exitCode,
            3);
  // At the thresholds: 4.9 us and 10.6 GB/s (0.201 of 52.7) are real P2P, slow as it is.
  EXPECT_EQ(verdictWith([](HealthMeasurements&, HealthPair& p) {
              p.writeLatencyUs = 4.9;
              p.writeGBs = 10.6;
            }).exitCode,
            0);
  // Real P2P on direct attach (0.44 us, 52 GB/s): healthy, and the pcie-root table for 2 ranks.
  const HealthVerdict real = verdictWith([](HealthMeasurements&, HealthPair& p) {
    p.writeLatencyUs = 0.44;
    p.writeGBs = 52;
  });
  EXPECT_EQ(codes(real), std::vector<std::string>{"p2p-ok"});
  EXPECT_HAS(finding(real, "p2p-ok").message, "one-shot push to 64 KiB, two-shot push to 512 KiB");
  // The same slow numbers behind a switch are not the staging the driver keys fix.
  EXPECT_EQ(verdictWith([](HealthMeasurements&, HealthPair& p) { p.path = PathKind::Pix; }).exitCode, 0);
}

TEST(HealthRules, BrokenP2pIsUnsafe) {
  const HealthVerdict v = judgeHealth(load("broken-p2p-x2-timeout-mismatch.csv"));
  EXPECT_EQ(v.exitCode, 1);
  EXPECT_EQ(codes(v), std::vector<std::string>{"p2p-broken"});
  const HealthFinding& b = finding(v, "p2p-broken");
  EXPECT_EQ(b.severity, HealthSeverity::Unsafe);
  EXPECT_HAS(b.message, "P2P is reported but broken on 2 of 2 pairs");
  EXPECT_HAS(b.message, "GPU0->GPU1 (write check timeout: write step did not finish in 20 s, child stopped)");
  EXPECT_HAS(b.message, "GPU1->GPU0 (write check mismatch: 65536 of 65536 words differ");
  EXPECT_HAS(b.message, "between GPU0 (0000:41:00.0) and GPU1 (0000:61:00.0)");
  EXPECT_HAS(b.message, "PCIe ACS redirecting peer traffic up to the root complex");
  EXPECT_HAS(b.message, "the plugin must not be used until this is fixed");
  EXPECT_TRUE(anyFixHas(b, "lspci -vvv | grep -i acsctl"));
  EXPECT_TRUE(anyFixHas(b, "setpci -s <bridge> ECAP_ACS+0x6.w=0000"));
  EXPECT_TRUE(anyFixHas(b, "intel_iommu=on iommu=pt"));
  EXPECT_TRUE(anyFixHas(b, "amd_iommu=on iommu=pt"));
  EXPECT_TRUE(anyFixHas(b, "the hypervisor must allow P2P"));
  EXPECT_TRUE(anyFixHas(b, "NCCL_P2P_DISABLE=1"));
  EXPECT_TRUE(anyFixHas(b, "SYMMEM_ENABLE=0"));
  EXPECT_EQ(v.summary,
            "verdict: not safe (exit 1): P2P is reported but broken; keep the plugin off (SYMMEM_ENABLE=0) until it is "
            "fixed");
}

TEST(HealthRules, GpusAreNamedByTheirIndex) {
  // --gpus 2,5: pairs hold positions 0 and 1, messages say what nvidia-smi calls the GPUs.
  HealthMeasurements m = load("broken-p2p-x2-timeout-mismatch.csv");
  m.gpus[0].index = 2;
  m.gpus[1].index = 5;
  pairOf(m, 0, 1).detail = "GPU2->GPU5: the child was stopped after 20 s";  // the probe's own prefix
  const HealthVerdict v = judgeHealth(m);
  const HealthFinding& b = finding(v, "p2p-broken");
  EXPECT_HAS(b.message, "GPU2->GPU5 (write check timeout: the child was stopped after 20 s)");
  EXPECT_HAS(b.message, "GPU5->GPU2 (write check mismatch");
  EXPECT_HAS(b.message, "between GPU2 (0000:41:00.0) and GPU5 (0000:61:00.0)");
  EXPECT_HAS(healthTable(m), "GPU5->GPU2");
}

TEST(HealthRules, EachFailedCheckIsBroken) {
  for (PatternResult r : {PatternResult::Mismatch, PatternResult::Timeout, PatternResult::Fault}) {
    HealthMeasurements m = load("nvlink-h200-x2.csv");
    pairOf(m, 1, 0).readCheck = r;
    const HealthVerdict v = judgeHealth(m);
    EXPECT_EQ(v.exitCode, 1) << patternResultName(r);
    EXPECT_HAS(finding(v, "p2p-broken").message,
               "on 1 of 2 pairs: GPU1->GPU0 (read check " + std::string(patternResultName(r)) + ")");
  }
}

TEST(HealthRules, UnsafeWinsOverNotUseful) {
  HealthMeasurements m = load("direct-attach-x2-sysmem-staging.csv");
  pairOf(m, 1, 0).writeCheck = PatternResult::Mismatch;  // GPU0->GPU1 stays staged, GPU1->GPU0 breaks
  const HealthVerdict v = judgeHealth(m);
  EXPECT_EQ(v.exitCode, 1);
  EXPECT_EQ(codes(v), (std::vector<std::string>{"p2p-broken", "sysmem-staging"}));
}

TEST(HealthRules, BrokenUnderLoadIsUnsafe) {
  HealthMeasurements m = load("pcie-switch-x4-pix.csv");
  m.allAtOnce.check = PatternResult::Timeout;
  m.allAtOnce.detail = "the all-at-once step did not finish in 20 s";
  const HealthVerdict v = judgeHealth(m);
  EXPECT_EQ(v.exitCode, 1);
  EXPECT_EQ(codes(v), std::vector<std::string>{"p2p-broken-at-once"});
  EXPECT_HAS(finding(v, "p2p-broken-at-once").message,
             "P2P fails with every GPU writing at once (timeout: the all-at-once step did not finish in 20 s)");
}

TEST(HealthRules, ConsumerCardsWithoutP2pStayOnNccl) {
  const HealthVerdict v = judgeHealth(load("geforce-x2-no-p2p.csv"));
  EXPECT_EQ(v.exitCode, 3);
  EXPECT_EQ(codes(v), std::vector<std::string>{"no-p2p"});
  const HealthFinding& n = finding(v, "no-p2p");
  EXPECT_HAS(n.message, "no pair has P2P: the driver refuses peer access on GPU0->GPU1 and GPU1->GPU0");
  EXPECT_HAS(n.message, "The plugin's setup sees it and keeps every all-reduce on NCCL");
  EXPECT_HAS(n.message, "NVIDIA's driver does not allow P2P on most GeForce cards");
  EXPECT_TRUE(anyFixHas(n, "nvidia-smi topo -p2p rw"));
  EXPECT_HAS(v.summary, "not useful (exit 3): no pair has P2P");
}

TEST(HealthRules, SomePairsWithoutP2pAreNamed) {
  // Capability 6.1: the built-in table has no entry, so the verdict is "not useful" for that reason.
  const HealthMeasurements pascal = load("geforce-x4-p2p-some-pairs.csv");
  const HealthVerdict v = judgeHealth(pascal);
  EXPECT_EQ(v.exitCode, 3);
  EXPECT_EQ(codes(v), (std::vector<std::string>{"no-table-entry", "p2p-missing"}));
  const HealthFinding& missing = finding(v, "p2p-missing");
  EXPECT_EQ(missing.severity, HealthSeverity::Note);
  EXPECT_HAS(missing.message, "8 of 12 pairs have no P2P: GPU0->GPU2, GPU0->GPU3, GPU1->GPU2");
  EXPECT_HAS(missing.message, "keeps every communicator that includes such a pair on NCCL");
  EXPECT_EQ(missing.message.find("GeForce"), std::string::npos);  // these pairs cross sockets; the card is not why
  EXPECT_HAS(finding(v, "no-table-entry").message,
             "the built-in table keeps every all-reduce on NCCL for 4 GPUs of capability 6.1 on pcie-sys");
  // The same wiring with GPUs the table knows: a note, and the pairs that work.
  HealthMeasurements blackwell = pascal;
  for (HealthGpu& g : blackwell.gpus) g.cc = {12, 0};
  const HealthVerdict w = judgeHealth(blackwell);
  EXPECT_EQ(w.exitCode, 0);
  EXPECT_EQ(codes(w), (std::vector<std::string>{"p2p-missing", "p2p-ok"}));
  EXPECT_HAS(finding(w, "p2p-ok").message, "P2P works on 4 of 12 pairs");
}

TEST(HealthRules, OneGpuIsNotUseful) {
  const HealthMeasurements one = load("one-gpu-loopback.csv");
  const HealthVerdict v = judgeHealth(one);
  EXPECT_EQ(v.exitCode, 3);
  EXPECT_EQ(codes(v), std::vector<std::string>{"one-gpu"});
  const HealthFinding& f = finding(v, "one-gpu");
  EXPECT_HAS(f.message, "one GPU: the plugin has no peer");
  EXPECT_HAS(f.message, "every all-reduce stays on NCCL");
  EXPECT_HAS(f.message, "measuring itself works on GPU0");
  EXPECT_HAS(v.summary, "not useful (exit 3): one GPU");

  HealthMeasurements failed = one;
  failed.pairs[0].writeCheck = PatternResult::Fault;
  failed.pairs[0].detail = "cudaErrorLaunchFailure";
  EXPECT_HAS(finding(judgeHealth(failed), "one-gpu").message,
             "measuring itself failed on GPU0 (fault: cudaErrorLaunchFailure)");
}

TEST(HealthRules, SlowPairIsNoted) {
  HealthMeasurements m = load("pcie-switch-x4-pix.csv");
  pairOf(m, 0, 1).writeGBs = 27;  // ACS redirect halves a switch pair
  HealthVerdict v = judgeHealth(m);
  EXPECT_EQ(v.exitCode, 0);
  EXPECT_EQ(codes(v), (std::vector<std::string>{"slow-pair", "p2p-ok"}));
  EXPECT_HAS(finding(v, "slow-pair").message,
             "GPU0->GPU1 writes 27.0 GB/s against the 54.0 GB/s of its PIX siblings (50 %)");
  EXPECT_HAS(finding(v, "slow-pair").message, "ACS redirect");
  pairOf(m, 0, 1).writeGBs = 33;  // 61 %: within what crossing a socket costs
  EXPECT_EQ(codes(judgeHealth(m)), std::vector<std::string>{"p2p-ok"});
}

TEST(HealthRules, UncheckedPairsAreNoted) {
  HealthMeasurements m = load("nvlink-h200-x2.csv");
  pairOf(m, 0, 1).readCheck = PatternResult::NotRun;
  const HealthVerdict v = judgeHealth(m);
  EXPECT_EQ(v.exitCode, 0);
  EXPECT_EQ(codes(v), (std::vector<std::string>{"p2p-unchecked", "p2p-ok"}));
  EXPECT_HAS(finding(v, "p2p-unchecked").message, "the pattern check did not run on 1 of 2 pairs: GPU0->GPU1");
  EXPECT_HAS(finding(v, "p2p-ok").message, "1 of 2 pairs checked");
}

TEST(HealthRules, MixedGpusAndUnknownLinkAreNoted) {
  HealthMeasurements m = load("nvlink-h200-x2.csv");
  m.gpus[1].cc = {10, 0};
  HealthVerdict v = judgeHealth(m);
  EXPECT_EQ(codes(v), (std::vector<std::string>{"mixed-gpus", "p2p-ok"}));
  EXPECT_HAS(finding(v, "mixed-gpus").message, "capability 9.0 and 10.0");
  EXPECT_HAS(finding(v, "p2p-ok").message, "On NVLink the built-in table pushes");
  m = load("nvlink-h200-x2.csv");
  m.link = LinkClass::Unknown;
  v = judgeHealth(m);
  EXPECT_EQ(codes(v), (std::vector<std::string>{"link-unknown", "p2p-ok"}));
}

TEST(HealthRules, NothingMeasuredCannotRun) {
  const HealthVerdict v = judgeHealth(HealthMeasurements{});
  EXPECT_EQ(v.exitCode, 4);
  EXPECT_EQ(codes(v), std::vector<std::string>{"nothing-measured"});
  EXPECT_EQ(v.summary, "verdict: the check could not run (exit 4): nothing was measured");
}

TEST(HealthRules, TableAndTextShowEveryPairAndFix) {
  const HealthMeasurements m = load("pcie-switch-x8-write-collapse.csv");
  const std::string table = healthTable(m);
  EXPECT_HAS(table, "GPUs (link class pcie-sys; topology from nvml+hwloc)");
  EXPECT_HAS(table, "GPU4  0000:84:00.0  NVIDIA RTX PRO 6000 Blackwell Server Edition  12.0");
  EXPECT_HAS(table, "GPU7->GPU6");
  EXPECT_HAS(table, "1.35 GB/s");
  for (const HealthPair& p : m.pairs) {
    EXPECT_HAS(table, "GPU" + std::to_string(p.a) + "->GPU" + std::to_string(p.b) + " ");
  }
  EXPECT_HAS(table, "All GPUs at once (per GPU, summed over its peers; check ok)");
  const HealthVerdict v = judgeHealth(m);
  const std::string text = verdictText(v);
  EXPECT_HAS(text, "[SLOW] posted-write-collapse: with every GPU writing at once");
  EXPECT_HAS(text, "\n    fix: symmem-tune");
  EXPECT_HAS(text, "[OK] p2p-ok: P2P works on every pair");
  EXPECT_EQ(text.substr(text.size() - v.summary.size() - 1), v.summary + "\n");
}

}  // namespace
}  // namespace symmem

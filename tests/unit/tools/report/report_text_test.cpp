// SPDX-License-Identifier: Apache-2.0
// report.md of symmem-report from hand-made values: the summary for each outcome of each tool, the
// sections, the commands with their results, the files; and the small pieces it is made of.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/report/text.h"

namespace symmem::report {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

ToolRun exited(const std::string& tool, int code, const std::string& out = "", const std::string& err = "") {
  ToolRun r;
  r.tool = tool;
  r.command = tool;
  r.end = RunEnd::Exited;
  r.exitCode = code;
  r.seconds = 1.25;
  r.stdoutText = out;
  r.stderrTail = err;
  return r;
}

Artifact present(const std::string& name, const std::string& text) {
  Artifact a;
  a.name = name;
  a.present = true;
  a.text = text;
  return a;
}

Artifact missing(const std::string& name, const std::string& why) {
  Artifact a;
  a.name = name;
  a.missing = why;
  return a;
}

const char* kTable =
    "symmem-table 1\n"
    "# measured by symmem-tune\n"
    "meta 4x NVIDIA RTX PRO 6000, driver 570.124\n"
    "sym   cc=12.0 link=pcie-switch ranks=4 upto=32KiB algo=oneshot variant=pull\n"
    "sym   cc=12.0 link=pcie-switch ranks=4 upto=256KiB algo=twoshot variant=staged\n"
    "band  cc=12.0 link=pcie-switch ranks=4 coll=allreduce upto=1MiB algo=ring proto=ll channels=0\n";

// A report of a healthy, tuned 4-GPU machine.
ReportInputs healthyTuned() {
  ReportInputs in;
  in.createdUtc = "2026-12-01 13:04:52 UTC";
  in.invocation = "symmem-report --quick";
  in.toolsDir = "<path>/bin";
  in.versions = {{"nccl-symmem", "0.1.0"}, {"NVIDIA driver", "570.124.06"}, {"GPUs", "4x NVIDIA RTX PRO 6000"}};
  in.environment = {{"NCCL_DEBUG", "WARN"}, {"SYMMEM_LOG", "info"}};
  in.info = exited("symmem-info", 0, "this machine:\nTopology from nvml+hwloc: 4 GPUs\n");
  in.topology = present("topology.txt", in.info.stdoutText);
  in.check = exited("symmem-info", 0, "no problems (table (built-in), topology (discovered), SYMMEM_* settings)\n");
  in.health = exited("symmem-health", 0, "pair  write  read\n0>1   25.1   20.3\nP2P healthy\n");
  in.healthText = present("health.txt", in.health.stdoutText);
  in.healthCsv =
      present("health.csv", "record,gpu_a,gpu_b,field,value\npair,0,1,writeGBs,25.1\npair,0,1,readGBs,20.3\n");
  in.tune = exited("symmem-tune", 0, "4 ranks: oneshot pull up to 32KiB\n");
  in.tuneText = present("tune.txt", in.tune.stdoutText);
  in.table = present("table.txt", kTable);
  in.latencyCsv = present("latency.csv",
                          "ranks,link,cc,bytes,path,median_us,min_us,max_us,chosen\n"
                          "4,pcie-switch,12.0,8,nccl,12.5,12.0,13.0,0\n");
  in.plots = exited("symmem-report-plots", 0, "symmem-report-plots: wrote latency-4ranks.png\n");
  in.pngs = {"health-bandwidth.png", "latency-4ranks.png"};
  in.files = {{"health.csv", 120}, {"latency-4ranks.png", 60000}, {"report.md", 4000}};
  return in;
}

// ---- summary ------------------------------------------------------------------------------------------

TEST(ReportText, HealthySummary) {
  const ReportInputs in = healthyTuned();
  EXPECT_EQ(healthSummary(in.health, in.healthText),
            "Health check: **healthy**: P2P works on every pair checked (symmem-health exit 0)");
}

TEST(ReportText, HealthVerdictForEachExitCode) {
  const Artifact text = present("health.txt", "findings\n");
  EXPECT_TRUE(has(healthSummary(exited("symmem-health", 1, "x\n"), text), "**P2P unsafe**"));
  const std::string notUseful =
      healthSummary(exited("symmem-health", 3, "one GPU: the plugin has no peer to reach\n"), text);
  EXPECT_TRUE(has(notUseful, "not useful here (symmem-health exit 3)")) << notUseful;
  EXPECT_TRUE(has(notUseful, "`one GPU: the plugin has no peer to reach`")) << notUseful;
  EXPECT_TRUE(has(healthSummary(exited("symmem-health", 4, "x\n", "cannot load libcuda"), text),
                  "could not run its checks (symmem-health exit 4): `cannot load libcuda`"));
  EXPECT_TRUE(
      has(healthSummary(exited("symmem-health", 2, "", "unknown option --frob"), text), "refused its command line"));
  EXPECT_TRUE(has(healthSummary(exited("symmem-health", 9, "x\n"), text), "not one of its documented codes"));
}

TEST(ReportText, HealthSummaryQuotesTheToolsOwnVerdict) {
  // The last stderr line is progress ("wrote ./health.csv"); the verdict line of health.txt says why.
  const Artifact text = present("health.txt",
                                "GPUs ...\n[NOT USEFUL] one-gpu: ...\nverdict: not useful (exit 3): one GPU; the "
                                "plugin would gain nothing here\n");
  const std::string s = healthSummary(exited("symmem-health", 3, "x\n", "symmem-health: wrote ./health.csv"), text);
  EXPECT_EQ(
      s,
      "Health check: the plugin is not useful here (symmem-health exit 3): `verdict: not useful (exit 3): one GPU; "
      "the plugin would gain nothing here`");
  const std::string ok = healthSummary(exited("symmem-health", 0, "x\n"),
                                       present("health.txt", "verdict: safe and useful (exit 0), with 1 suggestion\n"));
  EXPECT_TRUE(has(ok, "**healthy**")) << ok;
  EXPECT_TRUE(has(ok, "`verdict: safe and useful (exit 0), with 1 suggestion`")) << ok;
}

TEST(ReportText, HealthWithoutOutputHasNoVerdict) {
  // A tool that exits 1 (P2P unsafe, by its codes) but printed nothing has not judged anything.
  const std::string s = healthSummary(exited("symmem-health", 1), missing("health.txt", "printed nothing"));
  EXPECT_TRUE(has(s, "no verdict: symmem-health exit 1 without printing a result")) << s;
  EXPECT_FALSE(has(s, "unsafe")) << s;
}

TEST(ReportText, HealthThatOnlySaysWhyOnStderrHasAVerdict) {
  const std::string s = healthSummary(exited("symmem-health", 3, "", "symmem-health: no CUDA GPU found"),
                                      missing("health.txt", "printed nothing"));
  EXPECT_EQ(s,
            "Health check: the plugin is not useful here (symmem-health exit 3): `symmem-health: no CUDA GPU found`");
}

TEST(ReportText, HealthThatDidNotFinish) {
  ToolRun hung;
  hung.tool = "symmem-health";
  hung.end = RunEnd::TimedOut;
  hung.timeoutSeconds = 5;
  EXPECT_EQ(healthSummary(hung, missing("health.txt", "")),
            "Health check: no verdict: symmem-health timed out after 5 s (killed)");
  ToolRun gone;
  gone.tool = "symmem-health";
  gone.end = RunEnd::CouldNotStart;
  gone.problem = "not found: <path>/symmem-health (No such file or directory)";
  EXPECT_TRUE(has(healthSummary(gone, missing("health.txt", "")), "could not start: not found"))
      << healthSummary(gone, {});
}

TEST(ReportText, TunedSummaryListsTheTablesChoices) {
  const ReportInputs in = healthyTuned();
  const std::vector<std::string> lines = tuneSummary(in.tune, in.table);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "Tune: tuned table written (table.txt); what it chooses:");
  EXPECT_EQ(lines[1], "sym   cc=12.0 link=pcie-switch ranks=4 upto=32KiB algo=oneshot variant=pull");
  EXPECT_EQ(lines[3], "band  cc=12.0 link=pcie-switch ranks=4 coll=allreduce upto=1MiB algo=ring proto=ll channels=0");
}

TEST(ReportText, TuneNotRunSaysWhy) {
  ToolRun skipped;
  skipped.tool = "symmem-tune";
  skipped.problem = "--no-tune";
  EXPECT_EQ(tuneSummary(skipped, missing("table.txt", "")), std::vector<std::string>{"Tune: not run (--no-tune)"});
  const std::vector<std::string> cannot = tuneSummary(
      exited("symmem-tune", 1, "", "symmem-tune: needs at least 2 GPUs (found 1)"), missing("table.txt", ""));
  ASSERT_EQ(cannot.size(), 1u);
  EXPECT_EQ(cannot[0], "Tune: cannot run here (symmem-tune exit 1): `symmem-tune: needs at least 2 GPUs (found 1)`");
}

TEST(ReportText, TuneFailuresKeepWhatTheTableHolds) {
  const Artifact table = present("table.txt", kTable);
  const std::vector<std::string> some = tuneSummary(exited("symmem-tune", 3), table);
  ASSERT_EQ(some.size(), 4u);
  EXPECT_TRUE(has(some[0], "some world sizes failed (symmem-tune exit 3); the table holds the others")) << some[0];
  EXPECT_EQ(tuneSummary(exited("symmem-tune", 3), missing("table.txt", ""))[0],
            "Tune: some world sizes failed (symmem-tune exit 3), no table");
  EXPECT_TRUE(has(tuneSummary(exited("symmem-tune", 4), table)[0], "**wrong results**"));
  ToolRun killed;
  killed.tool = "symmem-tune";
  killed.end = RunEnd::Signalled;
  killed.signal = 9;
  EXPECT_EQ(tuneSummary(killed, table), std::vector<std::string>{"Tune: no table: symmem-tune killed by signal 9"});
}

TEST(ReportText, TopologySourceFromSymmemInfosHeading) {
  EXPECT_EQ(topologySourceOf("nccl-symmem 0.1.0\n\nno GPU detected: the bundled default machine, 8x ...\n"),
            TopologySource::BundledDefault);
  EXPECT_EQ(topologySourceOf("x\nthis machine:\nTopology from nvml+hwloc: 4 GPUs\n"), TopologySource::ThisMachine);
  EXPECT_EQ(topologySourceOf("topology from <path>/topo.txt:\n"), TopologySource::TopologyFile);
  EXPECT_EQ(topologySourceOf("something else\n"), TopologySource::Unknown);
  const std::string bundled =
      topologySummary(exited("symmem-info", 0), present("topology.txt", "no GPU detected: x\n"));
  EXPECT_TRUE(has(bundled, "**no GPU detected**")) << bundled;
  EXPECT_TRUE(has(bundled, "bundled default machine")) << bundled;
  EXPECT_TRUE(has(bundled, "not this machine")) << bundled;
  const ReportInputs in = healthyTuned();
  EXPECT_EQ(topologySummary(in.info, in.topology),
            "Topology: this machine, as symmem-info detected it (Topology from nvml+hwloc: 4 GPUs)");
  ToolRun gone;
  gone.end = RunEnd::CouldNotStart;
  gone.problem = "not found";
  EXPECT_EQ(topologySummary(gone, missing("topology.txt", "")),
            "Topology: not available (symmem-info could not start: not found)");
}

TEST(ReportText, PlotsSummaryForEachOutcome) {
  ReportInputs in = healthyTuned();
  EXPECT_EQ(plotsSummary(in), "Plots: 2 drawn (health-bandwidth.png, latency-4ranks.png)");
  in.pngs.clear();
  EXPECT_TRUE(has(plotsSummary(in), "nothing to plot"));
  in.plots = exited("symmem-report-plots", 3, "", "matplotlib is not installed");
  const std::string noMpl = plotsSummary(in);
  EXPECT_TRUE(has(noMpl, "matplotlib is not installed for python3")) << noMpl;
  EXPECT_TRUE(has(noMpl, "`symmem-report-plots .` in this folder")) << noMpl;
  in.plots = exited("symmem-report-plots", 127, "", "env: 'python3': No such file or directory");
  EXPECT_TRUE(has(plotsSummary(in), "python3 was not found"));
  in.plots = exited("symmem-report-plots", 1, "", "Traceback: KeyError 'bytes'");
  EXPECT_TRUE(has(plotsSummary(in), "symmem-report-plots exit 1: `Traceback: KeyError 'bytes'`")) << plotsSummary(in);
}

// ---- report.md ----------------------------------------------------------------------------------------

TEST(ReportText, ReportHasEverySection) {
  const std::string md = renderReport(healthyTuned());
  for (const char* section : {"# nccl-symmem report\n", "\n## Summary\n", "\n## Versions\n", "\n## Commands\n",
                              "\n## Topology\n", "\n### Configuration check\n", "\n## Health check\n", "\n## Tune\n",
                              "\n### Table\n", "\n## Plots\n", "\n## Files\n"})
    EXPECT_TRUE(has(md, section)) << section << "\n" << md;
  EXPECT_TRUE(has(md, "Created 2026-12-01 13:04:52 UTC by `symmem-report --quick`"));
  EXPECT_TRUE(has(md, "| nccl-symmem | 0.1.0 |"));
  EXPECT_TRUE(has(md, "| NCCL_DEBUG | `WARN` |"));
  // Each tool's command with its result and duration.
  EXPECT_TRUE(has(md, "| health check | `symmem-health` | exit 0 | 1.2 s |")) << md;
  // The texts, fenced; the CSVs counted; the plots embedded; the files with their sizes and the total.
  EXPECT_TRUE(has(md, "```text\npair  write  read\n0>1   25.1   20.3\nP2P healthy\n```\n"));
  EXPECT_TRUE(has(md, "`health.csv`: 2 data rows"));
  EXPECT_TRUE(has(md, "`latency.csv`: 1 data row."));
  EXPECT_TRUE(has(md, "![latency-4ranks.png](latency-4ranks.png)"));
  EXPECT_TRUE(has(md, "| latency-4ranks.png | 58.6 KiB |"));
  EXPECT_TRUE(has(md, "The folder holds 3 files, 62.6 KiB in all."));
  EXPECT_TRUE(has(md, "  - `sym   cc=12.0 link=pcie-switch ranks=4 upto=32KiB algo=oneshot variant=pull`\n"));
  EXPECT_FALSE(has(md, "Missing from this folder"));
  EXPECT_FALSE(has(md, "**Interrupted**"));
}

TEST(ReportText, ReportWithToolsMissing) {
  ReportInputs in;
  in.createdUtc = "now";
  in.invocation = "symmem-report";
  for (ToolRun* r : {&in.info, &in.check, &in.health, &in.tune, &in.plots}) {
    r->end = RunEnd::CouldNotStart;
    r->problem = "not found: <path>/tool";
  }
  in.info.tool = "symmem-info";
  in.health.tool = "symmem-health";
  in.tune.tool = "symmem-tune";
  in.topology = missing("topology.txt", whyNoOutput(in.info));
  in.healthText = missing("health.txt", whyNoOutput(in.health));
  in.healthCsv = missing("health.csv", whyNoOutput(in.health));
  in.tuneText = missing("tune.txt", whyNoOutput(in.tune));
  in.table = missing("table.txt", whyNoOutput(in.tune));
  in.latencyCsv = missing("latency.csv", whyNoOutput(in.tune));
  in.files = {{"report.md", 900}};
  const std::string md = renderReport(in);
  EXPECT_TRUE(has(md, "- Topology: not available (symmem-info could not start: not found: <path>/tool)")) << md;
  EXPECT_TRUE(has(md, "- Health check: no verdict: symmem-health could not start")) << md;
  EXPECT_TRUE(has(md, "- Tune: no table: symmem-tune could not start")) << md;
  EXPECT_TRUE(has(md, "- Missing from this folder:\n  - topology.txt: symmem-info could not start: not found")) << md;
  EXPECT_TRUE(has(md, "  - latency.csv: symmem-tune could not start")) << md;
  EXPECT_TRUE(has(md, "| tune | - | could not start: not found: <path>/tool | - |")) << md;
  EXPECT_TRUE(has(md, "Environment (SYMMEM_\\*, NCCL_\\*, CUDA_VISIBLE_DEVICES): none set."));
  EXPECT_TRUE(has(md, "The folder holds 1 file, 900 B in all."));
}

TEST(ReportText, ReportShowsTheStderrOfAFailedToolAndAnInterruption) {
  ReportInputs in = healthyTuned();
  in.tune = exited("symmem-tune", 1, "", "symmem-tune: needs at least 2 GPUs");
  in.interrupted = true;
  const std::string md = renderReport(in);
  EXPECT_TRUE(has(md,
                  "`symmem-tune` (exit 1), the last lines it wrote to stderr:\n\n```text\nsymmem-tune: needs at "
                  "least 2 GPUs\n```\n"))
      << md;
  EXPECT_TRUE(has(md, "**Interrupted**"));
}

TEST(ReportText, MissingOutputsNameEachFileAndWhy) {
  ReportInputs in = healthyTuned();
  ToolRun skipped;
  skipped.tool = "symmem-tune";
  skipped.problem = "--no-tune";
  in.table = missing("table.txt", whyNoOutput(skipped));
  in.healthCsv = missing("health.csv", whyNoOutput(exited("symmem-health", 0)));
  EXPECT_EQ(missingOutputs(in), (std::vector<std::string>{"health.csv: symmem-health exited 0 without writing it",
                                                          "table.txt: symmem-tune not run (--no-tune)"}));
}

// ---- pieces -------------------------------------------------------------------------------------------

TEST(ReportText, FenceIsLongerThanAnyBacktickRunInside) {
  EXPECT_EQ(fenced("a\n"), "```text\na\n```\n");
  EXPECT_EQ(fenced("a"), "```text\na\n```\n");
  EXPECT_EQ(fenced("x ``` y\n````\n"), "`````text\nx ``` y\n````\n`````\n");
}

TEST(ReportText, CommandLinesQuoteWhatTheShellWouldSplit) {
  EXPECT_EQ(shellQuote("--csv"), "--csv");
  EXPECT_EQ(shellQuote("./health.csv"), "./health.csv");
  EXPECT_EQ(shellQuote("a b"), "'a b'");
  EXPECT_EQ(shellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(shellQuote(""), "''");
  EXPECT_EQ(shellQuote("$HOME"), "'$HOME'");
  EXPECT_EQ(commandLine({"symmem-tune", "--gpus", "0,1", "--out", "my table.txt"}),
            "symmem-tune --gpus 0,1 --out 'my table.txt'");
}

TEST(ReportText, CsvNotes) {
  EXPECT_EQ(csvNote(present("health.csv", "record,gpu_a,gpu_b,field,value\n"), kHealthCsvHeader),
            "`health.csv`: 0 data rows");
  EXPECT_TRUE(has(csvNote(present("latency.csv", "bytes,us\n1,2\n"), kLatencyCsvHeader),
                  "its header is `bytes,us`, not the expected"));
  EXPECT_EQ(csvNote(present("health.csv", ""), kHealthCsvHeader), "`health.csv`: empty");
  EXPECT_EQ(csvNote(missing("health.csv", "symmem-health exited 4 without writing it"), kHealthCsvHeader),
            "`health.csv`: not available (symmem-health exited 4 without writing it)");
}

TEST(ReportText, SmallPieces) {
  EXPECT_EQ(formatSize(812), "812 B");
  EXPECT_EQ(formatSize(4300), "4.2 KiB");
  EXPECT_EQ(formatSize(3u << 20), "3.0 MiB");
  EXPECT_EQ(lastLines("a\n\nb\nc\n\n", 2), "b\nc");
  EXPECT_EQ(lastLines("", 3), "");
  EXPECT_EQ(tableChoiceLines("# entry x\nmeta y\n  entry cc=8.0 link=nvlink ranks=2 oneshot=1MiB twoshot=8MiB\n"),
            std::vector<std::string>{"entry cc=8.0 link=nvlink ranks=2 oneshot=1MiB twoshot=8MiB"});
  EXPECT_EQ(runEndText(exited("x", 3)), "exit 3");
  ToolRun interrupted;
  interrupted.end = RunEnd::Interrupted;
  EXPECT_EQ(runEndText(interrupted), "interrupted (killed)");
}

}  // namespace
}  // namespace symmem::report

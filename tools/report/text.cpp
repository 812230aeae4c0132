// SPDX-License-Identifier: Apache-2.0
#include "tools/report/text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace symmem::report {

namespace {

constexpr size_t kEmbeddedMaxBytes = size_t{64} << 10;  // larger texts are cut in report.md (the file has all)

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::vector<std::string_view> splitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    pos = end + 1;
  }
  return lines;
}

std::string_view trimmed(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.1f s" : "%.0f s", s);
  return buf;
}

// A Markdown table cell: one line, '|' escaped.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

// `text` as inline code, with a fence of backticks longer than any run inside it.
std::string code(std::string_view text) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string ticks(longest + 1, '`');
  const bool pad = !text.empty() && (text.front() == '`' || text.back() == '`');
  return ticks + (pad ? " " : "") + std::string(text) + (pad ? " " : "") + ticks;
}

// The most telling line a tool left: the last of its stderr (where tools say why they stop), else the
// last of its stdout.
std::string reasonLine(const ToolRun& run) {
  std::string line = lastLines(run.stderrTail, 1);
  if (line.empty()) line = lastLines(run.stdoutText, 1);
  return line;
}

std::string withReason(std::string text, const ToolRun& run) {
  if (const std::string why = reasonLine(run); !why.empty()) text += ": " + code(why);
  return text;
}

void embed(std::string& md, const Artifact& a) {
  if (!a.present) {
    md += "Not available: " + a.missing + ".\n\n";
    return;
  }
  if (a.text.empty()) {
    md += code(a.name) + " is empty.\n\n";
    return;
  }
  if (a.text.size() > kEmbeddedMaxBytes) {
    std::string_view head = std::string_view(a.text).substr(0, kEmbeddedMaxBytes);
    head = head.substr(0, head.rfind('\n') + 1);
    md += "The first " + formatSize(head.size()) + " of " + code(a.name) + " (the file holds all " +
          formatSize(a.text.size()) + "):\n\n" + fenced(head) + "\n";
    return;
  }
  md += "From " + code(a.name) + ":\n\n" + fenced(a.text) + "\n";
}

}  // namespace

std::string runEndText(const ToolRun& run) {
  switch (run.end) {
    case RunEnd::NotRun:
      return "not run" + (run.problem.empty() ? std::string() : " (" + run.problem + ")");
    case RunEnd::CouldNotStart:
      return "could not start: " + run.problem;
    case RunEnd::Exited:
      return "exit " + std::to_string(run.exitCode);
    case RunEnd::Signalled:
      return "killed by signal " + std::to_string(run.signal);
    case RunEnd::TimedOut:
      return "timed out after " + std::to_string(run.timeoutSeconds) + " s (killed)";
    case RunEnd::Interrupted:
      return "interrupted (killed)";
    case RunEnd::Lost:
      return "could not be waited for: " + run.problem;
  }
  return "unknown";
}

TopologySource topologySourceOf(std::string_view infoText) {
  for (std::string_view line : splitLines(infoText)) {
    if (startsWith(line, "no GPU detected") || startsWith(line, "--default-machine"))
      return TopologySource::BundledDefault;
    if (startsWith(line, "this machine:")) return TopologySource::ThisMachine;
    if (startsWith(line, "topology from ")) return TopologySource::TopologyFile;
  }
  return TopologySource::Unknown;
}

PlotsState plotsStateOf(const ToolRun& plots, const std::vector<std::string>& pngs) {
  if (plots.end == RunEnd::NotRun) return PlotsState::NotRun;
  if (plots.end != RunEnd::Exited) return PlotsState::Failed;
  switch (plots.exitCode) {
    case 0:
      return pngs.empty() ? PlotsState::NothingToPlot : PlotsState::Drawn;
    case 3:
      return PlotsState::NoMatplotlib;
    case 126:
    case 127:  // env(1): python3 not found, or not executable
      return PlotsState::NoPython;
    default:
      return PlotsState::Failed;
  }
}

std::string topologySummary(const ToolRun& info, const Artifact& topology) {
  if (!topology.present || topology.text.empty())
    return "Topology: not available (symmem-info " + runEndText(info) + ")";
  std::string facts;
  for (std::string_view line : splitLines(topology.text)) {
    if (startsWith(line, "Topology from ") || startsWith(line, "Communicator over all GPUs"))
      facts += (facts.empty() ? "" : "; ") + std::string(trimmed(line));
  }
  std::string text;
  switch (topologySourceOf(topology.text)) {
    case TopologySource::ThisMachine:
      text = "Topology: this machine, as symmem-info detected it";
      break;
    case TopologySource::TopologyFile:
      text = "Topology: from a topology file (SYMMEM_TOPO_FILE), not detected";
      break;
    case TopologySource::BundledDefault:
      return "Topology: **no GPU detected**: topology.txt shows symmem-info's bundled default machine "
             "(8x RTX PRO 6000 Blackwell Server Edition, PCIe Gen5, two sockets), not this machine";
    case TopologySource::Unknown:
      text = "Topology: symmem-info does not say where it came from (see topology.txt)";
      break;
  }
  if (!facts.empty()) text += " (" + facts + ")";
  if (!info.exited(0)) text += "; symmem-info " + runEndText(info);
  return text;
}

// symmem-health's own one-line verdict ("verdict: not useful (exit 3): one GPU; ..."), "" if absent.
std::string verdictLine(const Artifact& healthText) {
  if (!healthText.present) return {};
  for (std::string_view line : splitLines(healthText.text))
    if (startsWith(trimmed(line), "verdict: ")) return std::string(trimmed(line));
  return {};
}

std::string healthSummary(const ToolRun& health, const Artifact& healthText) {
  const std::string prefix = "Health check: ";
  if (health.end != RunEnd::Exited) return prefix + "no verdict: symmem-health " + runEndText(health);
  // A tool that said nothing at all (a stand-in that only exits) has judged nothing, whatever its code.
  const bool said = (healthText.present && !trimmed(healthText.text).empty()) || !trimmed(health.stderrTail).empty();
  const std::string exit = "symmem-health exit " + std::to_string(health.exitCode);
  if (!said) return withReason(prefix + "no verdict: " + exit + " without printing a result", health);
  const std::string verdict = verdictLine(healthText);
  switch (health.exitCode) {
    case 0:
      return prefix + "**healthy**: P2P works on every pair checked (" + exit + ")" +
             (verdict.empty() ? "" : ": " + code(verdict));
    case 1:
      return prefix + "**P2P unsafe** on this machine (" + exit +
             "): the symmetric kernels must not run here; the findings are below";
    case 2:
      return withReason(prefix + "no verdict: symmem-health refused its command line (" + exit + ")", health);
    case 3:
      if (!verdict.empty()) return prefix + "the plugin is not useful here (" + exit + "): " + code(verdict);
      return withReason(prefix + "the plugin is not useful here (" + exit + ")", health);
    case 4:
      return withReason(prefix + "no verdict: symmem-health could not run its checks (" + exit + ")", health);
    default:
      return withReason(prefix + "no verdict: " + exit + ", not one of its documented codes", health);
  }
}

std::vector<std::string> tableChoiceLines(std::string_view tableText) {
  std::vector<std::string> lines;
  for (std::string_view line : splitLines(tableText)) {
    const std::string_view t = trimmed(line);
    if (startsWith(t, "entry ") || startsWith(t, "sym ") || startsWith(t, "band ")) lines.emplace_back(t);
  }
  return lines;
}

std::vector<std::string> tuneSummary(const ToolRun& tune, const Artifact& table) {
  const std::string prefix = "Tune: ";
  std::vector<std::string> out;
  const std::vector<std::string> choices = table.present ? tableChoiceLines(table.text) : std::vector<std::string>{};
  const std::string code = "symmem-tune exit " + std::to_string(tune.exitCode);
  if (tune.end == RunEnd::NotRun) {
    out.push_back(prefix + "not run" + (tune.problem.empty() ? "" : " (" + tune.problem + ")"));
  } else if (tune.end != RunEnd::Exited) {
    out.push_back(prefix + "no table: symmem-tune " + runEndText(tune));
  } else {
    switch (tune.exitCode) {
      case 0:
        out.push_back(prefix + (choices.empty() ? "symmem-tune exit 0 but its table holds no choice"
                                                : "tuned table written (table.txt); what it chooses:"));
        break;
      case 1:
        out.push_back(withReason(prefix + "cannot run here (" + code + ")", tune));
        break;
      case 2:
        out.push_back(withReason(prefix + "symmem-tune refused its command line (" + code + ")", tune));
        break;
      case 3:
        out.push_back(prefix + "some world sizes failed (" + code + ")" +
                      (choices.empty() ? std::string(", no table") : "; the table holds the others:"));
        break;
      case 4:
        out.push_back(prefix + "**wrong results** (" + code + "): a kernel returned wrong sums; do not use this table" +
                      (choices.empty() ? "" : ":"));
        break;
      default:
        out.push_back(withReason(prefix + code + ", not one of its documented codes", tune));
        break;
    }
  }
  if (tune.end == RunEnd::Exited) out.insert(out.end(), choices.begin(), choices.end());
  return out;
}

std::string plotsSummary(const ReportInputs& in) {
  const std::string later = "; to draw them later, run " + code("symmem-report-plots .") +
                            " in this folder (it is installed beside symmem-report)";
  switch (plotsStateOf(in.plots, in.pngs)) {
    case PlotsState::Drawn: {
      std::string names;
      for (const std::string& p : in.pngs) names += (names.empty() ? "" : ", ") + p;
      return "Plots: " + std::to_string(in.pngs.size()) + " drawn (" + names + ")";
    }
    case PlotsState::NothingToPlot:
      return "Plots: nothing to plot (no measured values in latency.csv or health.csv)";
    case PlotsState::NoMatplotlib:
      return "Plots: not drawn: matplotlib is not installed for python3 (" + code("python3 -m pip install matplotlib") +
             " or " + code("apt-get install python3-matplotlib") + ")" + later;
    case PlotsState::NoPython:
      return "Plots: not drawn: python3 was not found" + later;
    case PlotsState::Failed:
      return withReason("Plots: not drawn: symmem-report-plots " + runEndText(in.plots), in.plots) + later;
    case PlotsState::NotRun:
      return "Plots: not drawn (" + (in.plots.problem.empty() ? std::string("not run") : in.plots.problem) + ")" +
             later;
  }
  return "Plots: unknown";
}

std::string liveStatsSummary(const LiveStatsSeen& seen) {
  if (!seen.problem.empty()) return "Live statistics: not read: " + seen.problem;
  if (seen.processes == 0)
    return "Live statistics: no process had the plugin loaded (no statistics file in " + code(seen.dir) + ")";
  const auto plural = [](int n, const char* one) { return std::to_string(n) + " " + one + (n == 1 ? "" : "s"); };
  return "Live statistics: " + plural(seen.processes, "process") + " with the plugin loaded, " +
         plural(seen.communicators, "communicator") + " (" + code("live-stats.txt") + ", " + code("live-stats.json") +
         ")";
}

std::string whyNoOutput(const ToolRun& run) {
  switch (run.end) {
    case RunEnd::NotRun:
      return run.tool + " not run" + (run.problem.empty() ? "" : " (" + run.problem + ")");
    case RunEnd::Exited:
      return run.tool + " exited " + std::to_string(run.exitCode) + " without writing it";
    default:
      return run.tool + " " + runEndText(run);
  }
}

std::string csvNote(const Artifact& csv, std::string_view expectedHeader) {
  if (!csv.present) return code(csv.name) + ": not available (" + csv.missing + ")";
  const std::vector<std::string_view> lines = splitLines(csv.text);
  if (lines.empty()) return code(csv.name) + ": empty";
  if (trimmed(lines.front()) != expectedHeader)
    return code(csv.name) + ": its header is " + code(trimmed(lines.front())) + ", not the expected " +
           code(expectedHeader) + " (kept as written; the plots may skip it)";
  const size_t rows = static_cast<size_t>(
      std::count_if(lines.begin() + 1, lines.end(), [](std::string_view l) { return !trimmed(l).empty(); }));
  return code(csv.name) + ": " + std::to_string(rows) + " data row" + (rows == 1 ? "" : "s");
}

std::vector<std::string> missingOutputs(const ReportInputs& in) {
  std::vector<std::string> out;
  for (const Artifact* a : {&in.topology, &in.healthText, &in.healthCsv, &in.tuneText, &in.table, &in.latencyCsv})
    if (!a->present) out.push_back(a->name + ": " + a->missing);
  return out;
}

std::string fenced(std::string_view text, std::string_view info) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(std::max<size_t>(3, longest + 1), '`');
  std::string out = fence + std::string(info) + "\n" + std::string(text);
  if (!text.empty() && text.back() != '\n') out += '\n';
  return out + fence + "\n";
}

std::string shellQuote(std::string_view arg) {
  const bool safe = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
  });
  if (safe) return std::string(arg);
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string commandLine(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out.append(out.empty() ? "" : " ").append(shellQuote(a));
  return out;
}

std::string formatSize(uint64_t bytes) {
  char buf[32];
  if (bytes < 1024) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else if (bytes < (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  }
  return buf;
}

std::string lastLines(std::string_view text, int maxLines) {
  std::vector<std::string_view> kept;
  for (std::string_view line : splitLines(text))
    if (!trimmed(line).empty()) kept.push_back(line);
  const size_t from = kept.size() > static_cast<size_t>(maxLines) ? kept.size() - maxLines : 0;
  std::string out;
  for (size_t i = from; i < kept.size(); ++i) out.append(i > from ? "\n" : "").append(kept[i]);
  return out;
}

std::string renderReport(const ReportInputs& in) {
  std::string md = "# nccl-symmem report\n\n";
  md += "Created " + in.createdUtc + " by " + code(in.invocation) +
        ". Names, users and paths of the machine are replaced by `<host>`, `<user>`, `<path>` "
        "(docs/report.md says how); attach the whole folder, or a `.tar.gz` of it, to an issue.\n\n";
  if (in.interrupted)
    md +=
        "**Interrupted**: symmem-report was stopped before every step ran; this report holds what had "
        "finished.\n\n";

  md += "## Summary\n\n";
  md += "- " + topologySummary(in.info, in.topology) + "\n";
  md += "- " + healthSummary(in.health, in.healthText) + "\n";
  const std::vector<std::string> tune = tuneSummary(in.tune, in.table);
  for (size_t i = 0; i < tune.size(); ++i) md += i == 0 ? "- " + tune[i] + "\n" : "  - " + code(tune[i]) + "\n";
  md += "- " + plotsSummary(in) + "\n";
  md += "- " + liveStatsSummary(in.liveStats) + "\n";
  if (const std::vector<std::string> missing = missingOutputs(in); !missing.empty()) {
    md += "- Missing from this folder:\n";
    for (const std::string& m : missing) md += "  - " + m + "\n";
  }
  if (!in.redactionNotes.empty()) {
    md += "- Redaction, after the check of the finished folder:\n";
    for (const std::string& n : in.redactionNotes) md += "  - " + n + "\n";
  }

  md += "\n## Versions\n\n| component | version |\n|---|---|\n";
  for (const Row& r : in.versions) md += "| " + cell(r.name) + " | " + cell(r.value) + " |\n";
  md += "\nEnvironment (SYMMEM_\\*, NCCL_\\*, CUDA_VISIBLE_DEVICES):";
  if (in.environment.empty()) {
    md += " none set.\n";
  } else {
    md += "\n\n| variable | value |\n|---|---|\n";
    for (const Row& r : in.environment) md += "| " + cell(r.name) + " | " + code(cell(r.value)) + " |\n";
  }

  md += "\n## Commands\n\n";
  md += std::string("The tools ran from ") + code(in.toolsDir) +
        (in.toolsDirOverridden ? " (SYMMEM_REPORT_TOOLS_DIR)" : " (the directory of symmem-report)") +
        "; each command as it ran, with its result and how long it took.\n\n";
  md += "| step | command | result | time |\n|---|---|---|---|\n";
  const std::pair<const char*, const ToolRun*> steps[] = {
      {"topology", &in.info}, {"configuration check", &in.check},    {"health check", &in.health},
      {"tune", &in.tune},     {"tuned table check", &in.tableCheck}, {"plots", &in.plots}};
  for (const auto& [step, run] : steps) {
    const bool started = run->end != RunEnd::NotRun && run->end != RunEnd::CouldNotStart;
    md += std::string("| ") + step + " | " + (run->command.empty() ? "-" : code(cell(run->command))) + " | " +
          cell(runEndText(*run)) + " | " + (started ? seconds(run->seconds) : "-") + " |\n";
  }
  for (const auto& [step, run] : steps) {
    if (run->stderrTail.empty() && !run->stdoutTruncated) continue;
    md += "\n" + code(run->tool) + " (" + runEndText(*run) + ")";
    if (run->stdoutTruncated) md += ": its output was longer than the report keeps and was cut";
    if (!run->stderrTail.empty()) md += ", the last lines it wrote to stderr:\n\n" + fenced(run->stderrTail);
    md += "\n";
  }

  md += "\n## Topology\n\n";
  embed(md, in.topology);
  md += "### Configuration check\n\n";
  if (in.check.end == RunEnd::Exited && !in.check.stdoutText.empty()) {
    md += "From " + code("symmem-info --check") + " (" + runEndText(in.check) + "):\n\n" + fenced(in.check.stdoutText) +
          "\n";
  } else {
    md += "Not available: symmem-info --check " + runEndText(in.check) + ".\n\n";
  }

  md += "## Health check\n\n";
  embed(md, in.healthText);
  md += csvNote(in.healthCsv, kHealthCsvHeader) + ".\n\n";

  md += "## Tune\n\n### Summary\n\n";
  embed(md, in.tuneText);
  md += "### Table\n\n";
  embed(md, in.table);
  if (in.tableCheck.end == RunEnd::Exited && !in.tableCheck.stdoutText.empty())
    md += "Checked with " + code(in.tableCheck.command) + " (" + runEndText(in.tableCheck) + "):\n\n" +
          fenced(in.tableCheck.stdoutText) + "\n";
  md += csvNote(in.latencyCsv, kLatencyCsvHeader) + ".\n\n";

  md += "## Plots\n\n";
  if (in.pngs.empty()) {
    md += plotsSummary(in) + ".\n\n";
  } else {
    for (const std::string& p : in.pngs) md += "![" + p + "](" + p + ")\n\n";
  }

  md += "## Live statistics\n\n";
  if (in.liveStats.processes > 0) {
    md += "What the plugin had done in the processes running it when the report was made, as " +
          code("symmem-stat --once") + " shows it (docs/live-stats.md):\n\n";
    embed(md, in.liveStatsText);
  } else {
    md += liveStatsSummary(in.liveStats) + ".\n\n";
  }
  if (!in.liveStats.notes.empty()) {
    md += "Files not read:\n\n";
    for (const std::string& n : in.liveStats.notes) md += "- " + n + "\n";
    md += "\n";
  }

  md += "## Files\n\n| file | size |\n|---|---|\n";
  uint64_t total = 0;
  for (const FileSize& f : in.files) {
    md += "| " + cell(f.name) + " | " + formatSize(f.bytes) + " |\n";
    total += f.bytes;
  }
  md += "\nThe folder holds " + std::to_string(in.files.size()) + " file" + (in.files.size() == 1 ? "" : "s") + ", " +
        formatSize(total) + " in all.\n";
  return md;
}

}  // namespace symmem::report

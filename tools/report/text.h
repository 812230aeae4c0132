// SPDX-License-Identifier: Apache-2.0
#pragma once
// report.md of symmem-report, assembled from plain values by pure functions: what each tool run ended
// with, the texts they left, the versions, the files. symmem_report.cpp gathers the values (runs the
// tools, reads the files) and writes the result through the Redactor (tools/report/redact.h); the
// tests build the values by hand. docs/report.md describes the folder.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace symmem::report {

// How one run of a tool ended.
enum class RunEnd : int {
  NotRun,         // skipped: `problem` says why (--no-tune, an earlier interruption)
  CouldNotStart,  // not found, not executable, fork or exec failed: `problem` names the call and the error
  Exited,         // exitCode holds its status
  Signalled,      // killed by `signal` (not by us)
  TimedOut,       // still running after the limit: its process group was killed
  Interrupted,    // the user interrupted symmem-report (SIGINT, SIGTERM, SIGHUP) while it ran
  Lost,           // started, but waitpid failed: `problem` names the error
};

struct ToolRun {
  std::string tool;     // "symmem-health"
  std::string command;  // the exact command line, shell-quoted (commandLine())
  RunEnd end = RunEnd::NotRun;
  int exitCode = -1;
  int signal = 0;
  double seconds = 0;
  int timeoutSeconds = 0;
  std::string problem;     // NotRun / CouldNotStart: why
  std::string stdoutText;  // what it printed (bounded)
  bool stdoutTruncated = false;
  std::string stderrTail;  // its last stderr lines, kept only when it did not exit 0
  bool exited(int code) const { return end == RunEnd::Exited && exitCode == code; }
};

// "exit 0", "exit 3", "killed by signal 9", "timed out after 600 s (killed)", "interrupted",
// "could not start: ...", "not run: ...".
std::string runEndText(const ToolRun& run);

// One output of the report: present with its text, or missing with the reason.
struct Artifact {
  std::string name;  // "health.csv"
  bool present = false;
  std::string text;
  std::string missing;  // why it is not there (when !present)
};

// Where the topology symmem-info printed came from (its heading line says).
enum class TopologySource : int { ThisMachine, TopologyFile, BundledDefault, Unknown };
TopologySource topologySourceOf(std::string_view infoText);

// What the plot step made of the CSVs.
enum class PlotsState : int { Drawn, NothingToPlot, NoMatplotlib, NoPython, Failed, NotRun };
PlotsState plotsStateOf(const ToolRun& plots, const std::vector<std::string>& pngs);

struct Row {
  std::string name;
  std::string value;
};

struct FileSize {
  std::string name;
  uint64_t bytes = 0;
};

// What the report saw of the plugin's live statistics (tools/common/stats_gather.h): the processes
// running it now, when symmem-report ran.
struct LiveStatsSeen {
  std::string dir;                 // where the files were looked for
  int processes = 0;               // running processes whose file was read
  int communicators = 0;           // their communicators (live and ended)
  std::string problem;             // "" or why the directory could not be read
  std::vector<std::string> notes;  // files not read, and why (symmem-stat's lines)
};

struct ReportInputs {
  std::string createdUtc;                                // "2026-12-01 13:04:52 UTC"
  std::string invocation;                                // how symmem-report was called
  std::string toolsDir;                                  // where the tools ran from (redacted when written)
  bool toolsDirOverridden = false;                       // SYMMEM_REPORT_TOOLS_DIR set
  std::vector<Row> versions;                             // "nccl-symmem", "0.1.0"; ...
  std::vector<Row> environment;                          // SYMMEM_* and NCCL_* set, in name order
  ToolRun info, check, health, tune, tableCheck, plots;  // tableCheck: symmem-info --check of the tuned table
  Artifact topology, healthText, healthCsv, tuneText, table, latencyCsv;
  LiveStatsSeen liveStats;
  Artifact liveStatsText, liveStatsJson;  // present when a process's statistics were read
  std::vector<std::string> pngs;          // drawn plots, in name order
  std::vector<FileSize> files;            // every file of the folder (report.md included), in name order
  std::string folderName;                 // the folder's own name, for the command that draws the plots later
  bool interrupted = false;
  // What the check of the finished folder found after redaction and did about it, one line per file:
  // "health.txt: the user name stood inside a longer word; replaced there too".
  std::vector<std::string> redactionNotes;
};

// ---- summary lines (each one line of Markdown, no trailing newline) ---------------------------------

std::string topologySummary(const ToolRun& info, const Artifact& topology);
std::string healthSummary(const ToolRun& health, const Artifact& healthText);
// The tune result: a first line, then the table's choices (tableChoiceLines) when it wrote a table.
std::vector<std::string> tuneSummary(const ToolRun& tune, const Artifact& table);
std::string plotsSummary(const ReportInputs& in);
// "Live statistics: 2 processes with the plugin loaded, 5 communicators (live-stats.txt, ...)", or
// one line saying there were none.
std::string liveStatsSummary(const LiveStatsSeen& seen);

// The lines of a table file that say what it chose: its entry, sym and band lines.
std::vector<std::string> tableChoiceLines(std::string_view tableText);

// Why a tool left no output file: "symmem-tune not run (--no-tune)", "symmem-health exited 1 without
// writing it", "symmem-info could not start: ...".
std::string whyNoOutput(const ToolRun& run);

// One line about a CSV of the folder: its data rows, or that its header is not the one expected.
std::string csvNote(const Artifact& csv, std::string_view expectedHeader);

// The folder's files missing from a complete report, each with the reason: "health.csv: ...".
std::vector<std::string> missingOutputs(const ReportInputs& in);

// The headers the tools' CSVs start with (docs/report.md).
inline constexpr std::string_view kHealthCsvHeader = "record,gpu_a,gpu_b,field,value";
inline constexpr std::string_view kLatencyCsvHeader = "ranks,link,cc,bytes,path,median_us,min_us,max_us,chosen";

// ---- pieces --------------------------------------------------------------------------------------------

// The text in a fenced block whose fence is longer than any run of backticks inside it.
std::string fenced(std::string_view text, std::string_view info = "text");
// One argument as a POSIX shell reads it back: bare when safe, else single-quoted.
std::string shellQuote(std::string_view arg);
std::string commandLine(const std::vector<std::string>& argv);
// "812 B", "4.2 KiB", "1.3 MiB".
std::string formatSize(uint64_t bytes);
// The last `maxLines` non-empty lines of `text`, joined by '\n'.
std::string lastLines(std::string_view text, int maxLines);

// report.md.
std::string renderReport(const ReportInputs& in);

}  // namespace symmem::report

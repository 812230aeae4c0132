// SPDX-License-Identifier: Apache-2.0
#pragma once
// The plugin's live statistics as symmem-stat and symmem-report show them: a table in the manner of
// `nvidia-smi dmon`, JSON, and Prometheus's text format (what node_exporter's textfile collector
// reads). Pure functions of snapshots (core/call_stats_segment.h); docs/live-stats.md shows each form.
//
// Rates are calls per second. With an earlier snapshot of the same communicator (same process: PID and
// start time; same slot, communicator and opening time) they are over the time between the two
// snapshots; without one, the mean since the communicator was opened (until it ended, for one that
// has).
#include <optional>
#include <string>
#include <vector>

#include "core/call_stats_segment.h"

namespace symmem {

// A size bucket by its upper bound: "1B" (0 and 1 B), "8B", "16KiB", "1GiB", ">1GiB" (the last one).
std::string bucketLabel(int bucket);

// The same process among earlier snapshots, or null.
const stats::ProcessSnapshot* earlierProcess(const stats::ProcessSnapshot& now,
                                             const std::vector<stats::ProcessSnapshot>& before);
// The same communicator in an earlier snapshot of its process, or null.
const stats::SlotSnapshot* earlierComm(const stats::SlotSnapshot& now, const stats::ProcessSnapshot* before);

// What is shown of one route of one communicator.
struct RouteFigures {
  stats::Route route = stats::Route::Failed;
  uint64_t calls = 0, eager = 0, captured = 0;
  int smallest = -1, largest = -1;  // the size buckets with calls
  std::optional<double> perSecond;  // nullopt: no time passed to measure a rate over
  // The GPU's own figures of this route's kernel (symmetric routes): its executions
  // (stats::kindRuns) and their number per second over the same time as perSecond, graph replays
  // included, which the host's counts never see (nullopt: the GPU does not count); and, summed over
  // the size buckets, the timed executions and their time.
  uint64_t gpuExecutions = 0;
  std::optional<double> gpuPerSecond;
  uint64_t gpuTimed = 0, gpuSumNs = 0, gpuMinNs = 0, gpuMaxNs = 0;
};

struct CommFigures {
  const stats::SlotSnapshot* slot = nullptr;
  bool overInterval = false;         // rates from an earlier snapshot, else since the communicator was opened
  double rateSeconds = 0;            // the time the rates are over
  std::vector<RouteFigures> routes;  // the routes with calls, in Route order
};

// Every communicator of `now`, by slot, with rates against `before` (null: since each was opened).
std::vector<CommFigures> commFigures(const stats::ProcessSnapshot& now, const stats::ProcessSnapshot* before);

// ---- the table -------------------------------------------------------------------------------------

// The two heading lines (names, then units), each starting '#' and ending '\n'.
std::string statsTableHeader();
// One line per (process, communicator, route with calls), without '\n'; a communicator without calls
// yet is one line with route "-".
std::vector<std::string> statsTableRows(const std::vector<stats::ProcessSnapshot>& now,
                                        const std::vector<stats::ProcessSnapshot>& before);

// What the table's rows do not say, one line each: a communicator whose symmetric path is off and why,
// a process with communicators past its slots. `key` names the fact, so that a live view says each
// once.
struct StatsNote {
  std::string key;
  std::string text;
};
std::vector<StatsNote> statsNotes(const std::vector<stats::ProcessSnapshot>& now);

// The heading, the rows and the notes: one snapshot's whole table.
std::string statsTable(const std::vector<stats::ProcessSnapshot>& now,
                       const std::vector<stats::ProcessSnapshot>& before);

// ---- JSON and Prometheus ---------------------------------------------------------------------------

// One JSON document on one line (no '\n'): processes -> communicators -> routes -> buckets and
// kernels -> buckets, with `notes` (files not shown and why) beside them. Keys: docs/live-stats.md.
std::string statsJson(const std::vector<stats::ProcessSnapshot>& now, const std::vector<stats::ProcessSnapshot>& before,
                      const std::vector<std::string>& notes);

// The text exposition format: every family's HELP and TYPE lines, then its non-zero series.
std::string statsPrometheus(const std::vector<stats::ProcessSnapshot>& now);

// A label value as the exposition format writes it between quotes (backslash, quote, newline
// escaped; not valid UTF-8 replaced).
std::string prometheusLabelValue(const std::string& value);
// Nanoseconds as exact decimal seconds: 1500 -> "0.0000015", 2000000000 -> "2".
std::string secondsFromNs(uint64_t ns);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The table file (SYMMEM_TABLE=path): a small, line-based, human-editable text format that
// symmem-tune writes and a person can edit. docs/decision-table.md ("The table file") describes it:
//
//   symmem-table 2
//   # comments and blank lines are ignored
//   meta <free text: GPU model, driver, CUDA/NCCL versions, topology, date>
//   entry cc=12.0 link=pcie-switch ranks=2-3 oneshot=64KiB twoshot=1MiB
//   sym   cc=12.0 link=pcie-switch ranks=4-8 upto=32KiB  algo=oneshot variant=pull
//   sym   cc=12.0 link=pcie-switch ranks=4-8 upto=256KiB algo=twoshot variant=staged
//   band  cc=12.0 link=pcie-switch ranks=8 coll=allreduce upto=256KiB algo=ring proto=ll channels=0
//   end
//
// `entry` sets push limits for (cc, link, ranks): one-shot push up to oneshot, two-shot push above it
// up to twoshot. `sym` lines instead give an entry its symmetric bands one by one, each with its
// algorithm and variant (the first sym line of a key makes the entry; one key takes an entry line or
// sym lines, not both). `band` adds an NCCL choice for sizes up to `upto` to an entry defined earlier
// in the same file. ranks is N, N-M, or 9+ (beyond eight).
//
// Format 2 ends with the line `end`, and a format-2 file without it is refused: a table cut short at a
// line boundary (a full disk, a copy interrupted) would otherwise read as a whole table with fewer
// entries. Format 1 (no end line) still reads, with a note saying that it cannot be checked so.
#include <string>
#include <string_view>
#include <vector>

#include "core/decision_table.h"

namespace symmem {

struct TableFileResult {
  std::vector<Thresholds> entries;
  std::vector<std::string> meta;
  std::vector<std::string> notes;  // for the log's INFO level: "t.txt: format 1 ..."
  std::string error;               // "path:line: problem" on failure; entries are then empty
  bool ok() const { return error.empty(); }
};

TableFileResult parseTableText(std::string_view text, std::string_view fileName);
TableFileResult readTableFile(const std::string& path);

// Entries of the file replace built-in entries with the same key; meta lines are kept.
void applyTableFile(const TableFileResult& file, DecisionTable& table);

// The text of a table file holding `entries` and `meta`: per entry, its entry line when its bands are
// push limits (so that builds without sym lines read it), else its sym lines; then its NCCL bands.
std::string formatTable(const std::vector<Thresholds>& entries, const std::vector<std::string>& meta);

// "64KiB", "1MiB", "8B": exact, largest binary unit that divides the value.
std::string formatBytes(uint64_t bytes);
// "8", "8B", "64K", "64KiB", "1M", "1MiB", "2G", "2GiB" (case-insensitive; K = 1024).
bool parseBytes(std::string_view text, uint64_t& out);

}  // namespace symmem

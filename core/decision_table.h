// SPDX-License-Identifier: Apache-2.0
#pragma once
// The decision table: thresholds keyed by (compute capability, link class, world size).
// Built-in defaults cover 8.0, 8.6, 8.9, 9.0, 10.0, 10.3, 12.0, 12.1; a table file overrides
// entries with the same key. An unlisted capability takes the nearest lower listed one.
#include <string>
#include <vector>

#include "core/decision.h"

namespace symmem {

struct TableLookup {
  const Thresholds* entry = nullptr;  // null: nothing applies (capability below every entry, unknown link)
  ComputeCapability used;             // the capability whose entry was taken
  bool exact = false;                 // false: `used` differs from the requested capability
};

class DecisionTable {
 public:
  // The defaults compiled into the plugin.
  static const DecisionTable& builtIn();

  // Adds or replaces the entry with the same (cc, link, nRanks).
  void set(const Thresholds& entry);

  // The entry for a communicator. nRanks above 8 uses the beyond-eight rule. Capability fallback:
  // the highest listed capability below `cc` of the same major, else the highest of a lower major.
  TableLookup thresholdsFor(ComputeCapability cc, LinkClass link, int nRanks) const;

  const std::vector<Thresholds>& entries() const { return entries_; }

  // Free-form provenance lines (from a table file's `meta` lines).
  std::vector<std::string> meta;

 private:
  std::vector<Thresholds> entries_;
};

class Settings;

// The table `settings` ask for: built-in, overridden by SYMMEM_TABLE if set and valid. A bad file logs
// one WARN (file, line, problem) and the built-in table is used.
DecisionTable tableFor(const Settings& settings);

// The built-in table with the file at `path` applied. A file that cannot be read or parsed is one
// WARN (once per process and file) and the built-in table alone, with `*error` (when given) saying why.
DecisionTable tableWithFile(const std::string& path, std::string* error = nullptr);

// Looks up the entry for a communicator and logs, once per process and capability, a WARN when an
// unlisted capability falls back to another entry (or to none).
TableLookup lookupWithFallbackWarning(const DecisionTable& table, ComputeCapability cc, LinkClass link, int nRanks);

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include "tools/stat/latency_csv.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

#include "core/bounded_file.h"
#include "core/printable_text.h"

namespace symmem {

namespace {

constexpr const char* kTuneHeader = "ranks,link,cc,bytes,path,median_us,min_us,max_us,chosen";
constexpr const char* kNcclTestsHeader =
    "case,size_bytes,dtype,redop,stock_oop_us,plugin_oop_us,oop_ratio,stock_ip_us,plugin_ip_us,ip_ratio";

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

std::vector<std::string> fileLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    out.push_back(l);
  }
  return out;
}

bool wholeNumber(const std::string& s, uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  out = std::strtoull(s.c_str(), nullptr, 10);
  return true;
}

// A time in microseconds: a finite number of 0 or more; `empty` is set for an empty cell.
bool microseconds(const std::string& s, double& out, bool& empty) {
  empty = s.empty() || s == "-";
  if (empty) return true;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(s.c_str(), &end);
  return errno == 0 && end == s.c_str() + s.size() && std::isfinite(out) && out >= 0;
}

std::string at(const std::string& file, size_t line) { return file + " line " + std::to_string(line + 1) + ": "; }

LatencyTableRead parseTune(const std::vector<std::string>& lines, const std::string& file) {
  LatencyTableRead r;
  r.table.source = LatencyTable::Source::TuneCsv;
  r.table.file = file;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    const std::vector<std::string> c = cells(lines[i]);
    uint64_t ranks = 0, bytes = 0;
    double median = 0;
    bool empty = false;
    if (c.size() != 9) {
      r.error = at(file, i) + "expected 9 cells (" + kTuneHeader + "), found " + std::to_string(c.size());
    } else if (!wholeNumber(c[0], ranks) || ranks < 2 || ranks > 4096) {
      r.error = at(file, i) + "bad ranks '" + printableText(c[0]) + "': expected a world size from 2";
    } else if (!wholeNumber(c[3], bytes)) {
      r.error = at(file, i) + "bad bytes '" + printableText(c[3]) + "': expected a whole number";
    } else if (c[4].empty()) {
      r.error = at(file, i) + "empty path";
    } else if (!microseconds(c[5], median, empty)) {
      r.error = at(file, i) + "bad median_us '" + printableText(c[5]) + "': expected microseconds or nothing";
    } else if (c[8] != "0" && c[8] != "1") {
      r.error = at(file, i) + "bad chosen '" + printableText(c[8]) + "': expected 0 or 1";
    }
    if (!r.ok()) return r;
    LatencyWorld* w = nullptr;
    for (LatencyWorld& x : r.table.worlds)
      if (x.ranks == static_cast<int>(ranks)) w = &x;
    if (w == nullptr) {
      r.table.worlds.push_back({static_cast<int>(ranks), c[1], c[2], {}, {}});
      w = &r.table.worlds.back();
    }
    if (!empty) w->medianUs[c[4]][bytes] = median;
    if (c[8] == "1") w->chosen[bytes] = c[4];
  }
  if (r.table.worlds.empty()) r.error = file + ": a symmem-tune CSV without rows";
  return r;
}

LatencyTableRead parseNcclTests(const std::vector<std::string>& lines, const std::string& file,
                                const std::string& caseName) {
  LatencyTableRead r;
  r.table.source = LatencyTable::Source::NcclTestsCsv;
  r.table.file = file;
  std::set<std::string> cases;
  struct Sum {
    double us = 0;
    int n = 0;
  };
  std::map<std::string, std::map<uint64_t, Sum>> sums;  // path -> bytes -> sum
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    const std::vector<std::string> c = cells(lines[i]);
    if (c.size() != 10) {
      r.error = at(file, i) + "expected 10 cells (" + kNcclTestsHeader + "), found " + std::to_string(c.size());
      return r;
    }
    cases.insert(c[0]);
    if (!caseName.empty() && c[0] != caseName) continue;
    uint64_t bytes = 0;
    double stock = 0, plugin = 0;
    bool stockEmpty = false, pluginEmpty = false;
    if (!wholeNumber(c[1], bytes)) {
      r.error = at(file, i) + "bad size_bytes '" + printableText(c[1]) + "': expected a whole number";
    } else if (!microseconds(c[4], stock, stockEmpty) || !microseconds(c[5], plugin, pluginEmpty)) {
      r.error = at(file, i) + "bad stock_oop_us or plugin_oop_us: expected microseconds";
    }
    if (!r.ok()) return r;
    if (!stockEmpty && !pluginEmpty) {
      Sum& s = sums["nccl"][bytes];
      s.us += stock;
      ++s.n;
      Sum& p = sums["plugin"][bytes];
      p.us += plugin;
      ++p.n;
    }
  }
  auto caseList = [&] {
    std::string out;
    for (const std::string& c : cases) out += (out.empty() ? "" : ", ") + printableText(c);
    return out;
  };
  if (cases.empty()) {
    r.error = file + ": an nccl-tests results file without rows";
  } else if (caseName.empty() && cases.size() > 1) {
    r.error = file + " holds " + std::to_string(cases.size()) + " cases (" + caseList() +
              "): name one with --case (the latency case is the one to read times from)";
  } else if (!caseName.empty() && cases.count(caseName) == 0) {
    r.error = file + " has no case '" + printableText(caseName) + "' (it has " + caseList() + ")";
  } else if (sums.empty()) {
    r.error = file + ": no size with both a stock and a plugin time";
  }
  if (!r.ok()) return r;
  r.table.caseName = caseName.empty() ? *cases.begin() : caseName;
  LatencyWorld w;
  for (const auto& [path, bySize] : sums)
    for (const auto& [bytes, s] : bySize) w.medianUs[path][bytes] = s.us / s.n;
  r.table.worlds.push_back(std::move(w));
  return r;
}

}  // namespace

const LatencyWorld* LatencyTable::world(int ranks) const {
  for (const LatencyWorld& w : worlds)
    if (w.ranks == ranks || w.ranks == 0) return &w;
  return nullptr;
}

std::string LatencyTable::rankList() const {
  std::string out;
  for (const LatencyWorld& w : worlds) out += (out.empty() ? "" : ", ") + std::to_string(w.ranks);
  return out;
}

std::string LatencyTable::describe() const {
  if (source == Source::NcclTestsCsv) return "nccl-tests results " + file + " (case " + printableText(caseName) + ")";
  return "symmem-tune CSV " + file;
}

LatencyTableRead parseLatencyTable(const std::string& text, const std::string& file, const std::string& caseName) {
  const std::vector<std::string> lines = fileLines(text);
  LatencyTableRead r;
  if (lines.empty()) {
    r.error = file + ": empty; expected a symmem-tune --csv file or nccl-tests-configs/run.sh's results.csv";
  } else if (lines[0] == kTuneHeader) {
    if (!caseName.empty()) {
      r.error = "--case picks a case of an nccl-tests results file; " + file + " is a symmem-tune CSV";
      return r;
    }
    return parseTune(lines, file);
  } else if (lines[0] == kNcclTestsHeader) {
    return parseNcclTests(lines, file, caseName);
  } else {
    r.error = file + ": not a CSV this reads: its first line must be\n  " + kTuneHeader +
              "  (symmem-tune --csv) or\n  " + kNcclTestsHeader + "  (nccl-tests-configs/run.sh's results.csv)";
  }
  return r;
}

LatencyTableRead readLatencyTable(const std::string& path, const std::string& caseName) {
  const BoundedFileText f = readBoundedFile(path, kLatencyCsvMaxBytes);
  if (!f.ok()) {
    LatencyTableRead r;
    r.error = f.error;
    return r;
  }
  return parseLatencyTable(f.text, path, caseName);
}

std::optional<double> latencyAt(const LatencyWorld& world, const std::string& path, uint64_t bytes) {
  const auto p = world.medianUs.find(path);
  if (p == world.medianUs.end() || p->second.empty()) return std::nullopt;
  const std::map<uint64_t, double>& m = p->second;
  const auto hi = m.lower_bound(bytes);
  if (hi != m.end() && hi->first == bytes) return hi->second;
  if (hi == m.end() || hi == m.begin()) return std::nullopt;
  const auto lo = std::prev(hi);
  if (lo->first == 0 || lo->second <= 0 || hi->second <= 0) {
    // No log scale through 0: a straight line.
    const double f = static_cast<double>(bytes - lo->first) / static_cast<double>(hi->first - lo->first);
    return lo->second + f * (hi->second - lo->second);
  }
  const double f = (std::log(static_cast<double>(bytes)) - std::log(static_cast<double>(lo->first))) /
                   (std::log(static_cast<double>(hi->first)) - std::log(static_cast<double>(lo->first)));
  return std::exp(std::log(lo->second) + f * (std::log(hi->second) - std::log(lo->second)));
}

}  // namespace symmem

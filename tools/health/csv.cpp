// SPDX-License-Identifier: Apache-2.0
#include "tools/health/csv.h"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "core/printable_text.h"

namespace symmem {

namespace {

// ---- values ---------------------------------------------------------------------------------------

constexpr std::pair<PathKind, std::string_view> kPathNames[] = {
    {PathKind::NvLink, "NV"}, {PathKind::Pix, "PIX"}, {PathKind::Pxb, "PXB"},         {PathKind::Phb, "PHB"},
    {PathKind::Node, "NODE"}, {PathKind::Sys, "SYS"}, {PathKind::Unknown, "unknown"},
};

std::string_view pathName(PathKind k) {
  for (const auto& [kind, name] : kPathNames) {
    if (kind == k) return name;
  }
  return "unknown";
}

std::optional<PathKind> parsePath(std::string_view s) {
  for (const auto& [kind, name] : kPathNames) {
    if (name == s) return kind;
  }
  return std::nullopt;
}

std::optional<Support> parseSupport(std::string_view s) {
  for (Support v : {Support::Unknown, Support::Yes, Support::No}) {
    if (s == supportName(v)) return v;
  }
  return std::nullopt;
}

// The shortest text that reads back to the same double; empty for NaN (and any non-finite value).
std::string numberText(double v) {
  if (!std::isfinite(v)) return "";
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string();
}

std::string quoted(std::string_view text) {
  std::string one(text);
  for (char& c : one) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  const bool needs =
      one.find_first_of(",\"") != std::string::npos ||
      (!one.empty() && (one.front() == ' ' || one.back() == ' ' || one.front() == '\t' || one.back() == '\t'));
  if (!needs) return one;
  std::string out = "\"";
  for (char c : one) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// ---- writing --------------------------------------------------------------------------------------

class Writer {
 public:
  void row(std::string_view record, std::string_view a, std::string_view b, std::string_view field,
           std::string_view value) {
    text_ += record;
    text_ += ',';
    text_ += a;
    text_ += ',';
    text_ += b;
    text_ += ',';
    text_ += field;
    text_ += ',';
    text_ += value;
    text_ += '\n';
  }
  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

// ---- reading --------------------------------------------------------------------------------------

// One physical line split at commas outside quotes; false with *why on a malformed quote.
bool splitLine(std::string_view line, std::vector<std::string>* cells, std::string* why) {
  cells->clear();
  size_t i = 0;
  while (true) {
    std::string cell;
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            cell += '"';
            i += 2;
            continue;
          }
          closed = true;
          ++i;
          break;
        }
        cell += line[i++];
      }
      if (!closed) {
        *why = "a quoted value has no closing quote";
        return false;
      }
      if (i < line.size() && line[i] != ',') {
        *why = "text after a closing quote";
        return false;
      }
    } else {
      const size_t end = line.find(',', i);
      const std::string_view raw = line.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
      if (raw.find('"') != std::string_view::npos) {
        *why = "a quote inside an unquoted value";
        return false;
      }
      cell.assign(raw);
      i += raw.size();
    }
    cells->push_back(std::move(cell));
    if (i >= line.size()) return true;
    ++i;  // the comma
    if (i == line.size()) {
      cells->emplace_back();
      return true;
    }
  }
}

bool parseNumber(std::string_view s, double* out) {
  if (s.empty()) {
    *out = NAN;
    return true;
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool parseInt(std::string_view s, int lo, int hi, int* out) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// GPU numbers as the tools take them (--gpus: 0-63).
constexpr int kMaxGpuIndex = 63;

// What a measurement can be. A bandwidth above 100 TB/s or a latency above an hour (the longest step
// limit, --timeout-s 3600) is no measurement of a GPU link; zero or less is none at all.
constexpr double kMaxGBs = 1e5;
constexpr double kMaxLatencyUs = 3.6e9;
enum class Quantity { Bandwidth, Latency };

class Reader {
 public:
  explicit Reader(HealthMeasurements* out) : out_(out) {}

  // One data row; false with error_ set.
  bool row(int line, const std::vector<std::string>& c) {
    line_ = line;
    if (c.size() != 5) {
      return fail("expected 5 columns (" + std::string(kHealthCsvHeader) + "), found " + std::to_string(c.size()));
    }
    const std::string& record = c[0];
    const std::string& field = c[3];
    const std::string& value = c[4];
    if (!seen_.insert(record + "," + c[1] + "," + c[2] + "," + field).second) {
      return fail(record + (c[1].empty() ? "" : " " + c[1]) + (c[2].empty() ? "" : "->" + c[2]) + " " + field +
                  " given twice");
    }
    if (record == "node") {
      if (!c[1].empty() || !c[2].empty()) return fail("a node record leaves gpu_a and gpu_b empty");
      return node(field, value);
    }
    if (record == "gpu") {
      int index = 0;
      if (!gpuIndex(c[1], "gpu_a", &index)) return false;
      if (!c[2].empty()) return fail("a gpu record leaves gpu_b empty");
      return gpu(gpuAt(index), field, value);
    }
    if (record == "pair") {
      int a = 0, b = 0;
      if (!gpuIndex(c[1], "gpu_a", &a) || !gpuIndex(c[2], "gpu_b", &b)) return false;
      return pair(pairAt(a, b), field, value);
    }
    if (record == "all") {
      if (!c[2].empty()) return fail("an all record leaves gpu_b empty");
      return all(c[1], field, value);
    }
    return fail("unknown record '" + record + "' (node, gpu, pair or all)");
  }

  // What can only be checked once every row is in: pairs and all-at-once values name GPUs that exist.
  // Pairs were read with the GPUs' indexes; in memory they hold positions in `gpus`.
  bool finish() {
    const size_t gpus = out_->gpus.size();
    if (out_->loopback && gpus > 1) {
      line_ = loopbackLine_;
      return fail("loopback is true, but the file has " + std::to_string(gpus) +
                  " GPUs (the loopback check is for one GPU)");
    }
    for (size_t i = 0; i < out_->pairs.size(); ++i) {
      HealthPair& p = out_->pairs[i];
      if (p.a == p.b && gpus > 1) {
        line_ = pairLine_[i];
        return fail("pair " + std::to_string(p.a) + "->" + std::to_string(p.b) + ": a pair is two different GPUs (" +
                    "a GPU with itself is only the loopback check of a one-GPU file)");
      }
      for (int g : {p.a, p.b}) {
        if (gpuPosition_.count(g) == 0) {
          line_ = pairLine_[i];
          return fail("pair " + std::to_string(p.a) + "->" + std::to_string(p.b) + " names GPU " + std::to_string(g) +
                      ", which has no gpu record");
        }
      }
      p.a = static_cast<int>(gpuPosition_.at(p.a));
      p.b = static_cast<int>(gpuPosition_.at(p.b));
    }
    return place(allWrite_, "writeGBsPerGpu", &out_->allAtOnce.writeGBsPerGpu) &&
           place(allRead_, "readGBsPerGpu", &out_->allAtOnce.readGBsPerGpu);
  }

  const std::string& error() const { return error_; }

 private:
  // What the file said is quoted in `what`: its control characters are escaped (a message must not
  // change the terminal, nor end at a NUL byte).
  bool fail(const std::string& what) {
    error_ = "line " + std::to_string(line_) + ": " + printableText(what);
    return false;
  }

  bool gpuIndex(const std::string& s, std::string_view column, int* out) {
    if (parseInt(s, 0, kMaxGpuIndex, out)) return true;
    return fail(std::string(column) + " '" + s + "' is not a GPU index (0-" + std::to_string(kMaxGpuIndex) + ")");
  }

  bool number(std::string_view field, std::string_view value, Quantity quantity, double* out) {
    if (!parseNumber(value, out)) return fail(std::string(field) + ": '" + std::string(value) + "' is not a number");
    if (std::isnan(*out)) return true;  // empty: not measured
    const bool bandwidth = quantity == Quantity::Bandwidth;
    const double max = bandwidth ? kMaxGBs : kMaxLatencyUs;
    if (*out > 0 && *out <= max) return true;
    return fail(std::string(field) + ": " + std::string(value) + " is not a measured " +
                (bandwidth ? "bandwidth (above 0, at most 100000 GB/s)" : "latency (above 0, at most 3600 s)"));
  }

  bool support(std::string_view field, std::string_view value, Support* out) {
    if (const auto s = parseSupport(value)) {
      *out = *s;
      return true;
    }
    return fail(std::string(field) + ": '" + std::string(value) + "' is not yes, no or unknown");
  }

  bool pattern(std::string_view field, std::string_view value, PatternResult* out) {
    if (const auto r = parsePatternResult(value)) {
      *out = *r;
      return true;
    }
    return fail(std::string(field) + ": '" + std::string(value) + "' is not not-run, ok, mismatch, timeout or fault");
  }

  bool unknownField(std::string_view field, std::string_view record) {
    return fail("unknown field '" + std::string(field) + "' for " + std::string(record == "all" ? "an " : "a ") +
                std::string(record) + " record");
  }

  bool node(const std::string& field, const std::string& value) {
    if (field == "link") {
      if (const auto l = parseLinkClass(value)) {
        out_->link = *l;
        return true;
      }
      return fail("link: '" + value + "' is not a link class (nvlink, pcie-switch, pcie-root, pcie-sys, unknown)");
    }
    if (field == "loopback") {
      if (value != "true" && value != "false") return fail("loopback: '" + value + "' is not true or false");
      out_->loopback = value == "true";
      loopbackLine_ = line_;
      return true;
    }
    if (field == "topologySource") {
      out_->topologySource = printableText(value);
      return true;
    }
    return unknownField(field, "node");
  }

  bool gpu(HealthGpu& g, const std::string& field, const std::string& value) {
    if (field == "busId") {
      g.busId = printableText(value);
    } else if (field == "name") {
      g.name = printableText(value);
    } else if (field == "cc") {
      if (value.empty()) {
        g.cc = {};
      } else if (const auto cc = parseCapability(value)) {
        g.cc = *cc;
      } else {
        return fail("cc: '" + value + "': " + kCapabilityForms);
      }
    } else if (field == "hostCopyGBs") {
      return number(field, value, Quantity::Bandwidth, &g.hostCopyGBs);
    } else {
      return unknownField(field, "gpu");
    }
    return true;
  }

  bool pair(HealthPair& p, const std::string& field, const std::string& value) {
    if (field == "path") {
      if (const auto k = parsePath(value)) {
        p.path = *k;
        return true;
      }
      return fail("path: '" + value + "' is not NV, PIX, PXB, PHB, NODE, SYS or unknown");
    }
    if (field == "nvlinks") {
      if (parseInt(value, 0, 1024, &p.nvlinks)) return true;
      return fail("nvlinks: '" + value + "' is not a count of NVLinks");
    }
    if (field == "driverP2p") return support(field, value, &p.driverP2p);
    if (field == "nvmlRead") return support(field, value, &p.nvmlRead);
    if (field == "nvmlWrite") return support(field, value, &p.nvmlWrite);
    if (field == "writeCheck") return pattern(field, value, &p.writeCheck);
    if (field == "readCheck") return pattern(field, value, &p.readCheck);
    if (field == "detail") {
      p.detail = printableText(value);
      return true;
    }
    if (field == "writeLatencyUs") return number(field, value, Quantity::Latency, &p.writeLatencyUs);
    if (field == "readLatencyUs") return number(field, value, Quantity::Latency, &p.readLatencyUs);
    if (field == "writeGBs") return number(field, value, Quantity::Bandwidth, &p.writeGBs);
    if (field == "readGBs") return number(field, value, Quantity::Bandwidth, &p.readGBs);
    return unknownField(field, "pair");
  }

  bool all(const std::string& position, const std::string& field, const std::string& value) {
    if (field == "check" || field == "detail") {
      if (!position.empty()) return fail("an all record's " + field + " leaves gpu_a empty");
      if (field == "detail") {
        out_->allAtOnce.detail = printableText(value);
        return true;
      }
      return pattern(field, value, &out_->allAtOnce.check);
    }
    if (field != "writeGBsPerGpu" && field != "readGBsPerGpu") return unknownField(field, "all");
    int at = 0;
    if (!parseInt(position, 0, kMaxGpuIndex, &at)) {
      return fail("gpu_a '" + position + "' is not a position in the GPU list (0-" + std::to_string(kMaxGpuIndex) +
                  ")");
    }
    double v = NAN;
    if (!number(field, value, Quantity::Bandwidth, &v)) return false;
    (field == "writeGBsPerGpu" ? allWrite_ : allRead_)[at] = {v, line_};
    return true;
  }

  // The per-GPU all-at-once values into their vector, holes as NaN.
  bool place(const std::map<int, std::pair<double, int>>& values, std::string_view name, std::vector<double>* target) {
    for (const auto& [position, entry] : values) {
      if (static_cast<size_t>(position) >= out_->gpus.size()) {
        line_ = entry.second;
        return fail(std::string(name) + " for position " + std::to_string(position) + ", but there are " +
                    std::to_string(out_->gpus.size()) + " GPUs");
      }
      if (target->size() <= static_cast<size_t>(position)) target->resize(static_cast<size_t>(position) + 1, NAN);
      (*target)[static_cast<size_t>(position)] = entry.first;
    }
    return true;
  }

  HealthGpu& gpuAt(int index) {
    const auto [it, added] = gpuPosition_.emplace(index, out_->gpus.size());
    if (added) {
      out_->gpus.emplace_back();
      out_->gpus.back().index = index;
    }
    return out_->gpus[it->second];
  }

  HealthPair& pairAt(int a, int b) {
    const auto [it, added] = pairPosition_.emplace(std::pair{a, b}, out_->pairs.size());
    if (added) {
      out_->pairs.emplace_back();
      out_->pairs.back().a = a;
      out_->pairs.back().b = b;
      pairLine_.push_back(line_);
    }
    return out_->pairs[it->second];
  }

  HealthMeasurements* out_;
  int line_ = 0;
  int loopbackLine_ = 0;
  std::string error_;
  std::set<std::string> seen_;
  std::map<int, size_t> gpuPosition_;
  std::map<std::pair<int, int>, size_t> pairPosition_;
  std::vector<int> pairLine_;
  std::map<int, std::pair<double, int>> allWrite_, allRead_;  // position -> (value, line)
};

}  // namespace

std::string healthCsv(const HealthMeasurements& m) {
  Writer w;
  w.row("record", "gpu_a", "gpu_b", "field", "value");
  w.row("node", "", "", "link", linkClassName(m.link));
  w.row("node", "", "", "loopback", m.loopback ? "true" : "false");
  w.row("node", "", "", "topologySource", quoted(m.topologySource));
  for (const HealthGpu& g : m.gpus) {
    const std::string a = std::to_string(g.index);
    w.row("gpu", a, "", "busId", quoted(g.busId));
    w.row("gpu", a, "", "name", quoted(g.name));
    w.row("gpu", a, "", "cc", g.cc.known() ? g.cc.str() : "");
    w.row("gpu", a, "", "hostCopyGBs", numberText(g.hostCopyGBs));
  }
  // Pairs hold positions in m.gpus; the file names GPUs by index, as the gpu rows do.
  const auto indexOf = [&](int position) {
    return position >= 0 && static_cast<size_t>(position) < m.gpus.size() ? m.gpus[static_cast<size_t>(position)].index
                                                                          : position;
  };
  for (const HealthPair& p : m.pairs) {
    const std::string a = std::to_string(indexOf(p.a));
    const std::string b = std::to_string(indexOf(p.b));
    w.row("pair", a, b, "path", pathName(p.path));
    w.row("pair", a, b, "nvlinks", std::to_string(p.nvlinks));
    w.row("pair", a, b, "driverP2p", supportName(p.driverP2p));
    w.row("pair", a, b, "nvmlRead", supportName(p.nvmlRead));
    w.row("pair", a, b, "nvmlWrite", supportName(p.nvmlWrite));
    w.row("pair", a, b, "writeCheck", patternResultName(p.writeCheck));
    w.row("pair", a, b, "readCheck", patternResultName(p.readCheck));
    w.row("pair", a, b, "detail", quoted(p.detail));
    w.row("pair", a, b, "writeLatencyUs", numberText(p.writeLatencyUs));
    w.row("pair", a, b, "readLatencyUs", numberText(p.readLatencyUs));
    w.row("pair", a, b, "writeGBs", numberText(p.writeGBs));
    w.row("pair", a, b, "readGBs", numberText(p.readGBs));
  }
  const HealthAllAtOnce& all = m.allAtOnce;
  w.row("all", "", "", "check", patternResultName(all.check));
  w.row("all", "", "", "detail", quoted(all.detail));
  for (size_t i = 0; i < all.writeGBsPerGpu.size(); ++i) {
    w.row("all", std::to_string(i), "", "writeGBsPerGpu", numberText(all.writeGBsPerGpu[i]));
  }
  for (size_t i = 0; i < all.readGBsPerGpu.size(); ++i) {
    w.row("all", std::to_string(i), "", "readGBsPerGpu", numberText(all.readGBsPerGpu[i]));
  }
  return w.take();
}

bool parseHealthCsv(std::string_view text, HealthMeasurements* out, std::string* error) {
  *out = HealthMeasurements{};
  Reader reader(out);
  std::vector<std::string> cells;
  std::string why;
  bool header = false;
  int line = 0;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    std::string_view raw = text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    at = end == std::string_view::npos ? text.size() : end + 1;
    ++line;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    if (line == 1 && raw.substr(0, 3) == "\xEF\xBB\xBF") raw.remove_prefix(3);  // a UTF-8 byte order mark
    if (raw.empty() || raw.front() == '#') continue;
    if (!header) {
      if (raw != kHealthCsvHeader) {
        *error = "line " + std::to_string(line) + ": expected the header " + std::string(kHealthCsvHeader);
        return false;
      }
      header = true;
      continue;
    }
    if (!splitLine(raw, &cells, &why)) {
      *error = "line " + std::to_string(line) + ": " + why;
      return false;
    }
    if (!reader.row(line, cells)) {
      *error = reader.error();
      return false;
    }
  }
  if (!header) {
    *error = "line " + std::to_string(line + 1) + ": expected the header " + std::string(kHealthCsvHeader);
    return false;
  }
  if (!reader.finish()) {
    *error = reader.error();
    return false;
  }
  return true;
}

}  // namespace symmem

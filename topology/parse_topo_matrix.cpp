// SPDX-License-Identifier: Apache-2.0
// `nvidia-smi topo -m` text -> Topology.
//
// Shape of the input (tokens, after matrix_text.h has dealt with tabs, spaces and ANSI codes):
//   header:  GPU0 GPU1 ... [NIC0 ...] [CPU Affinity] [NUMA Affinity] [GPU NUMA ID]
//   rows:    <heading> <one cell per device column> [affinity values]   (NIC rows have no affinity)
//   then optionally a blank line, "Legend:" and the legend, "NIC Legend:" and the NIC names.
// Rows come in column order. Only GPU-GPU cells go into the model; NIC cells are checked, then
// dropped. Users often paste with a shell prompt line first, so lines mentioning nvidia-smi before the
// header are skipped.
#include <charconv>
#include <string_view>
#include <unordered_set>

#include "topology/matrix_text.h"
#include "topology/matrix_tokens.h"
#include "topology/topology_file.h"

namespace symmem {

namespace {

struct Header {
  int line = 0;
  std::vector<std::string> columns;  // device headings, in order
  bool hasCpuAffinity = false;
  bool hasNumaAffinity = false;
  bool hasGpuNumaId = false;
};

bool isAffinityHeadingWord(std::string_view t) {
  return t == "CPU" || t == "NUMA" || t == "GPU" || t == "Affinity" || t == "ID";
}

Expected<Header> parseHeader(const TextLine& line, std::string_view file) {
  Header h;
  h.line = line.number;
  size_t i = 0;
  for (; i < line.tokens.size() && !isAffinityHeadingWord(line.tokens[i]); ++i) h.columns.push_back(line.tokens[i]);
  for (size_t k = i; k < line.tokens.size(); ++k) {
    const auto& t = line.tokens[k];
    const std::string_view next = k + 1 < line.tokens.size() ? std::string_view(line.tokens[k + 1]) : "";
    if (t == "CPU" && next == "Affinity")
      h.hasCpuAffinity = true;
    else if (t == "NUMA" && next == "Affinity" && (k == 0 || line.tokens[k - 1] != "GPU"))
      h.hasNumaAffinity = true;
    else if (t == "GPU" && next == "NUMA")
      h.hasGpuNumaId = true;
    else if (!isAffinityHeadingWord(t))
      return Expected<Header>::failure(
          locatedError(file, line.number, "unexpected header word '" + t + "' after the affinity columns"));
  }
  if (h.columns.empty() || !gpuHeadingIndex(h.columns.front()))
    return Expected<Header>::failure(
        locatedError(file, line.number,
                     "expected the header of `nvidia-smi topo -m` (GPU0 GPU1 ...), found '" +
                         (line.tokens.empty() ? std::string() : line.tokens.front()) + "'"));
  if (h.columns.size() > static_cast<size_t>(kMaxMatrixColumns))
    return Expected<Header>::failure(locatedError(file, line.number,
                                                  "the header has " + std::to_string(h.columns.size()) +
                                                      " device columns; at most " + std::to_string(kMaxMatrixColumns) +
                                                      " (GPUs and NICs) are read"));
  std::unordered_set<std::string_view> seen;
  for (const std::string& column : h.columns)
    if (!seen.insert(column).second)
      return Expected<Header>::failure(
          locatedError(file, line.number, "column '" + column + "' appears twice in the header"));
  return h;
}

bool mentionsNvidiaSmi(const TextLine& line) {
  for (const auto& t : line.tokens)
    if (t.find("nvidia-smi") != std::string::npos) return true;
  return false;
}

std::optional<int> parseNuma(std::string_view token) {
  int v = 0;
  auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (ec != std::errc() || p != token.data() + token.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

Expected<Topology> parseTopoMatrix(std::string_view text, std::string_view file) {
  using Result = Expected<Topology>;
  const auto lines = splitMatrixText(text);

  size_t at = 0;
  while (at < lines.size() && (lines[at].tokens.empty() || mentionsNvidiaSmi(lines[at]))) ++at;
  if (at == lines.size())
    return Result::failure(locatedError(file, lines.empty() ? 1 : lines.back().number,
                                        "expected the header of `nvidia-smi topo -m`, found an empty file"));
  auto header = parseHeader(lines[at], file);
  if (!header) return Result::failure(header.error());
  const auto& columns = header->columns;
  const size_t n = columns.size();
  ++at;

  // cells[r][c] for every device row/column; affinity tokens per row.
  std::vector<std::vector<TopoCell>> cells(n);
  std::vector<std::vector<std::string>> extra(n);
  std::vector<int> rowLine(n, 0);
  for (size_t r = 0; r < n; ++r) {
    while (at < lines.size() && lines[at].tokens.empty() && r == 0) ++at;
    if (at == lines.size() || lines[at].tokens.empty() || lines[at].tokens.front() == "Legend:") {
      const int where = at < lines.size() ? lines[at].number : lines.back().number + 1;
      bool restBlank = true;
      for (size_t k = at; k < lines.size(); ++k) restBlank &= lines[k].tokens.empty();
      return Result::failure(locatedError(file, where,
                                          "expected the row for " + columns[r] + " (" + std::to_string(n) +
                                              " rows in the header), found " +
                                              (restBlank ? "the end of the file" : "no more rows")));
    }
    const auto& line = lines[at++];
    rowLine[r] = line.number;
    if (line.tokens.front() != columns[r])
      return Result::failure(locatedError(
          file, line.number, "expected the row for " + columns[r] + ", found '" + line.tokens.front() + "'"));
    size_t c = 0;
    for (; c < n; ++c) {
      if (c + 1 >= line.tokens.size() || looksLikeAffinityValue(line.tokens[c + 1]))
        return Result::failure(locatedError(
            file, line.number,
            "expected " + std::to_string(n) + " link cells for " + columns[r] + ", found " + std::to_string(c)));
      const auto& token = line.tokens[c + 1];
      auto cell = parseTopoCell(token);
      if (!cell)
        return Result::failure(locatedError(file, line.number,
                                            "unknown link token '" + token + "' for " + columns[r] + "-" + columns[c] +
                                                " (expected X, NV#, PIX, PXB, PHB, NODE or SYS)"));
      if (cell->self != (c == r))
        return Result::failure(
            locatedError(file, line.number,
                         c == r ? "expected X for " + columns[r] + " with itself, found '" + token + "'"
                                : "X (self) for " + columns[r] + "-" + columns[c] + ", which are different devices"));
      cells[r].push_back(*cell);
    }
    extra[r].assign(line.tokens.begin() + static_cast<long>(n) + 1, line.tokens.end());
    const size_t maxExtra = size_t{header->hasCpuAffinity} + header->hasNumaAffinity + header->hasGpuNumaId;
    if (extra[r].size() > maxExtra) {
      // A cell beyond the affinity columns: most likely one link cell too many.
      return Result::failure(locatedError(file, line.number,
                                          "expected " + std::to_string(n) + " link cells and at most " +
                                              std::to_string(maxExtra) + " affinity values for " + columns[r] +
                                              ", found '" + extra[r].back() + "' after them"));
    }
  }
  // After the matrix only blank lines, the legend or unrelated text may follow: a further row means
  // the header and the rows disagree.
  for (; at < lines.size(); ++at) {
    const auto& t = lines[at].tokens;
    if (t.empty()) continue;
    if (t.front() == "Legend:" || t.front() == "NIC") break;
    if (gpuHeadingIndex(t.front()) || (t.size() > 1 && parseTopoCell(t[1])))
      return Result::failure(
          locatedError(file, lines[at].number,
                       "unexpected row '" + t.front() + "': the header has " + std::to_string(n) + " columns"));
  }

  // Only GPUs go into the model.
  std::vector<size_t> gpuColumns;
  std::vector<GpuInfo> gpus;
  for (size_t c = 0; c < n; ++c) {
    auto index = gpuHeadingIndex(columns[c]);
    if (!index) continue;
    GpuInfo g;
    g.index = *index;
    size_t k = 0;
    const auto& values = extra[c];
    if (header->hasCpuAffinity && k < values.size()) {
      if (values[k] != "N/A") g.cpuAffinity = values[k];
      ++k;
    }
    if (header->hasNumaAffinity && k < values.size()) g.numaNode = parseNuma(values[k]);
    gpuColumns.push_back(c);
    gpus.push_back(std::move(g));
  }

  Topology topo(std::move(gpus));
  topo.setSource(std::string(file));
  for (size_t a = 0; a < gpuColumns.size(); ++a)
    for (size_t b = a + 1; b < gpuColumns.size(); ++b) {
      const auto& ab = cells[gpuColumns[a]][gpuColumns[b]];
      const auto& ba = cells[gpuColumns[b]][gpuColumns[a]];
      if (ab.path != ba.path || ab.nvlinks != ba.nvlinks)
        return Result::failure(locatedError(file, rowLine[gpuColumns[b]],
                                            columns[gpuColumns[b]] + "-" + columns[gpuColumns[a]] + " is " +
                                                pathToken(ba.path, ba.nvlinks) + " but " + columns[gpuColumns[a]] +
                                                "-" + columns[gpuColumns[b]] + " is " + pathToken(ab.path, ab.nvlinks) +
                                                "; the matrix must be symmetric"));
      topo.setPath(static_cast<int>(a), static_cast<int>(b), ab.path, ab.nvlinks);
    }

  topo.addNote("p2p unknown: `nvidia-smi topo -m` does not report P2P support (add a `topo -p2p rw` capture)");
  topo.addNote("compute capability unknown: `nvidia-smi topo -m` does not list it");
  bool allNuma = true;
  for (const auto& g : topo.gpus())
    if (!g.numaNode) allNuma = false;
  if (!header->hasNumaAffinity)
    topo.addNote("numa unknown: no NUMA Affinity column");
  else if (!allNuma)
    topo.addNote("numa unknown for some GPUs: NUMA Affinity is N/A");
  return topo;
}

}  // namespace symmem

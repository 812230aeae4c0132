// SPDX-License-Identifier: Apache-2.0
// `nvidia-smi topo -p2p <cap>` text -> P2pMatrix, and merging it into a Topology.
//
// The capture looks like this (tabs, a leading space on each row, a trailing tab):
//          GPU0    GPU1
//    GPU0  X       GNS
//    GPU1  GNS     X
//   Legend: X = Self, OK = Status Ok, CNS = Chipset not supported, GNS = GPU not supported,
//           TNS = Topology not supported, NS = Not supported, DR = Disabled by regkey, U = Unknown
// Only OK means P2P works; U stays unknown; every other status is "no".
#include <algorithm>

#include "topology/matrix_text.h"
#include "topology/matrix_tokens.h"
#include "topology/topology_file.h"

namespace symmem {

Expected<P2pMatrix> parseP2pMatrix(std::string_view text, std::string_view file) {
  using Result = Expected<P2pMatrix>;
  const auto lines = splitMatrixText(text);
  size_t at = 0;
  while (at < lines.size() && lines[at].tokens.empty()) ++at;
  if (at == lines.size())
    return Result::failure(locatedError(file, lines.empty() ? 1 : lines.back().number,
                                        "expected the header of `nvidia-smi topo -p2p` (GPU0 GPU1 ...), found an "
                                        "empty file"));
  P2pMatrix m;
  const auto& header = lines[at];
  if (header.tokens.size() > static_cast<size_t>(kMaxMatrixColumns))
    return Result::failure(locatedError(file, header.number,
                                        "the header has " + std::to_string(header.tokens.size()) +
                                            " GPU columns; at most " + std::to_string(kMaxMatrixColumns) +
                                            " are read"));
  for (const auto& t : header.tokens) {
    auto index = gpuHeadingIndex(t);
    if (!index)
      return Result::failure(
          locatedError(file, header.number, "expected only GPU columns in a P2P matrix header, found '" + t + "'"));
    m.gpuIndices.push_back(*index);
  }
  const size_t n = m.gpuIndices.size();
  ++at;
  for (size_t r = 0; r < n; ++r) {
    if (at == lines.size() || lines[at].tokens.empty() || lines[at].tokens.front() == "Legend:") {
      const int where = at < lines.size() ? lines[at].number : lines.back().number + 1;
      return Result::failure(locatedError(file, where,
                                          "expected the row for GPU" + std::to_string(m.gpuIndices[r]) + " (" +
                                              std::to_string(n) + " rows in the header)"));
    }
    const auto& line = lines[at++];
    const std::string want = "GPU" + std::to_string(m.gpuIndices[r]);
    if (line.tokens.front() != want)
      return Result::failure(
          locatedError(file, line.number, "expected the row for " + want + ", found '" + line.tokens.front() + "'"));
    if (line.tokens.size() != n + 1)
      return Result::failure(locatedError(file, line.number,
                                          "expected " + std::to_string(n) + " P2P cells for " + want + ", found " +
                                              std::to_string(line.tokens.size() - 1)));
    std::vector<Support> row;
    for (size_t c = 0; c < n; ++c) {
      const auto& token = line.tokens[c + 1];
      auto cell = parseTopoCell(token).has_value() && token != "X" ? std::nullopt : parseP2pCell(token);
      if (!cell)
        return Result::failure(locatedError(
            file, line.number,
            "unknown P2P status '" + token + "' for " + want + " (expected X, OK, NS, CNS, GNS, TNS, DR or U)"));
      if (cell->self != (c == r))
        return Result::failure(locatedError(file, line.number,
                                            c == r ? "expected X for " + want + " with itself, found '" + token + "'"
                                                   : "X (self) off the diagonal for " + want));
      if (!cell->inLegend) m.notes.push_back("P2P status '" + token + "' is not in the legend; taken as not supported");
      row.push_back(cell->status);
    }
    m.status.push_back(std::move(row));
  }
  return m;
}

P2pCapability p2pCapabilityFromFileName(std::string_view path, bool* guessed) {
  const auto slash = path.rfind('/');
  std::string name(slash == std::string_view::npos ? path : path.substr(slash + 1));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (guessed) *guessed = false;
  for (std::string_view sep : {"p2p-", "p2p_", "p2p."}) {
    const auto at = name.find(sep);
    if (at == std::string::npos) continue;
    const std::string_view rest = std::string_view(name).substr(at + sep.size());
    const auto end = rest.find_first_of(".-_");
    const std::string_view cap = rest.substr(0, end);
    if (cap == "rw") return P2pCapability::ReadWrite;
    if (cap == "r") return P2pCapability::Read;
    if (cap == "w") return P2pCapability::Write;
    if (cap == "n" || cap == "a" || cap == "p") return P2pCapability::Other;
  }
  if (guessed) *guessed = true;
  return P2pCapability::ReadWrite;
}

Expected<bool> applyP2pMatrix(Topology& topo, const P2pMatrix& m, P2pCapability cap, std::string_view file) {
  if (cap == P2pCapability::Other) return true;
  std::vector<int> at;
  for (int index : m.gpuIndices) {
    int found = -1;
    for (int g = 0; g < topo.gpuCount(); ++g)
      if (topo.gpu(g).index == index) found = g;
    if (found < 0)
      return Expected<bool>::failure(std::string(file) + ": the P2P matrix has GPU" + std::to_string(index) +
                                     ", which the topology does not");
    at.push_back(found);
  }
  for (size_t r = 0; r < at.size(); ++r)
    for (size_t c = 0; c < at.size(); ++c) {
      if (r == c) continue;
      const auto& old = topo.link(at[r], at[c]);
      const Support s = m.status[r][c];
      const Support read = cap == P2pCapability::Write ? old.p2pRead : s;
      const Support write = cap == P2pCapability::Read ? old.p2pWrite : s;
      topo.setP2p(at[r], at[c], read, write);
    }
  for (const auto& note : m.notes) topo.addNote(note);
  return true;
}

}  // namespace symmem

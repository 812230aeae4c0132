// SPDX-License-Identifier: Apache-2.0
// Reading files, recognising their kind, and putting a topology and its P2P matrices together.
#include "topology/topology_file.h"

#include <utility>

#include "core/bounded_file.h"
#include "topology/hwloc_xml_child.h"
#include "topology/matrix_text.h"
#include "topology/matrix_tokens.h"

namespace symmem {

namespace {

// Bounded (core/bounded_file.h): SYMMEM_TOPO_FILE is read inside ncclCommInitRank, where a FIFO,
// /dev/zero or a directory must give an error, not a hang or an exhausted process.
Expected<std::string> readWholeFile(const std::string& path) {
  BoundedFileText file = readBoundedFile(path, kTopologyFileMaxBytes);
  if (!file.ok()) return Expected<std::string>::failure(std::move(file.error));
  return std::move(file.text);
}

std::string_view skipXmlPreamble(std::string_view text) {
  // Skip the XML declaration, DOCTYPE, comments and whitespace to reach the root element.
  while (true) {
    const auto lt = text.find('<');
    if (lt == std::string_view::npos) return {};
    text.remove_prefix(lt);
    if (text.starts_with("<?") || text.starts_with("<!")) {
      const auto end = text.starts_with("<!--") ? text.find("-->") : text.find('>');
      if (end == std::string_view::npos) return {};
      text.remove_prefix(end + 1);
      continue;
    }
    return text;
  }
}

Expected<Topology> refusedHwlocXml(const std::string& path) {
  return Expected<Topology>::failure(
      path +
      ": an hwloc XML export, which the plugin does not read inside an application (hwloc's XML reader "
      "can crash on a malformed file and take the job down with it); `symmem-info --topo " +
      path +
      "` reads it safely and shows the model. For SYMMEM_TOPO_FILE use an `nvidia-smi topo -m` capture "
      "(plus `nvidia-smi topo -p2p rw`), or unset it and let the plugin discover the node");
}

Expected<Topology> parseByKind(TopologyFileKind kind, std::string_view text, const std::string& path,
                               HwlocXmlPolicy hwlocXml) {
  switch (kind) {
    case TopologyFileKind::TopoMatrix:
      return parseTopoMatrix(text, path);
    case TopologyFileKind::HwlocXml:
      if (hwlocXml == HwlocXmlPolicy::Refuse) return refusedHwlocXml(path);
      return parseHwlocXmlInChildProcess(text, path);
    case TopologyFileKind::Empty:
      return Expected<Topology>::failure(path + ":1: expected a topology, found an empty file");
    case TopologyFileKind::Binary:
      return Expected<Topology>::failure(path + ": expected a text topology file, found binary data");
    case TopologyFileKind::NcclXml:
      return Expected<Topology>::failure(
          path +
          ": NCCL topology XML (NCCL_TOPO_FILE format) is not supported: it leaves out the GPU NVLinks; "
          "use `nvidia-smi topo -m` output" +
          std::string(hwlocXml == HwlocXmlPolicy::Refuse ? "" : " or an hwloc XML export (`lstopo topo.xml`)"));
    case TopologyFileKind::OtherXml:
      return Expected<Topology>::failure(path +
                                         ": XML, but neither an hwloc export (<topology>) nor anything else "
                                         "this reader knows");
    case TopologyFileKind::P2pMatrix:
      return Expected<Topology>::failure(path +
                                         ": a `nvidia-smi topo -p2p` matrix holds no topology; pass it "
                                         "together with a `nvidia-smi topo -m` capture");
    case TopologyFileKind::Unrecognised:
      break;
  }
  // Let the topo -m parser say precisely what is wrong: it names the line and what it expected.
  return parseTopoMatrix(text, path);
}

}  // namespace

std::string_view topologyFileKindName(TopologyFileKind k) {
  switch (k) {
    case TopologyFileKind::Empty:
      return "empty";
    case TopologyFileKind::Binary:
      return "binary";
    case TopologyFileKind::TopoMatrix:
      return "nvidia-smi topo -m";
    case TopologyFileKind::P2pMatrix:
      return "nvidia-smi topo -p2p";
    case TopologyFileKind::HwlocXml:
      return "hwloc XML";
    case TopologyFileKind::NcclXml:
      return "NCCL topology XML";
    case TopologyFileKind::OtherXml:
      return "XML";
    case TopologyFileKind::Unrecognised:
      return "unrecognised";
  }
  return "unrecognised";
}

TopologyFileKind sniffTopologyFile(std::string_view text) {
  if (text.find_first_not_of(" \t\r\n\v\f") == std::string_view::npos) return TopologyFileKind::Empty;
  if (looksBinary(text)) return TopologyFileKind::Binary;
  const auto first = text.find_first_not_of(" \t\r\n\xef\xbb\xbf");
  if (first != std::string_view::npos && text[first] == '<') {
    const auto root = skipXmlPreamble(text);
    if (root.starts_with("<topology")) return TopologyFileKind::HwlocXml;
    if (root.starts_with("<system")) return TopologyFileKind::NcclXml;
    return TopologyFileKind::OtherXml;
  }
  // A matrix: decide by the first data row's cells, then by the legend.
  const auto lines = splitMatrixText(text);
  bool sawHeader = false;
  for (const auto& line : lines) {
    if (line.tokens.empty()) continue;
    if (!sawHeader) {
      bool prompt = false;
      for (const auto& t : line.tokens) prompt |= t.find("nvidia-smi") != std::string::npos;
      if (prompt) continue;
      if (!gpuHeadingIndex(line.tokens.front())) return TopologyFileKind::Unrecognised;
      for (const auto& t : line.tokens)
        if (t == "Affinity" || t == "CPU") return TopologyFileKind::TopoMatrix;
      sawHeader = true;
      continue;
    }
    for (size_t i = 1; i < line.tokens.size(); ++i) {
      const auto& t = line.tokens[i];
      if (isP2pOnlyToken(t)) return TopologyFileKind::P2pMatrix;
      if (t != "X" && parseTopoCell(t)) return TopologyFileKind::TopoMatrix;
    }
  }
  return sawHeader ? TopologyFileKind::TopoMatrix : TopologyFileKind::Unrecognised;
}

Expected<Topology> loadTopologyFile(const std::string& path, HwlocXmlPolicy hwlocXml) {
  auto text = readWholeFile(path);
  if (!text) return Expected<Topology>::failure(text.error());
  return parseByKind(sniffTopologyFile(text.value()), text.value(), path, hwlocXml);
}

Expected<Topology> loadTopologyFiles(std::span<const std::string> paths, HwlocXmlPolicy hwlocXml) {
  using Result = Expected<Topology>;
  if (paths.empty()) return Result::failure("no topology file given");
  std::optional<Topology> topo;
  std::string topoPath;
  struct PendingMatrix {
    std::string path;
    P2pMatrix matrix;
  };
  std::vector<PendingMatrix> matrices;
  for (const auto& path : paths) {
    auto text = readWholeFile(path);
    if (!text) return Result::failure(text.error());
    const auto kind = sniffTopologyFile(text.value());
    if (kind == TopologyFileKind::P2pMatrix) {
      auto m = parseP2pMatrix(text.value(), path);
      if (!m) return Result::failure(m.error());
      matrices.push_back({path, std::move(m).value()});
      continue;
    }
    auto t = parseByKind(kind, text.value(), path, hwlocXml);
    if (!t) return t;
    if (topo)
      return Result::failure(path + ": a second topology (the first was " + topoPath +
                             "); give one topology "
                             "file and any number of P2P matrices");
    topo = std::move(t).value();
    topoPath = path;
  }
  if (!topo)
    return Result::failure(paths.front() +
                           ": only P2P matrices given; a `nvidia-smi topo -m` capture or an "
                           "hwloc XML is needed as well");
  for (const auto& [path, matrix] : matrices) {
    bool guessed = false;
    const auto cap = p2pCapabilityFromFileName(path, &guessed);
    auto applied = applyP2pMatrix(*topo, matrix, cap, path);
    if (!applied) return Result::failure(applied.error());
    if (guessed) topo->addNote(path + ": file name does not say r/w/rw; taken as a `topo -p2p rw` capture");
  }
  if (!matrices.empty()) {
    // The P2P matrices answered what topo -m could not; drop that note if every pair is now known.
    bool allKnown = true;
    for (int a = 0; a < topo->gpuCount(); ++a)
      for (int b = 0; b < topo->gpuCount(); ++b)
        if (a != b && (topo->link(a, b).p2pRead == Support::Unknown || topo->link(a, b).p2pWrite == Support::Unknown))
          allKnown = false;
    if (allKnown) topo->dropNotesStartingWith("p2p unknown");
    std::string source = topo->source();
    for (const auto& m : matrices) source += " + " + m.path;
    topo->setSource(source);
  }
  return std::move(*topo);
}

}  // namespace symmem

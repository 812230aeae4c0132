// SPDX-License-Identifier: Apache-2.0
#pragma once
// Topologies from files: what `symmem-info --topo FILE...` and SYMMEM_TOPO_FILE read, and what the
// tests feed the classifier with. Nothing here throws or crashes on bad input: every failure is an
// error string naming the file, the line and what was expected ("topo.txt:5: expected 4 link cells
// for GPU2, found 3").
//
// Accepted:
//  - `nvidia-smi topo -m` text, pasted any way (tabs or spaces, ANSI codes, NIC rows, affinity
//    columns, legend or not);
//  - `nvidia-smi topo -p2p r|w|rw|...` matrices, which only add P2P status to a `topo -m` model;
//  - hwloc XML exports (`lstopo topo.xml`), read through hwloc itself (needs a build with hwloc), and
//    only where HwlocXmlPolicy allows it: the tools read them in a child process, the plugin refuses
//    them (hwloc's XML importer can crash on a malformed file, and the plugin runs inside the job).
// NCCL's own topology XML (NCCL_TOPO_FILE) is recognised and rejected with a clear message: it leaves
// out GPU-GPU NVLinks (NCCL adds them from NVML at run time), so it cannot give a complete model.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "topology/expected.h"
#include "topology/model.h"

namespace symmem {

// ---- Whole files: the entry points for tools and the run-time override ----

// Where an hwloc XML export may be parsed. Every other kind is parsed by this project's own code,
// which returns errors on any input; hwloc's importer is a C library that may crash instead.
enum class HwlocXmlPolicy : int {
  Refuse,          // inside an application (SYMMEM_TOPO_FILE in the plugin): an error that names the file
                   // and says what to give instead
  InChildProcess,  // the tools: parsed in a forked child with a time limit (hwloc_xml_child.h), so a
                   // crash or a hang is an error message, not the end of the tool
};

// Files are read bounded (core/bounded_file.h, kTopologyFileMaxBytes): a FIFO, a device, a directory
// or a file over the limit is an error naming what it is.
//
// Reads one topology file (topo -m or hwloc XML) of any supported kind.
Expected<Topology> loadTopologyFile(const std::string& path, HwlocXmlPolicy hwlocXml = HwlocXmlPolicy::InChildProcess);

// Reads one topology file plus any number of `topo -p2p` matrices, in any order; exactly one of the
// files must be a topology. Which P2P capability a matrix holds comes from its file name
// ("...p2p-rw...", "...p2p-r...", "...p2p-w..."); a name that does not say is taken as read+write
// and the model records that assumption in its notes.
Expected<Topology> loadTopologyFiles(std::span<const std::string> paths,
                                     HwlocXmlPolicy hwlocXml = HwlocXmlPolicy::InChildProcess);

// ---- Recognising a file ----

enum class TopologyFileKind : int {
  Empty,         // nothing but whitespace
  Binary,        // control bytes no text capture has
  TopoMatrix,    // nvidia-smi topo -m
  P2pMatrix,     // nvidia-smi topo -p2p <cap>
  HwlocXml,      // <topology ...> (lstopo / hwloc_topology_export_xml)
  NcclXml,       // <system version=...> (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE)
  OtherXml,      // XML, but neither of the above
  Unrecognised,  // text that looks like none of the above
};
std::string_view topologyFileKindName(TopologyFileKind k);
TopologyFileKind sniffTopologyFile(std::string_view text);

// ---- The parsers behind them (fileName is used in messages only) ----

Expected<Topology> parseTopoMatrix(std::string_view text, std::string_view fileName);

// Which capability a `topo -p2p` matrix reports. Only read and write feed the model.
enum class P2pCapability : int { Read, Write, ReadWrite, Other };

struct P2pMatrix {
  std::vector<int> gpuIndices;               // from the header: GPU0 GPU1 ... -> 0 1 ...
  std::vector<std::vector<Support>> status;  // [row][col]; OK -> Yes, U -> Unknown, NS/GNS/CNS/TNS/DR -> No
  std::vector<std::string> notes;            // e.g. tokens not in the legend (taken as "no")
};
Expected<P2pMatrix> parseP2pMatrix(std::string_view text, std::string_view fileName);
P2pCapability p2pCapabilityFromFileName(std::string_view path, bool* guessed);

// Copies the matrix's statuses into `topo` (matched by GPU index). Fails when the matrix names a GPU
// the topology does not have.
Expected<bool> applyP2pMatrix(Topology& topo, const P2pMatrix& matrix, P2pCapability cap, std::string_view fileName);

// hwloc XML: pairs from the PCI bridge tree (switch / host bridge / package), NVLink from the
// "NVLinkBandwidth" distances matrix when the export has one. Without hwloc in the build this returns
// an error saying so. In this process: a malformed file can crash it (see HwlocXmlPolicy; the loaders
// above never call this directly).
Expected<Topology> parseHwlocXml(std::string_view text, std::string_view fileName);

}  // namespace symmem

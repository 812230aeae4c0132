// SPDX-License-Identifier: Apache-2.0
#pragma once
// The vocabulary of nvidia-smi's matrices: column headings and cell tokens, shared by the `topo -m`
// and `topo -p2p` parsers and by the file sniffer.
#include <optional>
#include <string_view>

#include "topology/model.h"

namespace symmem {

// Most device columns (GPUs and NICs) a matrix header may have. The largest nodes have 16 GPUs and a
// few dozen NICs; a wider header is not a capture, and refusing it early keeps the work the parsers do
// per file small inside ncclCommInitRank.
inline constexpr int kMaxMatrixColumns = 1024;

// "GPU3" -> 3; anything else -> nullopt.
std::optional<int> gpuHeadingIndex(std::string_view token);
// "NIC0", and the NIC names older drivers put in the header ("mlx5_0").
bool isNicHeading(std::string_view token);

// A `topo -m` cell: "X" (self) or a path. "SOC" is the older drivers' name for SYS.
struct TopoCell {
  bool self = false;
  PathKind path = PathKind::Unknown;
  int nvlinks = 0;
};
std::optional<TopoCell> parseTopoCell(std::string_view token);

// What can follow the link cells of a row: a CPU list ("0-63,128-191"), a NUMA id, or "N/A".
bool looksLikeAffinityValue(std::string_view token);

// A `topo -p2p` cell. "X" is self (nullopt status); legend tokens map as in the P2pMatrix comment.
struct P2pCell {
  bool self = false;
  bool inLegend = true;  // false for a token not in the legend, taken as "no"
  Support status = Support::Unknown;
};
std::optional<P2pCell> parseP2pCell(std::string_view token);
// Tokens only a P2P matrix has (OK, NS, GNS, ...), for the sniffer.
bool isP2pOnlyToken(std::string_view token);

}  // namespace symmem

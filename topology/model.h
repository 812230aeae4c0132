// SPDX-License-Identifier: Apache-2.0
#pragma once
// What one node is made of, as far as the collectives care: its GPUs and, for every ordered pair, the
// path between them and whether the driver allows peer-to-peer reads and writes over it.
//
// The same model comes from run-time discovery (NVML + hwloc) and from files (`nvidia-smi topo -m`,
// `nvidia-smi topo -p2p`, hwloc XML), so the classifier, symmem-info and the tests see one shape.
// Every source leaves gaps (topo -m knows no capabilities, NVML knows no NUMA node); the model keeps
// them as "unknown" values plus a list of notes, and the decision treats unknown as "not proven".
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/capability.h"

namespace symmem {

// The path between two GPUs in nvidia-smi's vocabulary, best first. The names follow the `topo -m`
// legend because that is what users paste and what NVML's common-ancestor levels map onto.
enum class PathKind : int {
  NvLink,   // NV#: a bonded set of NVLinks (bridge or NVSwitch)
  Pix,      // at most one PCIe bridge: both GPUs on one switch
  Pxb,      // several PCIe bridges, no host bridge: switches cascaded in one fabric
  Phb,      // through one PCIe host bridge (the CPU root complex)
  Node,     // between host bridges inside one NUMA node
  Sys,      // through the SMP interconnect (or what the platform reports as such)
  Unknown,  // not learned
};

// A yes/no that a source may not have answered.
enum class Support : int { Unknown, Yes, No };

std::string_view supportName(Support s);  // "yes", "no", "unknown"

// "NV18", "PIX", "PXB", "PHB", "NODE", "SYS", "?" (nvlinks is the count for NvLink, 0 when unknown:
// then "NV").
std::string pathToken(PathKind kind, int nvlinks);

struct GpuInfo {
  int index = 0;                 // NVML / nvidia-smi index on this node
  std::string pciBusId;          // canonical "dddd:bb:dd.f" (see pci_bus_id.h); empty when unknown
  std::string name;              // "NVIDIA RTX PRO 6000 Blackwell Server Edition"; empty when unknown
  ComputeCapability capability;  // major 0 when unknown
  std::optional<int> numaNode;   // NUMA node the GPU's PCIe root sits on
  std::string cpuAffinity;       // CPU list as nvidia-smi or hwloc prints it ("0-63,128-191"); may be empty
};

// One ordered pair (a, b). The path is symmetric; P2P status is kept per direction because the driver
// reports it per direction (a reads from / writes to b).
struct PairLink {
  PathKind path = PathKind::Unknown;
  int nvlinks = 0;  // number of NVLinks for NvLink paths; 0 when not NVLink or not known
  Support p2pRead = Support::Unknown;
  Support p2pWrite = Support::Unknown;
};

class Topology {
 public:
  Topology() = default;
  explicit Topology(std::vector<GpuInfo> gpus);

  int gpuCount() const { return static_cast<int>(gpus_.size()); }
  const std::vector<GpuInfo>& gpus() const { return gpus_; }
  const GpuInfo& gpu(int i) const { return gpus_.at(i); }
  GpuInfo& gpu(int i) { return gpus_.at(i); }

  // The link from a to b (a != b). Out-of-range indices throw std::out_of_range: callers index by
  // gpuCount(), so that is a programming error, not input.
  const PairLink& link(int a, int b) const { return links_.at(slot(a, b)); }
  void setPath(int a, int b, PathKind kind, int nvlinks = 0);  // sets both directions
  void setP2p(int from, int to, Support read, Support write);  // one direction

  // Where the model came from ("nvml", "hwloc", "file rtx-5090.topo.txt", ...), for messages.
  const std::string& source() const { return source_; }
  void setSource(std::string s) { source_ = std::move(s); }

  // What could not be learned ("p2p unknown: ...", "numa unknown: ..."), one line each, no duplicates.
  const std::vector<std::string>& notes() const { return notes_; }
  void addNote(std::string note);
  void dropNotesStartingWith(std::string_view prefix);  // when a later source filled the gap

  // Index of the GPU with this PCI bus id (any spelling pci_bus_id.h accepts), or -1.
  int indexOfBusId(std::string_view busId) const;

 private:
  size_t slot(int a, int b) const;
  std::vector<GpuInfo> gpus_;
  std::vector<PairLink> links_;  // gpuCount x gpuCount, row = from
  std::string source_;
  std::vector<std::string> notes_;
};

}  // namespace symmem

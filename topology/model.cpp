// SPDX-License-Identifier: Apache-2.0
#include "topology/model.h"

#include <algorithm>
#include <stdexcept>

#include "topology/pci_bus_id.h"

namespace symmem {

std::string_view supportName(Support s) {
  switch (s) {
    case Support::Yes:
      return "yes";
    case Support::No:
      return "no";
    case Support::Unknown:
      return "unknown";
  }
  return "unknown";
}

std::string pathToken(PathKind kind, int nvlinks) {
  switch (kind) {
    case PathKind::NvLink:
      return nvlinks > 0 ? "NV" + std::to_string(nvlinks) : "NV";
    case PathKind::Pix:
      return "PIX";
    case PathKind::Pxb:
      return "PXB";
    case PathKind::Phb:
      return "PHB";
    case PathKind::Node:
      return "NODE";
    case PathKind::Sys:
      return "SYS";
    case PathKind::Unknown:
      return "?";
  }
  return "?";
}

Topology::Topology(std::vector<GpuInfo> gpus) : gpus_(std::move(gpus)), links_(gpus_.size() * gpus_.size()) {}

size_t Topology::slot(int a, int b) const {
  const int n = gpuCount();
  if (a < 0 || b < 0 || a >= n || b >= n) throw std::out_of_range("topology: GPU index out of range");
  return static_cast<size_t>(a) * static_cast<size_t>(n) + static_cast<size_t>(b);
}

void Topology::setPath(int a, int b, PathKind kind, int nvlinks) {
  const int count = kind == PathKind::NvLink ? nvlinks : 0;
  for (auto s : {slot(a, b), slot(b, a)}) {
    links_[s].path = kind;
    links_[s].nvlinks = count;
  }
}

void Topology::setP2p(int from, int to, Support read, Support write) {
  auto& l = links_[slot(from, to)];
  l.p2pRead = read;
  l.p2pWrite = write;
}

void Topology::addNote(std::string note) {
  if (std::find(notes_.begin(), notes_.end(), note) == notes_.end()) notes_.push_back(std::move(note));
}

void Topology::dropNotesStartingWith(std::string_view prefix) {
  std::erase_if(notes_, [&](const std::string& n) { return std::string_view(n).starts_with(prefix); });
}

int Topology::indexOfBusId(std::string_view busId) const {
  const auto wanted = canonicalPciBusId(busId);
  if (!wanted) return -1;
  for (int i = 0; i < gpuCount(); ++i)
    if (gpus_[i].pciBusId == *wanted) return i;
  return -1;
}

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where a GPU sits relative to the CPUs: its NUMA node and the CPUs close to it. NVML does not say
// which NUMA node a GPU hangs off, and the classifier needs it to tell a same-socket SYS pair from a
// cross-socket one, so discovery asks this source (hwloc at run time, a fake in tests).
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace symmem {

struct GpuPlacement {
  std::optional<int> numaNode;  // set only when the GPU's PCI root is under exactly one NUMA node
  std::string cpuAffinity;      // "0-63,128-191"; empty when unknown
};

class PlacementSource {
 public:
  virtual ~PlacementSource() = default;
  // Empty when the source works; otherwise why it cannot answer ("built without hwloc").
  virtual std::string unavailableReason() const = 0;
  // busId in canonical form (pci_bus_id.h). nullopt when the device is not known to the source.
  virtual std::optional<GpuPlacement> placementOf(std::string_view busId) = 0;
};

// This machine's placement through hwloc (loads the topology with PCI devices once, on creation).
// Never null: without hwloc it returns a source that reports why it cannot answer.
std::unique_ptr<PlacementSource> openHwlocPlacement();

}  // namespace symmem

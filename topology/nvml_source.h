// SPDX-License-Identifier: Apache-2.0
#pragma once
// The few NVML answers topology discovery needs, behind a narrow interface so that the discovery logic
// runs in unit tests on recorded answers (a fake) and in processes without a GPU driver.
//
// Values are NVML's own (topology levels, P2P status codes, bus ids as NVML spells them), so a fake
// is a recording of what NVML said and the translation into the model is tested with it.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "topology/model.h"

namespace symmem {

// NVML's public enum values (nvml.h: nvmlGpuTopologyLevel_t, nvmlGpuP2PCapsIndex_t,
// nvmlGpuP2PStatus_t). Declared here because nccl-symmem has no build-time dependency on NVML.
namespace nvml {
inline constexpr int kTopologyInternal = 0;
inline constexpr int kTopologySingle = 10;
inline constexpr int kTopologyMultiple = 20;
inline constexpr int kTopologyHostBridge = 30;
inline constexpr int kTopologyNode = 40;
inline constexpr int kTopologySystem = 50;

inline constexpr int kP2pCapsRead = 0;
inline constexpr int kP2pCapsWrite = 1;

inline constexpr int kP2pStatusOk = 0;
inline constexpr int kP2pStatusChipsetNotSupported = 1;
inline constexpr int kP2pStatusGpuNotSupported = 2;
inline constexpr int kP2pStatusTopologyNotSupported = 3;
inline constexpr int kP2pStatusDisabledByRegkey = 4;
inline constexpr int kP2pStatusNotSupported = 5;
inline constexpr int kP2pStatusUnknown = 6;
}  // namespace nvml

struct NvmlDevice {
  std::string busId;  // as NVML gives it ("00000000:3B:00.0")
  std::string name;
  std::optional<ComputeCapability> capability;
};

class NvmlSource {
 public:
  virtual ~NvmlSource() = default;
  // Empty when NVML is loaded and initialised; otherwise why not ("libnvidia-ml.so.1: not found").
  virtual std::string unavailableReason() const = 0;
  // Every GPU NVML sees on the node (NVML ignores CUDA_VISIBLE_DEVICES).
  virtual std::optional<unsigned> deviceCount() = 0;
  virtual std::optional<NvmlDevice> device(unsigned index) = 0;
  // nvmlDeviceGetTopologyCommonAncestor: one of nvml::kTopology*.
  virtual std::optional<int> commonAncestor(unsigned a, unsigned b) = 0;
  // nvmlDeviceGetP2PStatus(a, b, caps): one of nvml::kP2pStatus*.
  virtual std::optional<int> p2pStatus(unsigned a, unsigned b, int capsIndex) = 0;
  // Remote PCI bus ids of the device's active NVLinks, one entry per link (a GPU's bus id, or a
  // switch's). Empty when the device has no NVLink; nullopt when NVML cannot say.
  virtual std::optional<std::vector<std::string>> nvlinkRemotes(unsigned index) = 0;
};

// NVML loaded with dlopen("libnvidia-ml.so.1") and initialised; never null. Without the library or a
// driver it returns a source whose unavailableReason() says so.
std::unique_ptr<NvmlSource> openNvmlLibrary();

// NVML's vocabulary in the model's terms.
PathKind pathFromNvmlLevel(int level);
Support supportFromNvmlP2pStatus(int status);

}  // namespace symmem

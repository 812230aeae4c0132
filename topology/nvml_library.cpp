// SPDX-License-Identifier: Apache-2.0
// NvmlSource over the real NVML, loaded at run time. The plugin must load on machines without the
// driver (build hosts, CI, symmem-info on a laptop), so nothing links against libnvidia-ml: the entry
// points are looked up with dlsym and their types are declared here from NVML's public header.
#include <dlfcn.h>

#include <cstring>

#include "topology/nvml_source.h"

namespace symmem {

PathKind pathFromNvmlLevel(int level) {
  switch (level) {
    // INTERNAL: two GPUs on one board (dual-GPU cards); their traffic stays behind the board's switch.
    case nvml::kTopologyInternal:
    case nvml::kTopologySingle:
      return PathKind::Pix;
    case nvml::kTopologyMultiple:
      return PathKind::Pxb;
    case nvml::kTopologyHostBridge:
      return PathKind::Phb;
    case nvml::kTopologyNode:
      return PathKind::Node;
    case nvml::kTopologySystem:
      return PathKind::Sys;
    default:
      return PathKind::Unknown;
  }
}

Support supportFromNvmlP2pStatus(int status) {
  if (status == nvml::kP2pStatusOk) return Support::Yes;
  if (status == nvml::kP2pStatusUnknown) return Support::Unknown;
  return Support::No;  // every other status, including ones newer drivers may add, is a refusal
}

namespace {

// Layouts and signatures from nvml.h (public API, stable across driver versions for these _vN names).
using NvmlReturn = int;  // nvmlReturn_t; NVML_SUCCESS = 0
constexpr NvmlReturn kSuccess = 0;
constexpr NvmlReturn kUninitialized = 1;
constexpr NvmlReturn kNotSupported = 3;
constexpr unsigned kMaxNvlinks = 18;  // NVML_NVLINK_MAX_LINKS
struct NvmlDeviceSt;
using NvmlDeviceHandle = NvmlDeviceSt*;
struct NvmlPciInfo {  // nvmlPciInfo_t (v3)
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};

struct NvmlApi {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  const char* (*errorString)(NvmlReturn) = nullptr;
  NvmlReturn (*getCount)(unsigned*) = nullptr;
  NvmlReturn (*getHandleByIndex)(unsigned, NvmlDeviceHandle*) = nullptr;
  NvmlReturn (*getPciInfo)(NvmlDeviceHandle, NvmlPciInfo*) = nullptr;
  NvmlReturn (*getName)(NvmlDeviceHandle, char*, unsigned) = nullptr;
  NvmlReturn (*getCudaComputeCapability)(NvmlDeviceHandle, int*, int*) = nullptr;
  NvmlReturn (*getTopologyCommonAncestor)(NvmlDeviceHandle, NvmlDeviceHandle, int*) = nullptr;
  NvmlReturn (*getP2PStatus)(NvmlDeviceHandle, NvmlDeviceHandle, int, int*) = nullptr;
  NvmlReturn (*getNvLinkState)(NvmlDeviceHandle, unsigned, int*) = nullptr;
  NvmlReturn (*getNvLinkRemotePciInfo)(NvmlDeviceHandle, unsigned, NvmlPciInfo*) = nullptr;
};

template <class Fn>
void bind(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
}

class NvmlLibrary final : public NvmlSource {
 public:
  NvmlLibrary() {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) {
      const char* err = dlerror();
      reason_ = std::string("cannot load libnvidia-ml.so.1") + (err ? std::string(": ") + err : std::string());
      return;
    }
    bind(lib_, "nvmlInit_v2", api_.init);
    bind(lib_, "nvmlShutdown", api_.shutdown);
    bind(lib_, "nvmlErrorString", api_.errorString);
    bind(lib_, "nvmlDeviceGetCount_v2", api_.getCount);
    bind(lib_, "nvmlDeviceGetHandleByIndex_v2", api_.getHandleByIndex);
    bind(lib_, "nvmlDeviceGetPciInfo_v3", api_.getPciInfo);
    bind(lib_, "nvmlDeviceGetName", api_.getName);
    bind(lib_, "nvmlDeviceGetCudaComputeCapability", api_.getCudaComputeCapability);
    bind(lib_, "nvmlDeviceGetTopologyCommonAncestor", api_.getTopologyCommonAncestor);
    bind(lib_, "nvmlDeviceGetP2PStatus", api_.getP2PStatus);
    bind(lib_, "nvmlDeviceGetNvLinkState", api_.getNvLinkState);
    bind(lib_, "nvmlDeviceGetNvLinkRemotePciInfo_v2", api_.getNvLinkRemotePciInfo);
    if (!api_.init || !api_.shutdown || !api_.getCount || !api_.getHandleByIndex) {
      reason_ = "libnvidia-ml.so.1 lacks nvmlInit_v2 / nvmlDeviceGetCount_v2 (driver too old)";
      return;
    }
    // NVML counts its initialisations and sets itself up at the first, tears down at the last
    // shutdown. Before its first init in the process every device call answers UNINITIALIZED.
    unsigned ignored = 0;
    const bool firstInProcess = api_.getCount(&ignored) == kUninitialized;
    if (const NvmlReturn rc = api_.init(); rc != kSuccess) {
      reason_ = "nvmlInit_v2 failed: " + errorText(rc);
      return;
    }
    initialized_ = true;
    keptForProcess_ = firstInProcess;
  }

  // The first initialisation in the process is kept, with this handle, until the process exits; every
  // other one is shut down and its handle closed. The plugin is loaded and unloaded at every
  // communicator where nothing pins it (SYMMEM_ATTACH=0), and each load discovers the node afresh: a
  // full NVML set-up and tear-down per load costs memory the driver's library does not give back (the
  // load/unload cycle grew about 72 KiB on an H200 with driver 580; it stays flat where NVML is absent). With
  // NVML kept initialised, a later load's init and shutdown only count a reference. Where NCCL (which
  // initialises NVML at communicator creation and keeps it) or the application was first, the plugin
  // keeps nothing. Every load calls nvmlInit_v2 itself, so a forked child, whose inherited NVML state
  // is not usable, has NVML set up again before it asks.
  ~NvmlLibrary() override {
    if (keptForProcess_) return;
    if (initialized_) api_.shutdown();
    if (lib_) dlclose(lib_);
  }

  std::string unavailableReason() const override { return reason_; }

  std::optional<unsigned> deviceCount() override {
    if (!initialized_) return std::nullopt;
    unsigned count = 0;
    if (api_.getCount(&count) != kSuccess) return std::nullopt;
    return count;
  }

  std::optional<NvmlDevice> device(unsigned index) override {
    auto h = handle(index);
    if (!h || !api_.getPciInfo) return std::nullopt;
    NvmlPciInfo pci{};
    if (api_.getPciInfo(*h, &pci) != kSuccess) return std::nullopt;
    NvmlDevice d;
    d.busId.assign(pci.busId, strnlen(pci.busId, sizeof(pci.busId)));
    char name[96] = {};  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
    if (api_.getName && api_.getName(*h, name, sizeof(name)) == kSuccess) d.name = name;
    int major = 0, minor = 0;
    if (api_.getCudaComputeCapability && api_.getCudaComputeCapability(*h, &major, &minor) == kSuccess && major > 0)
      d.capability = ComputeCapability{major, minor};
    return d;
  }

  std::optional<int> commonAncestor(unsigned a, unsigned b) override {
    auto ha = handle(a), hb = handle(b);
    int level = 0;
    if (!ha || !hb || !api_.getTopologyCommonAncestor || api_.getTopologyCommonAncestor(*ha, *hb, &level) != kSuccess)
      return std::nullopt;
    return level;
  }

  std::optional<int> p2pStatus(unsigned a, unsigned b, int capsIndex) override {
    auto ha = handle(a), hb = handle(b);
    int status = 0;
    if (!ha || !hb || !api_.getP2PStatus || api_.getP2PStatus(*ha, *hb, capsIndex, &status) != kSuccess)
      return std::nullopt;
    return status;
  }

  std::optional<std::vector<std::string>> nvlinkRemotes(unsigned index) override {
    auto h = handle(index);
    if (!h || !api_.getNvLinkState || !api_.getNvLinkRemotePciInfo) return std::nullopt;
    std::vector<std::string> remotes;
    for (unsigned link = 0; link < kMaxNvlinks; ++link) {
      int active = 0;
      const NvmlReturn rc = api_.getNvLinkState(*h, link, &active);
      if (rc == kNotSupported && link == 0) return remotes;  // no NVLink on this GPU
      if (rc != kSuccess || !active) continue;               // past the GPU's link count, or down
      NvmlPciInfo pci{};
      if (api_.getNvLinkRemotePciInfo(*h, link, &pci) != kSuccess) continue;
      remotes.emplace_back(pci.busId, strnlen(pci.busId, sizeof(pci.busId)));
    }
    return remotes;
  }

 private:
  std::optional<NvmlDeviceHandle> handle(unsigned index) {
    if (!initialized_) return std::nullopt;
    NvmlDeviceHandle h = nullptr;
    if (api_.getHandleByIndex(index, &h) != kSuccess || !h) return std::nullopt;
    return h;
  }

  std::string errorText(NvmlReturn rc) const {
    const char* s = api_.errorString ? api_.errorString(rc) : nullptr;
    return s ? std::string(s) : "NVML error " + std::to_string(rc);
  }

  void* lib_ = nullptr;
  NvmlApi api_;
  bool initialized_ = false;
  bool keptForProcess_ = false;  // this object holds NVML's process-long initialisation (and handle)
  std::string reason_;
};

}  // namespace

std::unique_ptr<NvmlSource> openNvmlLibrary() { return std::make_unique<NvmlLibrary>(); }

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
// A stand-in for the driver's libnvidia-ml.so.1: the entry points the plugin's topology discovery
// binds (topology/nvml_library.cpp), answering for one GPU (an H200 at 0000:19:00.0, no NVLink), with
// NVML's reference-counted initialisation: nvmlInit_v2 counts a reference, nvmlShutdown drops one, and
// only the first init and the last shutdown set the library up and tear it down.
//
// A full set-up and tear-down keeps kKeptPerSetUpBytes that the tear-down does not give back, as the
// driver's library does on the GPU machine (the plugin's load/unload cycle grew about 72 KiB there with
// NVML working and by nothing without it), so a plugin that sets NVML up afresh at every load grows
// here as it grows there. symmemFakeNvmlCounts() tells a test how often each happened.
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum {
  kSuccess = 0,
  kUninitialized = 1,
  kInvalidArgument = 2,
  kNotSupported = 3,
  kKeptPerSetUpBytes = 64 * 1024,
};

struct FakeDevice {
  int unused;
};
static struct FakeDevice gDevice;

struct PciInfo {  // nvmlPciInfo_t (v3)
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};

static int gReferences;  // NVML's own count of initialisations not yet shut down
static int gInits, gShutdowns, gSetUps, gTearDowns;
static void* gKept;  // a chain of the blocks set-ups left behind, so that they stay reachable

EXPORT int nvmlInit_v2(void) {
  if (gReferences++ == 0) {
    ++gSetUps;
    void** block = (void**)malloc(kKeptPerSetUpBytes);
    if (block) {
      memset(block, 0x5a, kKeptPerSetUpBytes);  // resident, as the driver's is
      block[0] = gKept;
      gKept = block;
    }
  }
  ++gInits;
  return kSuccess;
}

EXPORT int nvmlShutdown(void) {
  if (gReferences == 0) return kSuccess;  // more shutdowns than inits are no error (nvml.h)
  ++gShutdowns;
  if (--gReferences == 0) ++gTearDowns;
  return kSuccess;
}

EXPORT const char* nvmlErrorString(int result) { return result == kSuccess ? "Success" : "fake NVML error"; }

EXPORT int nvmlDeviceGetCount_v2(unsigned* count) {
  if (gReferences == 0) return kUninitialized;
  if (!count) return kInvalidArgument;
  *count = 1;
  return kSuccess;
}

EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned index, struct FakeDevice** device) {
  if (gReferences == 0) return kUninitialized;
  if (index != 0 || !device) return kInvalidArgument;
  *device = &gDevice;
  return kSuccess;
}

EXPORT int nvmlDeviceGetPciInfo_v3(struct FakeDevice* device, struct PciInfo* pci) {
  if (gReferences == 0) return kUninitialized;
  if (device != &gDevice || !pci) return kInvalidArgument;
  memset(pci, 0, sizeof(*pci));
  pci->bus = 0x19;
  strcpy(pci->busId, "00000000:19:00.0");
  strcpy(pci->busIdLegacy, "0000:19:00.0");
  return kSuccess;
}

EXPORT int nvmlDeviceGetName(struct FakeDevice* device, char* name, unsigned length) {
  if (gReferences == 0) return kUninitialized;
  if (device != &gDevice || !name || length < 12) return kInvalidArgument;
  strcpy(name, "NVIDIA H200");
  return kSuccess;
}

EXPORT int nvmlDeviceGetCudaComputeCapability(struct FakeDevice* device, int* major, int* minor) {
  if (gReferences == 0) return kUninitialized;
  if (device != &gDevice || !major || !minor) return kInvalidArgument;
  *major = 9;
  *minor = 0;
  return kSuccess;
}

EXPORT int nvmlDeviceGetTopologyCommonAncestor(struct FakeDevice* a, struct FakeDevice* b, int* level) {
  return gReferences == 0 ? kUninitialized : kInvalidArgument;  // one GPU: no pair to ask about
}

EXPORT int nvmlDeviceGetP2PStatus(struct FakeDevice* a, struct FakeDevice* b, int caps, int* status) {
  return gReferences == 0 ? kUninitialized : kInvalidArgument;
}

EXPORT int nvmlDeviceGetNvLinkState(struct FakeDevice* device, unsigned link, int* active) {
  return gReferences == 0 ? kUninitialized : kNotSupported;  // no NVLink
}

EXPORT int nvmlDeviceGetNvLinkRemotePciInfo_v2(struct FakeDevice* device, unsigned link, struct PciInfo* pci) {
  return gReferences == 0 ? kUninitialized : kNotSupported;
}

// For tests: how many inits and shutdowns were called (those that counted), and how many of them set
// the library up and tore it down; the references still held are inits - shutdowns.
EXPORT void symmemFakeNvmlCounts(int* inits, int* shutdowns, int* setUps, int* tearDowns) {
  *inits = gInits;
  *shutdowns = gShutdowns;
  *setUps = gSetUps;
  *tearDowns = gTearDowns;
}

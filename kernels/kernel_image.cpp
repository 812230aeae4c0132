// SPDX-License-Identifier: Apache-2.0
#include "kernels/kernel_image.h"

#include <algorithm>
#include <atomic>

#include "kernels/scoped_device.h"

#ifndef SYMMEM_CUDA_ARCHITECTURES
#error "kernels/CMakeLists.txt defines SYMMEM_CUDA_ARCHITECTURES (CMAKE_CUDA_ARCHITECTURES) for this file"
#endif

namespace symmem::kernels {
namespace {

bool isSeparator(char c) { return c == ';' || c == ',' || c == ' '; }

// "80-real", "90a", "120-virtual", "100f-real".
std::optional<BuiltArchitecture> parseEntry(std::string_view entry) {
  BuiltArchitecture arch;
  arch.sass = arch.ptx = true;
  if (entry.ends_with("-real")) {
    entry.remove_suffix(5);
    arch.ptx = false;
  } else if (entry.ends_with("-virtual")) {
    entry.remove_suffix(8);
    arch.sass = false;
  }
  if (!entry.empty() && (entry.back() == 'a' || entry.back() == 'f')) {
    arch.variant = entry.back();
    entry.remove_suffix(1);
  }
  // The digits as nvcc writes them after "sm_"; parseCapability refuses signs, spaces and the rest.
  const std::optional<ComputeCapability> cc = parseCapability("sm_" + std::string(entry));
  if (!cc) return std::nullopt;
  arch.cc = *cc;
  return arch;
}

std::string capabilityText(const BuiltArchitecture& arch) {
  std::string text = arch.cc.str();
  if (arch.variant != 0) text += arch.variant;
  return text;
}

// Code built for `arch` runs on `cc`: the same capability always; a newer one of the same major for
// plain and family SASS; any newer one for plain PTX, the same major for family PTX.
bool fits(const BuiltArchitecture& arch, bool asPtx, ComputeCapability cc) {
  if (arch.variant == 'a') return cc == arch.cc;
  if (cc < arch.cc) return false;
  if (!asPtx || arch.variant == 'f') return cc.major == arch.cc.major;
  return true;
}

// kernelCodeTakesProgrammaticLaunch's answers, per device: 0 not asked yet, 1 yes, -1 no.
constexpr int kCachedDevices = 64;
std::atomic<signed char> takesProgrammatic[kCachedDevices] = {};

// Probes the current device (`device`), and remembers whether its code has the handshake.
cudaError_t probeAndRemember(int device, bool* takes) {
  cudaFuncAttributes attributes{};
  const cudaError_t error = probeKernelImage(&attributes);
  if (error != cudaSuccess) cudaGetLastError();  // not sticky: leave it for no later check
  *takes = error == cudaSuccess && attributes.ptxVersion >= 90;
  if (device >= 0 && device < kCachedDevices)
    takesProgrammatic[device].store(*takes ? 1 : -1, std::memory_order_relaxed);
  return error;
}

}  // namespace

std::optional<std::vector<BuiltArchitecture>> parseCudaArchitectures(std::string_view list) {
  std::vector<BuiltArchitecture> built;
  size_t begin = 0;
  while (begin < list.size()) {
    if (isSeparator(list[begin])) {
      ++begin;
      continue;
    }
    size_t end = begin;
    while (end < list.size() && !isSeparator(list[end])) ++end;
    const std::optional<BuiltArchitecture> arch = parseEntry(list.substr(begin, end - begin));
    if (!arch) return std::nullopt;
    built.push_back(*arch);
    begin = end;
  }
  if (built.empty()) return std::nullopt;
  return built;
}

std::string describeArchitectures(const std::vector<BuiltArchitecture>& built) {
  std::vector<BuiltArchitecture> sorted = built;
  std::sort(sorted.begin(), sorted.end(), [](const BuiltArchitecture& x, const BuiltArchitecture& y) {
    return x.cc != y.cc ? x.cc < y.cc : x.variant < y.variant;
  });
  // Sorted, so a capability listed twice ("90-real;90") is next to itself.
  const auto join = [&sorted](bool BuiltArchitecture::*carried) {
    std::string text, last;
    for (const BuiltArchitecture& arch : sorted) {
      if (!(arch.*carried) || capabilityText(arch) == last) continue;
      last = capabilityText(arch);
      text += (text.empty() ? "" : " ") + last;
    }
    return text;
  };
  const std::string sass = join(&BuiltArchitecture::sass);
  const std::string ptx = join(&BuiltArchitecture::ptx);
  if (ptx.empty()) return sass;
  if (sass.empty()) return "PTX " + ptx;
  return sass + " (+PTX " + ptx + ")";
}

bool builtCodeRunsOn(ComputeCapability cc, const std::vector<BuiltArchitecture>& built) {
  return std::any_of(built.begin(), built.end(), [cc](const BuiltArchitecture& arch) {
    return (arch.sass && fits(arch, false, cc)) || (arch.ptx && fits(arch, true, cc));
  });
}

std::string_view builtArchitecturesSetting() { return SYMMEM_CUDA_ARCHITECTURES; }

std::string builtArchitecturesText() {
  const std::optional<std::vector<BuiltArchitecture>> built = parseCudaArchitectures(builtArchitecturesSetting());
  if (!built) return "CMAKE_CUDA_ARCHITECTURES=" + std::string(builtArchitecturesSetting());
  return describeArchitectures(*built);
}

std::string kernelImageProblemText(int device, ComputeCapability cc, std::string_view builtText, cudaError_t error) {
  std::string text = "GPU " + std::to_string(device) + " is compute capability " + cc.str() +
                     ", the kernels are built for " + std::string(builtText) + ": ";
  if (error == cudaErrorNoKernelImageForDevice || error == cudaErrorInvalidDeviceFunction)
    return text + "no code it can run";
  return text + cudaGetErrorString(error);
}

std::string kernelImageProblem(int device) {
  const ScopedDevice onDevice(device);
  if (onDevice.status() != cudaSuccess)
    return "cudaSetDevice(" + std::to_string(device) + "): " + cudaGetErrorString(onDevice.status());
  ComputeCapability cc;
  if (cudaDeviceGetAttribute(&cc.major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&cc.minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    const cudaError_t error = cudaGetLastError();
    return "GPU " + std::to_string(device) + ": compute capability unknown (" + cudaGetErrorString(error) + ")";
  }
  bool takesProgrammaticLaunch = false;
  const cudaError_t error = probeAndRemember(device, &takesProgrammaticLaunch);
  if (error == cudaSuccess) return {};
  return kernelImageProblemText(device, cc, builtArchitecturesText(), error);
}

bool kernelCodeTakesProgrammaticLaunch(int device) {
  if (device >= 0 && device < kCachedDevices) {
    const signed char known = takesProgrammatic[device].load(std::memory_order_relaxed);
    if (known != 0) return known > 0;
  }
  bool takes = false;
  probeAndRemember(device, &takes);
  return takes;
}

}  // namespace symmem::kernels

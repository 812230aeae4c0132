// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which GPUs the kernels carry code for, and whether this one can run it.
//
// The build compiles every kernel for the capabilities in CMAKE_CUDA_ARCHITECTURES: machine code
// (SASS) for some, PTX for others, which the driver compiles for a newer GPU when it loads the
// library. A GPU that none of them fits fails every launch with "no kernel image"; setup asks
// kernelImageProblem first, so that such a GPU gets one clear reason and NCCL instead.
#include <cuda_runtime_api.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/capability.h"
#include "kernels/kernel_image_probe.h"

namespace symmem::kernels {

// One entry of CMAKE_CUDA_ARCHITECTURES: "90-real" (SASS only), "120-virtual" (PTX only), "120"
// (both); "90a" / "100f" are arch-specific / family-specific code.
struct BuiltArchitecture {
  ComputeCapability cc;
  bool sass = false;
  bool ptx = false;
  char variant = 0;  // 'a': runs on exactly `cc`; 'f': on `cc`'s major from `cc`'s minor; 0: plain
  constexpr bool operator==(const BuiltArchitecture&) const = default;
};

// Parses a CMake-style list: "80-real;86-real;120" (entries split by ';', ',' or spaces). nullopt
// when an entry is not of that form, as CMake's "all", "all-major" and "native" are not.
std::optional<std::vector<BuiltArchitecture>> parseCudaArchitectures(std::string_view list);

// "8.0 8.6 8.9 9.0 10.0 12.0 (+PTX 12.0)": the SASS capabilities, then the PTX ones, each sorted.
std::string describeArchitectures(const std::vector<BuiltArchitecture>& built);

// Whether a GPU of capability `cc` can run code from `built`, by CUDA's compatibility rules: SASS
// of the same major and a minor not above the GPU's; PTX of a capability not above the GPU's (the
// driver compiles it). For places without the GPU (symmem-info --cc); on a GPU, kernelImageProblem
// asks the runtime itself.
bool builtCodeRunsOn(ComputeCapability cc, const std::vector<BuiltArchitecture>& built);

// What this library was built for: CMAKE_CUDA_ARCHITECTURES as configured, with spaces for its
// semicolons ("80-real 86-real ... 120"); and as describeArchitectures writes it, or the setting
// itself when it does not parse ("CMAKE_CUDA_ARCHITECTURES=all-major"). For symmem-info.
std::string_view builtArchitecturesSetting();
std::string builtArchitecturesText();

// "" when the kernels can run on `device`; else one sentence (under 160 characters with the
// default list) naming the device's capability and what the library carries, e.g. "GPU 0 is
// compute capability 7.0, the kernels are built for 8.0 ... 12.0 (+PTX 12.0): no code it can run".
// Makes `device` current for the query and gives the caller's device back; clears the error it
// provokes, so a later cudaGetLastError does not see it.
std::string kernelImageProblem(int device);

// The sentence kernelImageProblem writes, from plain values: `error` is the runtime's answer
// when the probe did not load.
std::string kernelImageProblemText(int device, ComputeCapability cc, std::string_view builtText, cudaError_t error);

}  // namespace symmem::kernels

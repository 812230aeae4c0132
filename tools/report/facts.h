// SPDX-License-Identifier: Apache-2.0
#pragma once
// What symmem-report asks the machine itself, outside the tools it runs: the identity its texts must
// hide, the versions of what runs here, and the environment variables that change what runs. Kept
// apart from the pure text (text.h, redact.h) that the tests check.
#include <string>
#include <vector>

#include "tools/report/redact.h"
#include "tools/report/text.h"

namespace symmem::report {

// The host, user, home and current directory of this process, and `reportDirs` as given.
Identity gatherIdentity(const std::vector<std::string>& reportDirs);

// nccl-symmem, the NVIDIA driver (/proc/driver/nvidia/version), CUDA runtime and driver, NCCL
// (loaded and built against), the GPUs the driver lists, the OS and its kernel release. Loads NCCL
// and asks the CUDA runtime for versions only (no device is touched); call it after the tools ran.
std::vector<Row> gatherVersions();

// The variables of `environ` that change what the tools and the plugin do: SYMMEM_*, NCCL_* and
// CUDA_VISIBLE_DEVICES, in name order, values as set (the caller redacts them).
std::vector<Row> reportedEnvironment(const char* const* environ);

}  // namespace symmem::report

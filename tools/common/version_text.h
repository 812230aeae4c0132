// SPDX-License-Identifier: Apache-2.0
#pragma once
// Versions as the tools write them (symmem-tune's meta lines, symmem-report's versions table).
// NCCL's version text is ncclVersionText (tools/common/nccl_library.h).
#include <string>
#include <string_view>

namespace symmem {

// "13.0" from 13000, "12.8" from 12080: a CUDA runtime or driver API version code.
std::string cudaVersionText(int version);

// The kernel module version from the text of /proc/driver/nvidia/version; "" when not found.
std::string nvidiaDriverVersion(std::string_view procText);

}  // namespace symmem

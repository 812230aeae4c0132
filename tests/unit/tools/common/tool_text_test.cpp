// SPDX-License-Identifier: Apache-2.0
// The texts two or more tools print the same way: versions (symmem-tune's meta lines, symmem-info and
// symmem-report's versions) and durations (symmem-tune's estimate and progress, symmem-health's limit).
#include <gtest/gtest.h>

#include "tools/common/duration_text.h"
#include "tools/common/nccl_library.h"
#include "tools/common/version_text.h"

namespace symmem {
namespace {

TEST(ToolText, VersionsAndDriverText) {
  EXPECT_EQ(ncclVersionText(22809), "2.28.9");
  EXPECT_EQ(ncclVersionText(21903), "2.19.3");
  EXPECT_EQ(ncclVersionText(2804), "2.8.4");
  EXPECT_EQ(cudaVersionText(13000), "13.0");
  EXPECT_EQ(cudaVersionText(12080), "12.8");
  EXPECT_EQ(
      nvidiaDriverVersion("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Wed Jan  8 19:43:54 UTC 2025\n"
                          "GCC version:  gcc version 12.3.0\n"),
      "570.86.15");
  EXPECT_EQ(nvidiaDriverVersion("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build\n"),
            "580.95.05");
  EXPECT_EQ(nvidiaDriverVersion(""), "");
}

TEST(ToolText, Durations) {
  EXPECT_EQ(durationText(42), "42s");
  EXPECT_EQ(durationText(185), "3m05s");
  EXPECT_EQ(durationText(3720), "1h02m");
  EXPECT_EQ(durationText(-3), "0s");
}

}  // namespace
}  // namespace symmem

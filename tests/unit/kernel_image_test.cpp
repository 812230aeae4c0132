// SPDX-License-Identifier: Apache-2.0
// The architectures the kernels are built for: CMAKE_CUDA_ARCHITECTURES read as CMake writes it,
// named as the setup reason names it, and CUDA's rule for which GPUs can run what was built.
#include <gtest/gtest.h>

#include <string>

#include "kernels/kernel_image.h"

namespace symmem::kernels {
namespace {

constexpr const char* kDefaultList = "80-real;86-real;89-real;90-real;100-real;120";

std::vector<BuiltArchitecture> parsed(const char* list) {
  const std::optional<std::vector<BuiltArchitecture>> built = parseCudaArchitectures(list);
  EXPECT_TRUE(built.has_value()) << list;
  return built.value_or(std::vector<BuiltArchitecture>{});
}

TEST(KernelImage, ReadsCMakesForms) {
  const std::vector<BuiltArchitecture> built = parsed("90-real;120;100f-virtual;90a");
  ASSERT_EQ(built.size(), 4u);
  EXPECT_EQ(built[0], (BuiltArchitecture{{9, 0}, true, false, 0}));
  EXPECT_EQ(built[1], (BuiltArchitecture{{12, 0}, true, true, 0}));
  EXPECT_EQ(built[2], (BuiltArchitecture{{10, 0}, false, true, 'f'}));
  EXPECT_EQ(built[3], (BuiltArchitecture{{9, 0}, true, true, 'a'}));
  EXPECT_EQ(parsed("80-real 86-real,120"), parsed("80-real;86-real;120"));
}

TEST(KernelImage, RefusesWhatIsNotAList) {
  for (const char* bad : {"", ";", "all", "all-major", "native", "8.0", "sm_80", "80-reall", "80-real-virtual", "-real",
                          "8", "1200", "80b", "80;x"})
    EXPECT_FALSE(parseCudaArchitectures(bad).has_value()) << "'" << bad << "'";
}

TEST(KernelImage, NamesSassThenPtxSortedOnce) {
  EXPECT_EQ(describeArchitectures(parsed(kDefaultList)), "8.0 8.6 8.9 9.0 10.0 12.0 (+PTX 12.0)");
  EXPECT_EQ(describeArchitectures(parsed("120;90-real;100-real;90-real")), "9.0 10.0 12.0 (+PTX 12.0)");
  EXPECT_EQ(describeArchitectures(parsed("90-real;100-real")), "9.0 10.0");
  EXPECT_EQ(describeArchitectures(parsed("120-virtual;80-virtual")), "PTX 8.0 12.0");
  EXPECT_EQ(describeArchitectures(parsed("90a-real;90-real;100f")), "9.0 9.0a 10.0f (+PTX 10.0f)");
}

TEST(KernelImage, ThisLibraryNamesWhatItWasBuiltFor) {
  const std::optional<std::vector<BuiltArchitecture>> built = parseCudaArchitectures(builtArchitecturesSetting());
  ASSERT_TRUE(built.has_value()) << "CMAKE_CUDA_ARCHITECTURES='" << builtArchitecturesSetting() << "'";
  EXPECT_EQ(builtArchitecturesText(), describeArchitectures(*built));
}

TEST(KernelImage, SassRunsOnItsMajorPtxOnAnyNewerCapability) {
  const std::vector<BuiltArchitecture> built = parsed(kDefaultList);
  for (ComputeCapability cc :
       {ComputeCapability{8, 0}, {8, 6}, {8, 7}, {8, 9}, {9, 0}, {10, 0}, {10, 3}, {12, 0}, {12, 1}, {13, 0}})
    EXPECT_TRUE(builtCodeRunsOn(cc, built)) << cc.str();
  // Volta and Turing are older than every entry; 11.0 is newer than 10.0's SASS allows and older
  // than the PTX.
  for (ComputeCapability cc : {ComputeCapability{7, 0}, {7, 5}, {11, 0}})
    EXPECT_FALSE(builtCodeRunsOn(cc, built)) << cc.str();
  // Without PTX nothing runs beyond the majors built.
  EXPECT_FALSE(builtCodeRunsOn({12, 0}, parsed("90-real;100-real")));
  EXPECT_TRUE(builtCodeRunsOn({12, 0}, parsed("90-virtual")));
}

TEST(KernelImage, ArchAndFamilyCodeRunsWhereCudaSays) {
  EXPECT_TRUE(builtCodeRunsOn({9, 0}, parsed("90a")));
  EXPECT_FALSE(builtCodeRunsOn({10, 0}, parsed("90a")));
  EXPECT_TRUE(builtCodeRunsOn({10, 3}, parsed("100f-virtual")));
  EXPECT_FALSE(builtCodeRunsOn({12, 0}, parsed("100f-virtual")));
  EXPECT_FALSE(builtCodeRunsOn({10, 0}, parsed("103f")));
}

TEST(KernelImage, TheReasonNamesBothSidesAndFitsASetupRecord) {
  const std::string builtText = describeArchitectures(parsed(kDefaultList));
  EXPECT_EQ(kernelImageProblemText(3, {7, 0}, builtText, cudaErrorNoKernelImageForDevice),
            "GPU 3 is compute capability 7.0, the kernels are built for 8.0 8.6 8.9 9.0 10.0 12.0 (+PTX 12.0): "
            "no code it can run");
  EXPECT_EQ(kernelImageProblemText(0, {11, 0}, builtText, cudaErrorInvalidDeviceFunction),
            kernelImageProblemText(0, {11, 0}, builtText, cudaErrorNoKernelImageForDevice));
  // Any other answer is named as the runtime names it.
  const std::string other = kernelImageProblemText(0, {13, 0}, builtText, cudaErrorUnsupportedPtxVersion);
  EXPECT_NE(other.find(cudaGetErrorString(cudaErrorUnsupportedPtxVersion)), std::string::npos) << other;
  // Setup carries reasons in 160-byte records, behind "rank N: ".
  const std::string longest =
      "rank 127: " + kernelImageProblemText(15, {10, 3}, builtText, cudaErrorNoKernelImageForDevice);
  EXPECT_LT(longest.size(), 160u) << longest;
}

}  // namespace
}  // namespace symmem::kernels

// SPDX-License-Identifier: Apache-2.0
// What each NCCL release gets: the tuner interface NCCL loads, and whether it names the communicator.
#include "plugin/nccl/nccl_support.h"

#include <gtest/gtest.h>

namespace {

using symmem::ncclSupport;

TEST(NcclSupport, EachReleaseLoadsTheTunerInterfaceItLooksUpFirst) {
  EXPECT_EQ(ncclSupport(22005).tunerVersion, 0) << "2.20.5: older than any tuner this plugin speaks";
  EXPECT_EQ(ncclSupport(22105).tunerVersion, 2);
  EXPECT_EQ(ncclSupport(22304).tunerVersion, 3);
  EXPECT_EQ(ncclSupport(22707).tunerVersion, 4);
  EXPECT_EQ(ncclSupport(22809).tunerVersion, 5);
  EXPECT_EQ(ncclSupport(22907).tunerVersion, 5);
  EXPECT_EQ(ncclSupport(23007).tunerVersion, 6);
  EXPECT_EQ(ncclSupport(23205).tunerVersion, 6);
  EXPECT_EQ(ncclSupport(23206).tunerVersion, 7);
}

TEST(NcclSupport, TheIdComesWith2_28_3AndTheSummarySaysWhatThatMeans) {
  EXPECT_FALSE(ncclSupport(22707).idForTuner);
  EXPECT_FALSE(ncclSupport(22802).idForTuner);
  EXPECT_TRUE(ncclSupport(22803).idForTuner);
  // 2.27.3 - 2.27.7: the process's first communicator is named from NCCL's struct (legacy_comm_hash.h).
  EXPECT_NE(ncclSupport(22707).summary.find("and the process's first"), std::string::npos);
  EXPECT_NE(ncclSupport(22703).summary.find("and the process's first"), std::string::npos);
  EXPECT_NE(ncclSupport(22702).summary.find("not the process's first"), std::string::npos);
  EXPECT_NE(ncclSupport(22605).summary.find("not the process's first"), std::string::npos);
  EXPECT_NE(ncclSupport(22907).summary.find("with the communicator's id"), std::string::npos);
}

TEST(NcclSupport, AReleaseNewerThanAnyKnownIsSaidToBe) {
  EXPECT_TRUE(ncclSupport(23206).knownRelease);
  EXPECT_FALSE(ncclSupport(23301).knownRelease);
  EXPECT_NE(ncclSupport(23301).summary.find("newer than"), std::string::npos);
  EXPECT_EQ(ncclSupport(23301).tunerVersion, 7);
}

}  // namespace

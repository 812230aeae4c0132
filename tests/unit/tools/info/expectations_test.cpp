// SPDX-License-Identifier: Apache-2.0
// What symmem-info says to expect against NCCL (tools/info/expectations.h): the published figures of the
// nearest boxes by link class and world size, each with its source, and the arithmetic per decode step.
#include "tools/info/expectations.h"

#include <gtest/gtest.h>

#include <string>

namespace symmem {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Expectations, EveryFigureHasASourceAndTwoTimes) {
  for (const PublishedFigure& f : publishedFigures()) {
    EXPECT_NE(f.link, LinkClass::Unknown);
    EXPECT_GE(f.ranks, 2);
    EXPECT_GT(f.bytes, 0u);
    EXPECT_GT(f.ncclUs, 0);
    EXPECT_GT(f.kernelUs, 0);
    EXPECT_NE(std::string(f.source), "");
  }
}

TEST(Expectations, TheFiguresOfTheLinkAndTheNearestWorldSize) {
  for (const PublishedFigure& f : figuresFor(LinkClass::PcieCrossSocket, 8)) EXPECT_EQ(f.ranks, 8);
  EXPECT_EQ(figuresFor(LinkClass::PcieCrossSocket, 8).size(), 6u) << "the two-socket RTX PRO 6000 box and the A800s";
  const auto six = figuresFor(LinkClass::PcieSameSwitch, 6);
  ASSERT_FALSE(six.empty());
  EXPECT_EQ(six.front().ranks, 8) << "4 and 8 are as near: the larger";
  EXPECT_EQ(figuresFor(LinkClass::PcieSameSwitch, 2).front().ranks, 4);
  EXPECT_TRUE(figuresFor(LinkClass::Unknown, 8).empty());
}

TEST(Expectations, TheTimePerDecodeStepWhereTheKernelWinsAndWhereItLoses) {
  const std::string text = expectationText(LinkClass::PcieSameSwitch, 8, 120);
  // 120 x (24.2 - 9.2) us = 1.80 ms; 120 x (24.1 - 25.9) us = -0.216 ms.
  EXPECT_TRUE(has(text, "     8KiB: NCCL  24.20 us, one-shot (custom)   9.20 us: 2.63x, 1.80 ms less per step of 120"))
      << text;
  EXPECT_TRUE(has(text, "    64KiB: NCCL  24.10 us, one-shot (custom)  25.90 us: 0.93x, 0.22 ms more per step of 120"))
      << text;
  EXPECT_TRUE(has(text, "8x RTX PRO 6000 Max-Q, three PCIe switches, one CPU (local-inference-lab/rtx6kpro")) << text;
  EXPECT_TRUE(has(text, "not measured by this project")) << text;
  EXPECT_TRUE(has(text, "symmem-stat --estimate FILE")) << text;
  const std::string nvlink = expectationText(LinkClass::NvLink, 2, 120);
  EXPECT_TRUE(has(nvlink, "(measured by this project, docs/kernels.md")) << nvlink;
  EXPECT_FALSE(has(nvlink, "not measured by this project")) << nvlink;
  EXPECT_TRUE(
      has(expectationText(LinkClass::NvLink, 8, 120), "the nearest world size published on this link: 2 ranks, not 8"));
  EXPECT_TRUE(has(expectationText(LinkClass::Unknown, 8, 120), "nothing published for this link class"));
}

}  // namespace
}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
// Matrix headers of any width: the parsers refuse more devices than any node has, by name, before
// doing work that grows with the width.
#include <gtest/gtest.h>

#include <string>

#include "topology/matrix_tokens.h"
#include "topology/topology_file.h"

namespace symmem {
namespace {

// "\tGPU0\tGPU1...\tGPU<n-1>\tCPU Affinity\n" plus one row, so that only the header can be at fault.
std::string topoHeader(int columns) {
  std::string text;
  for (int c = 0; c < columns; ++c) text += "\tGPU" + std::to_string(c);
  text += "\tCPU Affinity\nGPU0\t X \n";
  return text;
}

std::string p2pHeader(int columns) {
  std::string text;
  for (int c = 0; c < columns; ++c) text += "\tGPU" + std::to_string(c);
  return text + "\nGPU0\tX\n";
}

std::string errorOf(const Expected<Topology>& t) { return t.ok() ? "(parsed)" : t.error(); }

TEST(TopologyMatrixLimits, AHundredThousandColumnsAreRefusedByName) {
  const auto t = parseTopoMatrix(topoHeader(100000), "wide.txt");
  EXPECT_EQ(errorOf(t), "wide.txt:1: the header has 100000 device columns; at most " +
                            std::to_string(kMaxMatrixColumns) + " (GPUs and NICs) are read");
}

TEST(TopologyMatrixLimits, TheLimitItselfIsAccepted) {
  // At the limit the header passes; what fails is the missing second row.
  const auto atLimit = parseTopoMatrix(topoHeader(kMaxMatrixColumns), "wide.txt");
  EXPECT_NE(errorOf(atLimit).find("expected"), std::string::npos) << errorOf(atLimit);
  EXPECT_EQ(errorOf(atLimit).find("device columns"), std::string::npos) << errorOf(atLimit);
  const auto over = parseTopoMatrix(topoHeader(kMaxMatrixColumns + 1), "wide.txt");
  EXPECT_NE(errorOf(over).find("device columns; at most"), std::string::npos) << errorOf(over);
}

TEST(TopologyMatrixLimits, DuplicateColumnsAreStillFoundAnywhere) {
  std::string text;
  for (int c = 0; c < 1000; ++c) text += "\tGPU" + std::to_string(c);
  text += "\tGPU17\tCPU Affinity\n";
  EXPECT_EQ(errorOf(parseTopoMatrix(text, "dup.txt")), "dup.txt:1: column 'GPU17' appears twice in the header");
  EXPECT_EQ(errorOf(parseTopoMatrix("\tGPU0\tNIC0\tNIC0\tCPU Affinity\n", "dup.txt")),
            "dup.txt:1: column 'NIC0' appears twice in the header");
}

TEST(TopologyMatrixLimits, P2pMatrixHeaderIsBoundedToo) {
  const auto m = parseP2pMatrix(p2pHeader(100000), "wide-p2p.txt");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), "wide-p2p.txt:1: the header has 100000 GPU columns; at most " +
                           std::to_string(kMaxMatrixColumns) + " are read");
}

}  // namespace
}  // namespace symmem

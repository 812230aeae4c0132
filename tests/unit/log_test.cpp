// SPDX-License-Identifier: Apache-2.0
// Messages of any length reach the logger whole.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/log.h"

namespace symmem {
namespace {

TEST(Log, LongMessagesAreNotCut) {
  std::vector<std::string> seen;
  setLogSinkForTesting([&](LogLevel, const std::string& text) { seen.push_back(text); });
  const std::string path(3000, 'p');
  SYMMEM_WARN("%s: cannot open the table file (%d)", path.c_str(), 7);
  SYMMEM_WARN_ONCE("log-test-long", "%s", std::string(5000, 'q').c_str());
  setLogSinkForTesting({});
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], path + ": cannot open the table file (7)");
  EXPECT_EQ(seen[1], std::string(5000, 'q'));
}

}  // namespace
}  // namespace symmem

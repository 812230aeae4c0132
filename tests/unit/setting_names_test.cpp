// SPDX-License-Identifier: Apache-2.0
// Environment variables that look like settings but are none: each is named once, with the nearest
// registered setting.
#include "core/setting_names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace symmem {
namespace {

bool anyHas(const std::vector<std::string>& lines, const std::string& s) {
  for (const std::string& l : lines)
    if (l.find(s) != std::string::npos) return true;
  return false;
}

TEST(SettingNames, TyposAreNamedWithTheNearestSetting) {
  const std::vector<std::string> w =
      unknownSettingWarnings({"SYMMEM_ENABLED=0", "SYMEM_ENABLE=0", "SYMMEM_TIMEOUT=5", "PATH=/usr/bin"});
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NE(w[0].find("SYMMEM_ENABLED is not a setting; did you mean SYMMEM_ENABLE?"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("SYMEM_ENABLE is not a setting; did you mean SYMMEM_ENABLE?"), std::string::npos) << w[1];
  EXPECT_NE(w[2].find("SYMMEM_TIMEOUT is not a setting; did you mean SYMMEM_TIMEOUT_MS?"), std::string::npos) << w[2];
  EXPECT_TRUE(anyHas(w, "symmem-info --env")) << w[0];
}

TEST(SettingNames, KnownAndUnrelatedNamesAreQuiet) {
  EXPECT_TRUE(unknownSettingWarnings({"SYMMEM_ENABLE=1", "SYMMEM_TIMEOUT_MS=5", "SYMMEM_CC", "HOME=/root",
                                      "NCCL_DEBUG=INFO", "SYSTEMD_EXEC_PID=3", "SYMMEM_GPU_TESTS_LIGHT=1", "=odd", ""})
                  .empty());
}

TEST(SettingNames, FarOffNamesGetTheListInstead) {
  const std::vector<std::string> w = unknownSettingWarnings({"SYMMEM_COMPLETELY_DIFFERENT_THING=1", "symmem_enable=0"});
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("SYMMEM_COMPLETELY_DIFFERENT_THING is not a setting"), std::string::npos) << w[0];
  EXPECT_EQ(w[0].find("did you mean"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("symmem_enable is not a setting; did you mean SYMMEM_ENABLE?"), std::string::npos) << w[1];
}

TEST(SettingNames, EnvironStyleArray) {
  const char* env[] = {"SYMEM_ENABLE=0", "HOME=/", nullptr};
  EXPECT_EQ(unknownSettingWarnings(env).size(), 1u);
  EXPECT_TRUE(unknownSettingWarnings(static_cast<const char* const*>(nullptr)).empty());
}

TEST(SettingNames, EditDistance) {
  EXPECT_EQ(editDistance("SYMMEM_ENABLE", "SYMMEM_ENABLE"), 0u);
  EXPECT_EQ(editDistance("SYMEM_ENABLE", "SYMMEM_ENABLE"), 1u);
  EXPECT_EQ(editDistance("SYMMEM_TIMEOUT", "SYMMEM_TIMEOUT_MS"), 3u);
  EXPECT_EQ(editDistance("", "abc"), 3u);
}

}  // namespace
}  // namespace symmem

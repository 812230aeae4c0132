// SPDX-License-Identifier: Apache-2.0
// One capability parser for the table file, SYMMEM_CC and --cc: "12" is 12.0, never 1.2, and
// anything malformed is refused with the value named.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/capability.h"
#include "core/settings.h"
#include "core/table_file.h"

namespace symmem {
namespace {

TEST(CapabilityStrict, AMajorAloneIsThatMajor) {
  EXPECT_EQ(parseCapability("12"), (ComputeCapability{12, 0}));
  EXPECT_EQ(parseCapability("10"), (ComputeCapability{10, 0}));
  EXPECT_EQ(parseCapability("9"), (ComputeCapability{9, 0}));
  EXPECT_EQ(parseCapability("8.6"), (ComputeCapability{8, 6}));
  EXPECT_EQ(parseCapability("sm_86"), (ComputeCapability{8, 6}));
  EXPECT_EQ(parseCapability("sm_100"), (ComputeCapability{10, 0}));
}

TEST(CapabilityStrict, MalformedIsRefused) {
  for (const char* bad :
       {"12.-0", "-12",    "+12",    "12.+0", "-1.0",    "12.0x", "12x", " 12", "12 ", "1e1", "0x10", "12.0.0", ".5",
        "sm_",   "sm_-90", "sm_+90", "sm_9",  "sm_1200", "120",   "90",  "86",  "0",   "00",  "1.2.", "12,0"})
    EXPECT_FALSE(parseCapability(bad)) << "'" << bad << "' was read as " << parseCapability(bad)->str();
}

TEST(CapabilityStrict, TableFileReadsAMajorAloneAndNamesTheBadLine) {
  TableFileResult ok =
      parseTableText("symmem-table 1\nentry cc=12 link=nvlink ranks=2 oneshot=1K twoshot=0\n", "t.txt");
  ASSERT_TRUE(ok.ok()) << ok.error;
  EXPECT_EQ(ok.entries.at(0).cc, (ComputeCapability{12, 0}));
  TableFileResult bad =
      parseTableText("symmem-table 1\nentry cc=12.-0 link=nvlink ranks=2 oneshot=1K twoshot=0\n", "t.txt");
  EXPECT_NE(bad.error.find("t.txt:2: bad compute capability '12.-0'"), std::string::npos) << bad.error;
}

TEST(CapabilityStrict, SettingReadsAMajorAloneAndNamesTheBadValue) {
  auto load = [](const char* value, std::vector<std::string>* problems) {
    return Settings::load([value](const char* name) { return std::string(name) == "SYMMEM_CC" ? value : nullptr; },
                          problems);
  };
  std::vector<std::string> problems;
  EXPECT_EQ(load("12", &problems).text(SettingId::Capability), "12.0");
  EXPECT_EQ(load("10", &problems).text(SettingId::Capability), "10.0");
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(load("12.-0", &problems).text(SettingId::Capability), "");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("SYMMEM_CC='12.-0'"), std::string::npos) << problems[0];
}

}  // namespace
}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "core/settings.h"

namespace symmem {
namespace {

Settings loadWith(const std::map<std::string, std::string>& env, std::vector<std::string>* problems) {
  return Settings::load(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      problems);
}

TEST(Settings, DefaultsWhenUnset) {
  std::vector<std::string> problems;
  Settings s = loadWith({}, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_TRUE(s.flag(SettingId::Enable));
  EXPECT_TRUE(s.flag(SettingId::Symmetric));
  EXPECT_TRUE(s.flag(SettingId::Tuner));
  EXPECT_TRUE(s.flag(SettingId::Attach));
  EXPECT_EQ(s.integer(SettingId::TimeoutMs), 600000);
  EXPECT_EQ(s.text(SettingId::ForcePath), "auto");
  EXPECT_EQ(s.text(SettingId::Table), "");
  EXPECT_EQ(s.value(SettingId::Enable).source, SettingSource::Default);
}

TEST(Settings, EverySpecHasNameMeaningAndValidDefault) {
  std::vector<std::string> problems;
  std::map<std::string, std::string> env;
  for (const SettingSpec& spec : settingSpecs()) {
    EXPECT_TRUE(std::string(spec.name).starts_with("SYMMEM_")) << spec.name;
    EXPECT_GT(std::string(spec.meaning).size(), 10u) << spec.name;
    env[spec.name] = spec.defaultValue;  // the default, given explicitly, must parse
  }
  loadWith(env, &problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
}

struct BoolCase {
  const char* text;
  bool valid;
  bool value;
};

TEST(Settings, BoolParsingIsStrict) {
  const BoolCase cases[] = {{"1", true, true},
                            {"0", true, false},
                            {"true", true, true},
                            {"FALSE", true, false},
                            {"yes", true, true},
                            {"No", true, false},
                            {"on", true, true},
                            {"off", true, false},
                            {" 1 ", true, true},
                            {"2", false, false},
                            {"", false, false},
                            {"enable", false, false},
                            {"yes please", false, false},
                            {"-1", false, false}};
  for (const BoolCase& c : cases) {
    std::vector<std::string> problems;
    Settings s = loadWith({{"SYMMEM_SYMMETRIC", c.text}}, &problems);
    if (c.valid) {
      EXPECT_TRUE(problems.empty()) << c.text;
      EXPECT_EQ(s.flag(SettingId::Symmetric), c.value) << c.text;
      EXPECT_EQ(s.value(SettingId::Symmetric).source, SettingSource::Environment);
    } else {
      ASSERT_EQ(problems.size(), 1u) << c.text;
      EXPECT_NE(problems[0].find("SYMMEM_SYMMETRIC"), std::string::npos);
      EXPECT_NE(problems[0].find(std::string("'") + c.text + "'"), std::string::npos) << problems[0];
      EXPECT_TRUE(s.flag(SettingId::Symmetric)) << "default must be used for '" << c.text << "'";
      EXPECT_EQ(s.value(SettingId::Symmetric).source, SettingSource::InvalidUsedDefault);
    }
  }
}

TEST(Settings, IntegerRangeAndSyntax) {
  std::vector<std::string> problems;
  EXPECT_EQ(loadWith({{"SYMMEM_TIMEOUT_MS", "250"}}, &problems).integer(SettingId::TimeoutMs), 250);
  EXPECT_EQ(loadWith({{"SYMMEM_TIMEOUT_MS", "1"}}, &problems).integer(SettingId::TimeoutMs), 1);
  EXPECT_EQ(loadWith({{"SYMMEM_TIMEOUT_MS", "86400000"}}, &problems).integer(SettingId::TimeoutMs), 86400000);
  EXPECT_TRUE(problems.empty());
  for (const char* bad : {"0", "-5", "86400001", "10s", "1e3", "", "abc", "99999999999999999999"}) {
    problems.clear();
    Settings s = loadWith({{"SYMMEM_TIMEOUT_MS", bad}}, &problems);
    EXPECT_EQ(s.integer(SettingId::TimeoutMs), 600000) << bad;
    ASSERT_EQ(problems.size(), 1u) << bad;
    EXPECT_NE(problems[0].find("SYMMEM_TIMEOUT_MS"), std::string::npos);
  }
}

TEST(Settings, ChoiceIsCaseInsensitiveAndChecked) {
  std::vector<std::string> problems;
  EXPECT_EQ(loadWith({{"SYMMEM_FORCE_PATH", "OneShot"}}, &problems).text(SettingId::ForcePath), "oneshot");
  EXPECT_EQ(loadWith({{"SYMMEM_FORCE_PATH", "nccl"}}, &problems).text(SettingId::ForcePath), "nccl");
  EXPECT_EQ(loadWith({{"SYMMEM_LOG", "trace"}}, &problems).text(SettingId::LogDetail), "trace");
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(loadWith({{"SYMMEM_FORCE_PATH", "threeshot"}}, &problems).text(SettingId::ForcePath), "auto");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("threeshot"), std::string::npos);
}

TEST(Settings, CapabilityOverride) {
  std::vector<std::string> problems;
  EXPECT_EQ(loadWith({{"SYMMEM_CC", "12.0"}}, &problems).text(SettingId::Capability), "12.0");
  EXPECT_EQ(loadWith({{"SYMMEM_CC", "sm_90"}}, &problems).text(SettingId::Capability), "9.0");
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(loadWith({{"SYMMEM_CC", "twelve"}}, &problems).text(SettingId::Capability), "");
  EXPECT_EQ(problems.size(), 1u);
}

TEST(Settings, PathsAreKeptVerbatim) {
  std::vector<std::string> problems;
  Settings s = loadWith({{"SYMMEM_TABLE", "/opt/tables/my table.txt"}}, &problems);
  EXPECT_EQ(s.text(SettingId::Table), "/opt/tables/my table.txt");
  EXPECT_TRUE(problems.empty());
}

// docs/settings.md must carry exactly the table the registry prints (symmem-info --env).
TEST(Settings, DocsMatchRegistry) {
  std::ifstream in(std::string(SYMMEM_DOCS_DIR) + "/settings.md");
  ASSERT_TRUE(in) << "docs/settings.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find(settingsMarkdownTable()), std::string::npos)
      << "docs/settings.md is out of date: paste the output of `symmem-info --env` into it";
}

}  // namespace
}  // namespace symmem

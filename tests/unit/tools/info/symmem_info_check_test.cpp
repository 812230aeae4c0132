// SPDX-License-Identifier: Apache-2.0
// symmem-info --check on settings that leave the plugin without a part: a SYMMEM_DISASSEMBLER that
// cannot be loaded, or that is no Zydis library, is a problem (exit 1); a table file that cannot be
// opened is named with the reason.
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/tool_run.h"

namespace symmem {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

testing::ToolRun check(const std::string& env) {
  return testing::runTool("env -u SYMMEM_TABLE -u SYMMEM_TOPO_FILE -u SYMMEM_DISASSEMBLER " + env + " '" +
                          SYMMEM_INFO_PATH + "' --check");
}

TEST(SymmemInfoCheck, ADisassemblerThatCannotBeLoadedIsAProblem) {
  const testing::ToolRun junk = check("SYMMEM_DISASSEMBLER=junk");
  EXPECT_EQ(junk.exitCode, 1) << junk.out;
  EXPECT_TRUE(has(junk.out, "problem: SYMMEM_DISASSEMBLER='junk' cannot be loaded: ")) << junk.out;
  const testing::ToolRun notZydis = check("SYMMEM_DISASSEMBLER=libm.so.6");
  EXPECT_EQ(notZydis.exitCode, 1) << notZydis.out;
  EXPECT_TRUE(has(notZydis.out, "SYMMEM_DISASSEMBLER='libm.so.6' is not a Zydis library")) << notZydis.out;
  EXPECT_EQ(check("").exitCode, 0) << "unset: the built-in choice";
}

TEST(SymmemInfoCheck, ATableThatCannotBeOpenedIsNamedWithTheReason) {
  const testing::ToolRun r = check("SYMMEM_TABLE=/nonexistent/table.txt");
  EXPECT_EQ(r.exitCode, 1) << r.out;
  EXPECT_TRUE(has(r.out, "/nonexistent/table.txt: cannot open the table file: No such file or directory")) << r.out;
}

// symmem-info asks for the table in force more than once; the bad file is warned about once.
TEST(SymmemInfoCheck, ABadTableIsWarnedAboutOnce) {
  const testing::ToolRun r = testing::runTool(
      std::string("env -u SYMMEM_TOPO_FILE SYMMEM_TABLE=/nonexistent/table.txt '") + SYMMEM_INFO_PATH + "'");
  const std::string warning = "/nonexistent/table.txt: cannot open the table file: No such file or directory; using";
  const size_t first = r.out.find(warning);
  ASSERT_NE(first, std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(warning, first + 1), std::string::npos) << r.out;
}

}  // namespace
}  // namespace symmem

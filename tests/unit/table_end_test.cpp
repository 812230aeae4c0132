// SPDX-License-Identifier: Apache-2.0
// The table file's end line: what symmem-tune writes (format 2) ends with `end`, and a format-2 file
// cut short at a line boundary is refused instead of read as a smaller table; a format-1 file (written
// before end lines) still reads, with one note for the log's INFO level. symmem-tune's writes go to a
// temporary name renamed into place, and two spellings of one file are seen as one.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/decision_table.h"
#include "core/table_file.h"
#include "tests/unit/temp_file.h"
#include "tests/unit/tool_run.h"
#include "tools/common/output_file.h"

namespace symmem {
namespace {

namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Thresholds anEntry(int nRanks) {
  Thresholds t;
  t.cc = {9, 0};
  t.link = LinkClass::NvLink;
  t.nRanks = nRanks;
  setPushLimits(t, 64 << 10, 1 << 20);
  return t;
}

TEST(TableFileEnd, WhatIsWrittenEndsWithTheEndLineAndReadsBack) {
  const std::string text = formatTable({anEntry(2), anEntry(4)}, {"stand-in"});
  EXPECT_TRUE(text.starts_with("symmem-table 2\n")) << text;
  EXPECT_TRUE(text.ends_with("\nend\n")) << text;
  const TableFileResult r = parseTableText(text, "t.txt");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.entries.size(), 2u);
  EXPECT_TRUE(r.notes.empty());
}

TEST(TableFileEnd, AFileCutShortAtALineBoundaryIsRefused) {
  const std::string text = formatTable({anEntry(2), anEntry(4)}, {"stand-in"});
  // Every cut at the end of a line before the end line.
  for (size_t eol = text.find('\n'); eol + 1 < text.size(); eol = text.find('\n', eol + 1)) {
    const TableFileResult r = parseTableText(text.substr(0, eol + 1), "t.txt");
    EXPECT_FALSE(r.ok()) << "read as whole when cut after byte " << eol + 1;
    if (eol > 20) EXPECT_TRUE(has(r.error, "no end line: the file is cut short")) << r.error;
  }
  EXPECT_EQ(parseTableText(text + "entry cc=9.0 link=nvlink ranks=8 oneshot=1K twoshot=0\n", "t.txt").error,
            "t.txt:6: 'entry' after the end line (the end line is the file's last)");
  EXPECT_TRUE(parseTableText(text + "\n# a comment\n", "t.txt").ok());
  EXPECT_EQ(parseTableText("symmem-table 2\nend now\n", "t.txt").error,
            "t.txt:2: the end line is the word 'end' alone");
}

TEST(TableFileEnd, AFormatOneFileStillReadsWithOneNote) {
  const TableFileResult r =
      parseTableText("symmem-table 1\nentry cc=9.0 link=nvlink ranks=2 oneshot=512KiB twoshot=8MiB\n", "old.txt");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.entries.size(), 1u);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_TRUE(has(r.notes[0], "old.txt: format 1, without an end line")) << r.notes[0];
  EXPECT_TRUE(parseTableText("symmem-table 1\nend\n", "t.txt").notes.empty());
  EXPECT_EQ(parseTableText("symmem-table 3\n", "t.txt").error,
            "t.txt:1: unsupported table format version '3' (this build reads 1 and 2)");
}

TEST(TableFileEnd, WordsFromTheFileAreEscapedInErrors) {
  const TableFileResult r =
      parseTableText("symmem-table 2\nentry cc=\x1b[31m link=nvlink ranks=2 oneshot=1K twoshot=0\n", "t.txt");
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(has(r.error, "\x1b")) << r.error;
  EXPECT_TRUE(has(r.error, "\\x1b[31m")) << r.error;
}

// A folder of its own per test, named for this file.
struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("symmem-output-test") {}
};

TEST(TuneOutput, FilesAreWrittenByRenameAndLinksToThemAreReplacedNotFollowed) {
  TempDir t;
  const std::string table = t.path() + "/table.txt";
  std::ofstream(table) << "old\n";
  struct stat old {};
  ASSERT_EQ(stat(table.c_str(), &old), 0);
  // A second name of the old file keeps it: a rename gives the name a new file.
  fs::create_hard_link(table, t.path() + "/kept.txt");
  EXPECT_EQ(writeFileByRename(table, "symmem-table 2\nend\n"), "");
  std::ifstream in(table);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), "symmem-table 2\nend\n");
  struct stat now {};
  stat(table.c_str(), &now);
  EXPECT_NE(now.st_ino, old.st_ino) << "written in place, not by rename";
  EXPECT_EQ(std::distance(fs::directory_iterator(t.path()), fs::directory_iterator()), 2) << "a temporary file left";
  EXPECT_NE(writeFileByRename(t.path() + "/no/such/dir/x.txt", "x"), "");
}

TEST(TuneOutput, TwoSpellingsOfOneFileAreOneFile) {
  TempDir t;
  const std::string cwd = fs::current_path().string();
  fs::current_path(t.path());
  EXPECT_TRUE(sameOutputFile("./x.txt", "x.txt"));
  fs::create_directory("d");
  EXPECT_TRUE(sameOutputFile("d/../x.txt", "x.txt"));
  EXPECT_FALSE(sameOutputFile("x.txt", "y.txt"));
  std::ofstream("x.txt") << "1";
  fs::create_symlink("x.txt", "link.txt");
  EXPECT_TRUE(sameOutputFile("link.txt", "./x.txt"));
  EXPECT_TRUE(sameOutputFile(t.path() + "/x.txt", "x.txt"));
  std::ofstream("y.txt") << "2";
  EXPECT_FALSE(sameOutputFile("x.txt", "y.txt"));
  fs::current_path(cwd);
}

TEST(TuneOutput, SymmemTuneRefusesOneFileForTableAndCsv) {
  TempDir t;
  const testing::ToolRun r = testing::runTool("cd '" + t.path() + "' && env -u SYMMEM_TOPO_FILE '" + SYMMEM_TUNE_PATH +
                                              "' --out ./x.txt --csv x.txt");
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_TRUE(has(r.out, "symmem-tune: --csv x.txt and --out ./x.txt are the same file")) << r.out;
}

}  // namespace
}  // namespace symmem

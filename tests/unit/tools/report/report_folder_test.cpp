// SPDX-License-Identifier: Apache-2.0
// symmem-report's folder, held open: a swap of its staging folder for a link to another directory
// (what a user who can write the folder could do while the tools run) sends no write there and
// removes nothing there; writes never follow a link; a folder another user owns or can write is
// refused, also when the report runs as another user; the cleanup a signal handler calls leaves no
// staging behind.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/unit/forked_check.h"
#include "tests/unit/temp_file.h"
#include "tools/report/folder.h"

namespace symmem::report {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

// A folder of its own per test, named for this file.
struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("symmem-folder-test") {}
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What a tool does with the path it is given: creates the file and writes it.
bool writeAsATool(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

TEST(ReportFolder, AStagingFolderSwappedForALinkSendsNoWriteThroughIt) {
  TempDir t;
  const std::string out = t.path() + "/r", victim = t.path() + "/victim";
  fs::create_directory(victim);
  std::ofstream(victim + "/precious.txt") << "keep me\n";
  ReportFolder folder;
  std::string error;
  ASSERT_TRUE(folder.open(out, error)) << error;
  // The swap: .staging moved away, a link to the victim directory in its place.
  fs::rename(out + "/.staging", out + "/moved");
  fs::create_directory_symlink(victim, out + "/.staging");

  ASSERT_TRUE(writeAsATool(folder.stagedPath("health.csv"), "record,gpu_a,gpu_b,field,value\n"));
  EXPECT_FALSE(fs::exists(victim + "/health.csv")) << "the tool wrote through the swapped-in link";
  EXPECT_TRUE(fs::exists(out + "/moved/health.csv")) << "the tool writes into the staging folder it was given";
  std::string text;
  ASSERT_TRUE(folder.readStaged("health.csv", 1 << 20, text, error)) << error;
  EXPECT_EQ(text, "record,gpu_a,gpu_b,field,value\n");

  folder.removeStaging();
  EXPECT_EQ(readFile(victim + "/precious.txt"), "keep me\n") << "the cleanup removed a file of another directory";
  EXPECT_TRUE(fs::is_symlink(out + "/.staging")) << "what was swapped in is left alone";
  EXPECT_FALSE(fs::exists(out + "/moved/health.csv")) << "what the tools left is removed wherever it was moved";
}

TEST(ReportFolder, ARenamedFolderStillReceivesTheWrites) {
  TempDir t;
  ReportFolder folder;
  std::string error;
  ASSERT_TRUE(folder.open(t.path() + "/r", error)) << error;
  fs::rename(t.path() + "/r", t.path() + "/elsewhere");
  fs::create_directory(t.path() + "/r");
  EXPECT_EQ(folder.writeNew("report.md", "# report\n"), "");
  EXPECT_TRUE(fs::exists(t.path() + "/elsewhere/report.md"));
  EXPECT_FALSE(fs::exists(t.path() + "/r/report.md"));
}

TEST(ReportFolder, WritesNeverFollowALinkNorReplaceAFile) {
  TempDir t;
  ReportFolder folder;
  std::string error;
  ASSERT_TRUE(folder.open(t.path() + "/r", error)) << error;
  fs::create_symlink(t.path() + "/outside.md", t.path() + "/r/report.md");  // dangling
  EXPECT_NE(folder.writeNew("report.md", "x"), "");
  EXPECT_FALSE(fs::exists(t.path() + "/outside.md"));
  EXPECT_EQ(folder.writeNew("topology.txt", "one\n"), "");
  EXPECT_NE(folder.writeNew("topology.txt", "two\n"), "");
  EXPECT_EQ(readFile(t.path() + "/r/topology.txt"), "one\n");
  EXPECT_NE(folder.writeNew("../escape.txt", "x"), "") << "a name with a separator is refused";
  EXPECT_FALSE(fs::exists(t.path() + "/escape.txt"));
  // A link among the tools' outputs is not read through.
  fs::create_symlink("/etc/hostname", t.path() + "/r/.staging/table.txt");
  std::string text;
  EXPECT_FALSE(folder.readStaged("table.txt", 1 << 20, text, error));
  EXPECT_NE(error, "");
  // The listing holds regular files only.
  const auto files = folder.files();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].name, "topology.txt");
  EXPECT_EQ(files[0].bytes, 4u);
}

TEST(ReportFolder, RefusesALinkAFileAndAFolderThatIsNotEmpty) {
  TempDir t;
  std::string error;
  fs::create_directory(t.path() + "/real");
  fs::create_directory_symlink(t.path() + "/real", t.path() + "/link");
  EXPECT_FALSE(ReportFolder().open(t.path() + "/link", error));
  EXPECT_NE(error.find("is a symbolic link"), std::string::npos) << error;
  std::ofstream(t.path() + "/file") << "x";
  EXPECT_FALSE(ReportFolder().open(t.path() + "/file", error));
  EXPECT_NE(error.find("is not a folder"), std::string::npos) << error;
  std::ofstream(t.path() + "/real/notes.txt") << "mine\n";
  EXPECT_FALSE(ReportFolder().open(t.path() + "/real", error));
  EXPECT_NE(error.find("is not empty"), std::string::npos) << error;
  EXPECT_FALSE(ReportFolder().open(t.path() + "/no/such/parent", error));
}

TEST(ReportFolder, RefusesAFolderOthersCanWrite) {
  EXPECT_EQ(foreignFolderProblem(1000, 0755, 1000), "");
  EXPECT_EQ(foreignFolderProblem(1000, 0700, 1000), "");
  EXPECT_NE(foreignFolderProblem(1000, 0775, 1000).find("can be written by other users (mode 0775)"),
            std::string::npos);
  EXPECT_NE(foreignFolderProblem(1000, 01777, 1000).find("mode 1777"), std::string::npos);
  EXPECT_NE(foreignFolderProblem(0, 0755, 1000).find("owned by another user (uid 0)"), std::string::npos);
  EXPECT_NE(foreignFolderProblem(kNobody, 0700, 0).find("owned by another user"), std::string::npos);

  TempDir t;
  const std::string shared = t.path() + "/shared";
  fs::create_directory(shared);
  chmod(shared.c_str(), 0777);
  std::string error;
  EXPECT_FALSE(ReportFolder().open(shared, error));
  EXPECT_NE(error.find("can be written by other users"), std::string::npos) << error;
  EXPECT_TRUE(fs::is_empty(shared)) << "nothing is written into a refused folder";
}

TEST(ReportFolder, AsRootRefusesAFolderAnotherUserOwns) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to give a folder to another user (uid " << kNobody << ")";
  TempDir t;
  const std::string theirs = t.path() + "/theirs";
  fs::create_directory(theirs);
  ASSERT_EQ(chown(theirs.c_str(), kNobody, kNobody), 0);
  std::string error;
  EXPECT_FALSE(ReportFolder().open(theirs, error));
  EXPECT_NE(error.find("owned by another user (uid 65534)"), std::string::npos) << error;
  EXPECT_TRUE(fs::is_empty(theirs));
}

TEST(ReportFolder, AsAnotherUserRefusesAFolderItCouldBeTrickedInto) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to run a child as another user (uid " << kNobody << ")";
  TempDir t;
  chmod(t.path().c_str(), 0755);
  const std::string rootsShared = t.path() + "/shared";  // root's, writable by everyone
  fs::create_directory(rootsShared);
  chmod(rootsShared.c_str(), 0777);
  const std::string report = testing::runForkedCheck([&]() -> std::string {
    if (setgid(kNobody) != 0 || setuid(kNobody) != 0) return "setuid to nobody failed";
    std::string error;
    if (ReportFolder().open(rootsShared, error)) return "a folder that root owns was taken by nobody";
    if (error.find("owned by another user (uid 0)") == std::string::npos) return "unexpected refusal: " + error;
    return "";
  });
  EXPECT_EQ(report, "");
  EXPECT_TRUE(fs::is_empty(rootsShared));
}

TEST(ReportFolder, TheSignalHandlersCleanupLeavesNoStaging) {
  TempDir t;
  ReportFolder folder;
  std::string error;
  ASSERT_TRUE(folder.open(t.path() + "/r", error)) << error;
  for (int i = 0; i < 300; ++i)  // more entries than one read of the directory returns
    ASSERT_TRUE(writeAsATool(folder.stagedPath("part-" + std::to_string(i) + ".csv"), "/home/jdoe\n"));
  folder.removeStagingNow();
  EXPECT_FALSE(fs::exists(t.path() + "/r/.staging"));
  folder.removeStaging();  // after the handler's cleanup: nothing left to do, and no complaint
  EXPECT_TRUE(fs::is_empty(t.path() + "/r"));
}

}  // namespace
}  // namespace symmem::report

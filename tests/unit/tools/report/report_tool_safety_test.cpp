// SPDX-License-Identifier: Apache-2.0
// The built symmem-report against what a careless or hostile user could do to its folder, with
// stand-in tools (SYMMEM_REPORT_TOOLS_DIR): the staging folder swapped for a link during the run, a
// folder other users can write, a second Ctrl-C while a tool runs, names joined to other words, and an
// --out with a space and a line break in it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "tests/unit/temp_file.h"
#include "tests/unit/tool_run.h"

namespace symmem::report {
namespace {

namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A folder of its own per test, named for this file.
struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("symmem-report-safety") {}
};

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every file under `dir` (links not followed), by path relative to it.
std::map<std::string, std::string> tree(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && !e.is_symlink()) files[fs::relative(e.path(), dir).string()] = readFile(e.path());
  return files;
}

void writeTool(const std::string& dir, const std::string& name, const std::string& script) {
  std::ofstream(dir + "/" + name) << "#!/bin/sh\n" << script;
  fs::permissions(dir + "/" + name, fs::perms::owner_all);
}

testing::ToolRun runReport(const std::string& cwd, const std::string& args, const std::string& env) {
  return testing::runTool("cd '" + cwd + "' && env -u SYMMEM_TOPO_FILE -u SYMMEM_TABLE " + env + " '" +
                          SYMMEM_REPORT_PATH + "' " + args);
}

const char* kQuietInfo = "echo 'this machine:'\n";

// A symmem-health that, once running, moves the staging folder away and puts a link to the victim
// directory in its place (as another user who can write the folder could), then writes its CSV.
const char* kSwappingHealth =
    "while [ $# -gt 0 ]; do case \"$1\" in --csv) csv=\"$2\"; shift;; esac; shift; done\n"
    "mv \"$SWAP_OUT/.staging\" \"$SWAP_OUT/moved\" && ln -s \"$SWAP_VICTIM\" \"$SWAP_OUT/.staging\"\n"
    "printf 'record,gpu_a,gpu_b,field,value\\npair,0,1,writeGBs,25\\n' > \"$csv\"\n"
    "echo 'pair 0->1 25 GB/s'\n";

TEST(ReportToolSafety, AStagingSwapDuringTheRunWritesAndRemovesNothingOutsideTheFolder) {
  TempDir t, tools;
  const std::string out = t.path() + "/r", victim = t.path() + "/victim";
  fs::create_directory(victim);
  std::ofstream(victim + "/precious.txt") << "keep me\n";
  writeTool(tools.path(), "symmem-info", kQuietInfo);
  writeTool(tools.path(), "symmem-health", kSwappingHealth);
  const testing::ToolRun r =
      runReport(t.path(), "--out r --no-tune",
                "SYMMEM_REPORT_TOOLS_DIR=" + tools.path() + " SWAP_OUT=" + out + " SWAP_VICTIM=" + victim);
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_EQ(tree(victim), (std::map<std::string, std::string>{{"precious.txt", "keep me\n"}}))
      << "the victim directory was written to or emptied:\n"
      << r.out;
  EXPECT_TRUE(has(r.out, ".staging was replaced during the run")) << r.out;
  // The CSV the tool wrote reached the report through the staging folder's handle.
  EXPECT_EQ(readFile(out + "/health.csv"), "record,gpu_a,gpu_b,field,value\npair,0,1,writeGBs,25\n");
  EXPECT_TRUE(fs::is_empty(out + "/moved")) << "the unredacted outputs are removed wherever they were moved";
}

TEST(ReportToolSafety, RefusesAFolderOtherUsersCanWrite) {
  TempDir t, tools;
  writeTool(tools.path(), "symmem-info", kQuietInfo);
  fs::create_directory(t.path() + "/shared");
  chmod((t.path() + "/shared").c_str(), 0777);
  const testing::ToolRun r = runReport(t.path(), "--out shared --no-tune", "SYMMEM_REPORT_TOOLS_DIR=" + tools.path());
  EXPECT_EQ(r.exitCode, 1) << r.out;
  EXPECT_TRUE(has(r.out, "symmem-report: shared can be written by other users (mode 0777)")) << r.out;
  EXPECT_TRUE(fs::is_empty(t.path() + "/shared"));
  if (geteuid() != 0) GTEST_SKIP() << "a folder of another user needs root to make";
  fs::create_directory(t.path() + "/theirs");
  ASSERT_EQ(chown((t.path() + "/theirs").c_str(), 65534, 65534), 0);
  const testing::ToolRun theirs =
      runReport(t.path(), "--out theirs --no-tune", "SYMMEM_REPORT_TOOLS_DIR=" + tools.path());
  EXPECT_EQ(theirs.exitCode, 1) << theirs.out;
  EXPECT_TRUE(has(theirs.out, "theirs is owned by another user (uid 65534)")) << theirs.out;
  EXPECT_TRUE(fs::is_empty(t.path() + "/theirs"));
}

TEST(ReportToolSafety, GpusTakesWhatHealthAndTuneTake) {
  TempDir t;
  const testing::ToolRun r = runReport(t.path(), "--gpus 0,64", "");
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_TRUE(fs::is_empty(t.path()));
}

// A symmem-health that writes its CSV (holding the home directory), then waits, with a child in a
// session of its own that holds its output open: after the first Ctrl-C kills the tool, symmem-report
// keeps reading that output for a few seconds, which is when the second Ctrl-C comes.
const char* kSlowHealth =
    "while [ $# -gt 0 ]; do case \"$1\" in --csv) csv=\"$2\"; shift;; esac; shift; done\n"
    "printf 'record,gpu_a,gpu_b,field,value\\nnode,,,topologySource,%s/capture.txt\\n' \"$HOME\" > \"$csv\"\n"
    "setsid sleep 30 &\n"
    "echo $! > \"$(dirname \"$0\")/holder.pid\"\n"
    "echo $$ > \"$(dirname \"$0\")/tool.pid\"\n"
    "sleep 300\n";

pid_t pidIn(const std::string& file) {
  std::ifstream in(file);
  int pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

bool gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = all.rfind(')');
  return all.empty() || (close != std::string::npos && close + 2 < all.size() && all[close + 2] == 'Z');
}

TEST(ReportToolSafety, ASecondCtrlCLeavesNoStagingBehind) {
  TempDir t, tools;
  writeTool(tools.path(), "symmem-info", kQuietInfo);
  writeTool(tools.path(), "symmem-health", kSlowHealth);
  const std::string out = t.path() + "/r", toolsDir = tools.path();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("SYMMEM_REPORT_TOOLS_DIR", toolsDir.c_str(), 1);
    if (freopen("/dev/null", "w", stderr) == nullptr) _exit(126);
    execl(SYMMEM_REPORT_PATH, SYMMEM_REPORT_PATH, "--out", out.c_str(), "--no-tune", nullptr);
    _exit(127);
  }
  for (int i = 0; i < 200 && pidIn(toolsDir + "/tool.pid") <= 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const pid_t tool = pidIn(toolsDir + "/tool.pid"), holder = pidIn(toolsDir + "/holder.pid");
  ASSERT_GT(tool, 0) << "the stand-in health check did not start";
  ASSERT_TRUE(fs::exists(out + "/.staging/health.csv"));
  kill(pid, SIGINT);
  // The first Ctrl-C has been acted on when the tool is gone; symmem-report still drains its output.
  for (int i = 0; i < 100 && !gone(tool); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(gone(tool));
  kill(pid, SIGINT);
  int status = 0;
  pid_t waited = 0;
  for (int i = 0; i < 400 && (waited = waitpid(pid, &status, WNOHANG)) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (holder > 0) kill(holder, SIGKILL);
  if (waited == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "symmem-report did not end after the second SIGINT";
  }
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << "the second Ctrl-C ends it at once";
  EXPECT_FALSE(fs::exists(out + "/.staging")) << "the staging folder, with unredacted outputs, survived";
  const char* home = std::getenv("HOME");
  for (const auto& [name, text] : tree(out))
    if (home != nullptr && std::string(home).size() > 1)
      EXPECT_FALSE(has(text, home)) << name << " holds the home directory:\n" << text;
}

// A symmem-info that prints names joined to other words, and a directory inside a longer word.
const char* kInfoWithJoinedNames =
    "echo 'this machine:'\n"
    "echo 'table: /scratch/jdoe7731-table.txt log: nccl.node17-zq.%p.log iface ib-jdoe7731'\n"
    "echo 'topology from /srv/node17-zq.topo.txt; tag xjdoe7731y, NODE17-ZQ7'\n";

TEST(ReportToolSafety, NamesJoinedToOtherWordsAreHiddenAndTheFolderIsChecked) {
  TempDir t, tools;
  writeTool(tools.path(), "symmem-info", kInfoWithJoinedNames);
  const testing::ToolRun r =
      runReport(t.path(), "--out r --no-tune",
                "SYMMEM_REPORT_TOOLS_DIR=" + tools.path() + " USER=jdoe7731 LOGNAME=jdoe7731 HOSTNAME=node17-zq");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  const auto files = tree(t.path() + "/r");
  for (const auto& [name, text] : files) {
    EXPECT_FALSE(has(text, "jdoe7731")) << name << ":\n" << text;
    EXPECT_FALSE(has(text, "node17-zq") || has(text, "NODE17-ZQ")) << name << ":\n" << text;
  }
  const std::string& topo = files.at("topology.txt");
  EXPECT_TRUE(has(topo, "<path>/<user>-table.txt log: nccl.<host>.%p.log iface ib-<user>")) << topo;
  EXPECT_TRUE(has(topo, "<path>/<host>.topo.txt")) << topo;
  EXPECT_TRUE(has(topo, "tag x<user>y, <host>7")) << topo;
  EXPECT_TRUE(has(files.at("report.md"),
                  "- Redaction, after the check of the finished folder:\n"
                  "  - topology.txt: the host name, the user name stood inside a longer word"))
      << files.at("report.md");
}

TEST(ReportToolSafety, AnOutWithASpaceAndALineBreakIsHidden) {
  TempDir t, tools;
  writeTool(tools.path(), "symmem-info", kQuietInfo);
  writeTool(tools.path(), "symmem-health",
            "while [ $# -gt 0 ]; do case \"$1\" in --csv) csv=\"$2\"; shift;; esac; shift; done\n"
            "echo \"the folder: $SYMMEM_TEST_OUT, csv $csv\"\n");
  const std::string out = t.path() + "/my reports\nfor jdoe";
  const std::string quoted = "\"$(printf '" + t.path() + "/my reports\\nfor jdoe')\"";
  const testing::ToolRun r = runReport(t.path(), "--out " + quoted + " --no-tune",
                                       "SYMMEM_REPORT_TOOLS_DIR=" + tools.path() + " SYMMEM_TEST_OUT=" + quoted);
  ASSERT_EQ(r.exitCode, 0) << r.out;
  const auto files = tree(out);
  ASSERT_TRUE(files.count("health.txt")) << r.out;
  EXPECT_EQ(files.at("health.txt"), "the folder: ., csv ./health.csv\n");
  for (const auto& [name, text] : files) {
    EXPECT_FALSE(has(text, "my reports")) << name << ":\n" << text;
    EXPECT_FALSE(has(text, t.path())) << name << ":\n" << text;
  }
}

}  // namespace
}  // namespace symmem::report

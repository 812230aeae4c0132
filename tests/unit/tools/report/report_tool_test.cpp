// SPDX-License-Identifier: Apache-2.0
// The built symmem-report, run the way a user runs it: on this machine (whatever GPUs it has), and
// against stand-in tools (SYMMEM_REPORT_TOOLS_DIR) that succeed, fail, write half their outputs, hang
// or go missing. Every run must write its folder, and no file in it may name this machine's host,
// user, home directory, or any absolute path outside the kept system locations.
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/stats_process.h"
#include "tests/unit/temp_file.h"
#include "tests/unit/tool_run.h"
#include "tools/report/redact.h"
#include "tools/report/text.h"

namespace symmem::report {
namespace {

namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A folder of its own per test, named for this file.
struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("symmem-report-test") {}
};

using ReportRun = testing::ToolRun;

// symmem-report in `cwd`, with `env` added ("NAME=value ..."); stdout and stderr together.
ReportRun runReport(const std::string& cwd, const std::string& args, const std::string& env = "") {
  return testing::runTool("cd '" + cwd + "' && env -u SYMMEM_REPORT_TOOLS_DIR -u SYMMEM_TOPO_FILE -u SYMMEM_TABLE " +
                          env + " '" + SYMMEM_REPORT_PATH + "' " + args);
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::map<std::string, std::string> folder(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    files[e.path().filename().string()] = readFile(e.path());
  return files;
}

void writeTool(const std::string& dir, const std::string& name, const std::string& script,
               fs::perms perms = fs::perms::owner_all) {
  std::ofstream(dir + "/" + name) << "#!/bin/sh\n" << script;
  fs::permissions(dir + "/" + name, perms);
}

bool wordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool pathChar(char c) { return wordChar(c) || std::string_view(".-+~%@#/").find(c) != std::string_view::npos; }

// Whether `name` stands in `text` as a whole token, as docs/report.md defines one ('.' and '-' join).
bool hasToken(const std::string& text, const std::string& name, bool anyCase) {
  std::string t = text, n = name;
  if (anyCase) {
    for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (size_t pos = t.find(n); pos != std::string::npos; pos = t.find(n, pos + 1)) {
    const size_t end = pos + n.size();
    const bool joinedBefore =
        pos > 0 &&
        (wordChar(t[pos - 1]) || ((t[pos - 1] == '.' || t[pos - 1] == '-') && pos > 1 && wordChar(t[pos - 2])));
    const bool joinedAfter =
        end < t.size() &&
        (wordChar(t[end]) || ((t[end] == '.' || t[end] == '-') && end + 1 < t.size() && wordChar(t[end + 1])));
    if (!joinedBefore && !joinedAfter) return true;
  }
  return false;
}

// Whether `name` stands where only an identity stands: a path component, either side of '@'.
bool hasIdentityUse(const std::string& text, const std::string& name) {
  for (const std::string& form : {"/" + name + "/", name + "@", "@" + name})
    if (has(text, form)) return true;
  const size_t at = text.find("/" + name);
  return at != std::string::npos && (at + name.size() + 1 == text.size() || !pathChar(text[at + name.size() + 1]));
}

// The absolute paths of `text` that are not under a kept system prefix.
std::vector<std::string> foreignPaths(const std::string& text) {
  std::vector<std::string> found;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '/' || (i > 0 && (pathChar(text[i - 1]) || text[i - 1] == '>'))) continue;
    if (i > 0 && text[i - 1] == ':' && i + 1 < text.size() && text[i + 1] == '/') {  // a URL
      while (i < text.size() && pathChar(text[i])) ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && pathChar(text[end])) ++end;
    const std::string p = text.substr(i, end - i);
    bool kept = p == "/";
    for (std::string_view prefix : keptPathPrefixes()) kept = kept || (p + "/").starts_with(prefix);
    if (!kept) found.push_back(p);
    i = end;
  }
  return found;
}

struct Me {
  std::vector<std::string> hosts, users, dirs;
};

Me me(const std::string& tempDir) {
  Me m;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0 && host[0] != '\0') {
    m.hosts.emplace_back(host);
    const std::string h(host);
    if (h.find('.') != std::string::npos) m.hosts.push_back(h.substr(0, h.find('.')));
  }
  if (const passwd* pw = getpwuid(getuid())) {
    m.users.emplace_back(pw->pw_name);
    if (std::string(pw->pw_dir).size() > 1) m.dirs.emplace_back(pw->pw_dir);
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && std::string(home).size() > 1)
    m.dirs.emplace_back(home);
  m.dirs.push_back(tempDir);
  return m;
}

// Every text file of the folder is free of this machine's identity and of foreign paths.
void expectNothingOfMine(const std::map<std::string, std::string>& files, const Me& m) {
  for (const auto& [name, text] : files) {
    if (name.ends_with(".png")) continue;
    for (const std::string& h : m.hosts) {
      if (redactedEverywhere(h))
        EXPECT_FALSE(hasToken(text, h, true)) << name << " names the host " << h << ":\n" << text;
      else
        EXPECT_FALSE(hasIdentityUse(text, h)) << name << " names the host " << h << ":\n" << text;
    }
    for (const std::string& u : m.users) {
      if (redactedEverywhere(u))
        EXPECT_FALSE(hasToken(text, u, false)) << name << " names the user " << u << ":\n" << text;
      else
        EXPECT_FALSE(hasIdentityUse(text, u)) << name << " names the user " << u << ":\n" << text;
    }
    for (const std::string& d : m.dirs) {
      for (size_t at = text.find(d); at != std::string::npos; at = text.find(d, at + 1)) {
        const size_t after = at + d.size();
        EXPECT_FALSE(after == text.size() || text[after] == '/' || !pathChar(text[after]))
            << name << " holds the directory " << d << ":\n"
            << text;
      }
    }
    for (const std::string& p : foreignPaths(text)) ADD_FAILURE() << name << " holds the path " << p << ":\n" << text;
  }
}

bool machineHasGpuDevice() {
  struct stat st;
  return stat("/dev/nvidia0", &st) == 0 || stat("/dev/nvidiactl", &st) == 0;
}

std::string builtPlotScript() { return fs::path(SYMMEM_REPORT_PATH).parent_path().string() + "/symmem-report-plots"; }

// ---- on this machine ----------------------------------------------------------------------------------

TEST(ReportTool, RunsHereAndHidesThisMachinesIdentity) {
  TempDir t;
  ASSERT_FALSE(t.path().empty());
  const ReportRun r = runReport(t.path(), "--out r --quick");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r.out, "[1/4] topology")) << r.out;
  EXPECT_TRUE(has(r.out, "[2/4] health check")) << r.out;
  EXPECT_TRUE(has(r.out, "[4/4] plots")) << r.out;
  const auto files = folder(t.path() + "/r");
  ASSERT_TRUE(files.count("report.md")) << r.out;
  EXPECT_TRUE(files.count("topology.txt"));
  EXPECT_FALSE(files.count(".staging")) << "the staging folder is removed";
  const std::string& md = files.at("report.md");
  for (const char* section : {"## Summary", "## Versions", "## Commands", "## Topology", "### Configuration check",
                              "## Health check", "## Tune", "## Plots", "## Files"})
    EXPECT_TRUE(has(md, section)) << section << "\n" << md;
  EXPECT_TRUE(has(md, "- Topology: ")) << md;
  EXPECT_TRUE(has(md, "- Health check: ")) << md;
  EXPECT_TRUE(has(md, "- Tune: ")) << md;
  EXPECT_TRUE(has(md, "- Plots: ")) << md;
  EXPECT_TRUE(has(md, "| nccl-symmem | ")) << md;
  EXPECT_TRUE(has(md, "| OS kernel | Linux ")) << md;
  // Every command, with the folder's files as the folder names them.
  EXPECT_TRUE(has(md, "<path>/symmem-health --quick --csv ./health.csv` | ")) << md;
  EXPECT_TRUE(has(md, "<path>/symmem-tune --quick --out ./table.txt --csv ./latency.csv` | ")) << md;
  EXPECT_TRUE(has(md, "by `<path>/symmem-report --out r --quick`")) << md;
  std::smatch size;
  EXPECT_TRUE(std::regex_search(md, size, std::regex("\\| topology\\.txt \\| [0-9.]+ KiB \\|"))) << md;
  // report.md states its own size.
  EXPECT_TRUE(has(md, "| report.md | " + formatSize(md.size()) + " |")) << md.size() << "\n" << md;
  uint64_t total = 0;
  for (const auto& [name, text] : files) total += text.size();
  EXPECT_LT(total, 2u << 20) << "small enough to attach";
  expectNothingOfMine(files, me(t.path()));

  if (machineHasGpuDevice()) GTEST_SKIP() << "this machine has an NVIDIA device: the no-GPU messages are not shown";
  EXPECT_TRUE(has(md, "- Topology: **no GPU detected**: topology.txt shows symmem-info's bundled default machine"))
      << md;
  EXPECT_TRUE(has(files.at("topology.txt"), "no GPU detected: the bundled default machine"));
  EXPECT_TRUE(has(md, "| NVIDIA driver | none (/proc/driver/nvidia/version: cannot open")) << md;
  EXPECT_TRUE(has(md, "| GPUs | none listed by the driver")) << md;
  EXPECT_TRUE(has(md, "- Tune: cannot run here (symmem-tune exit 1)")) << md;
  EXPECT_TRUE(has(md, "- Health check: no verdict") || has(md, "- Health check: the plugin is not useful here")) << md;
}

TEST(ReportTool, RefusesAFolderThatIsNotEmpty) {
  TempDir t;
  fs::create_directory(t.path() + "/r");
  std::ofstream(t.path() + "/r/notes.txt") << "mine\n";
  const ReportRun r = runReport(t.path(), "--out r --no-tune");
  EXPECT_EQ(r.exitCode, 1) << r.out;
  EXPECT_TRUE(has(r.out, "symmem-report: r exists and is not empty (nothing is overwritten")) << r.out;
  EXPECT_EQ(folder(t.path() + "/r").size(), 1u);
  EXPECT_EQ(readFile(t.path() + "/r/notes.txt"), "mine\n");
  std::ofstream(t.path() + "/file") << "x";
  EXPECT_EQ(runReport(t.path(), "--out file").exitCode, 1);
  EXPECT_EQ(runReport(t.path(), "--out no/such/parent").exitCode, 1);
}

TEST(ReportTool, TakesAnEmptyFolderAndNamesItsOwnByUtcTime) {
  TempDir t;
  fs::create_directory(t.path() + "/empty");
  TempDir tools;
  writeTool(tools.path(), "symmem-info", "echo this machine:\n");
  const std::string env = "SYMMEM_REPORT_TOOLS_DIR=" + tools.path();
  EXPECT_EQ(runReport(t.path(), "--out empty --no-tune", env).exitCode, 0);
  EXPECT_TRUE(fs::exists(t.path() + "/empty/report.md"));
  const ReportRun r = runReport(t.path(), "--no-tune", env);
  ASSERT_EQ(r.exitCode, 0) << r.out;
  int named = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(t.path())) {
    if (std::regex_match(e.path().filename().string(), std::regex("symmem-report-[0-9]{8}-[0-9]{6}"))) {
      ++named;
      EXPECT_TRUE(fs::exists(e.path() / "report.md"));
    }
  }
  EXPECT_EQ(named, 1);
}

TEST(ReportTool, BadCommandLinesExit2AndHelpExits0) {
  TempDir t;
  for (const char* args : {"--timeout-s 0", "--timeout-s x", "--gpus 0,0", "--gpus", "--frobnicate", "--out"}) {
    const ReportRun r = runReport(t.path(), args);
    EXPECT_EQ(r.exitCode, 2) << args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "symmem-report: ")) << r.out;
  }
  const ReportRun help = runReport(t.path(), "--help");
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_TRUE(has(help.out, "usage: symmem-report [--out DIR] [--quick] [--gpus L] [--no-tune] [--timeout-s S]"));
  EXPECT_TRUE(fs::is_empty(t.path())) << "nothing written for a bad command line";
}

// ---- against stand-in tools ---------------------------------------------------------------------------

// Stand-ins that print this machine's identity, so that the report has something to hide.
const char* kInfoThatTalks =
    "if [ \"$1\" = \"--check\" ]; then echo 'no problems (stand-in)'; exit 0; fi\n"
    "echo \"nccl-symmem 0.1.0\"\n"
    "echo \"plugin: $PWD/lib/libnccl-tuner-symmem.so\"\n"
    "echo \"ran by $(id -un)@$(uname -n) in $(pwd) with -I$HOME/include\"\n"
    "echo \"tools-dir-variable=${SYMMEM_REPORT_TOOLS_DIR:-unset}\"\n"
    "echo 'this machine:'\n"
    "echo 'Topology from nvml+hwloc: 2 GPUs'\n"
    "echo 'Communicator over all GPUs: link class pcie-switch, P2P on every pair: yes'\n";

const char* kHealthyHealth =
    "while [ $# -gt 0 ]; do case \"$1\" in --csv) csv=\"$2\"; shift;; esac; shift; done\n"
    "echo 'pair   write GB/s  read GB/s'\n"
    "echo '0->1   25.0        20.0'\n"
    "echo \"csv written to $csv\"\n"
    "printf 'record,gpu_a,gpu_b,field,value\\npair,0,1,writeGBs,25.0\\npair,0,1,readGBs,20.0\\n"
    "pair,1,0,writeGBs,24.0\\npair,1,0,readGBs,\\n' > \"$csv\"\n"
    "exit 0\n";

const char* kTune =
    "while [ $# -gt 0 ]; do case \"$1\" in --out) out=\"$2\"; shift;; --csv) csv=\"$2\"; shift;; esac; shift; done\n"
    "echo 'tune progress: world 2, 8 B, not for the folder' >&2\n"
    "printf 'symmem-table 1\\nmeta stand-in\\n"
    "sym cc=12.0 link=pcie-switch ranks=2 upto=64KiB algo=oneshot variant=push\\n"
    "band cc=12.0 link=pcie-switch ranks=2 coll=allreduce upto=1MiB algo=ring proto=ll channels=0\\n' > \"$out\"\n"
    "printf 'ranks,link,cc,bytes,path,median_us,min_us,max_us,chosen\\n"
    "2,pcie-switch,12.0,8,nccl,12,11,13,0\\n2,pcie-switch,12.0,8,oneshot-push,6,5,7,1\\n"
    "2,pcie-switch,12.0,64,nccl,13,12,14,0\\n2,pcie-switch,12.0,64,oneshot-push,7,6,8,1\\n' > \"$csv\"\n"
    "echo \"2 ranks: oneshot push up to 64KiB (table written to $out)\"\n";

TEST(ReportTool, HealthyTunedMachineWithStandInTools) {
  TempDir t, tools;
  writeTool(tools.path(), "symmem-info", kInfoThatTalks);
  writeTool(tools.path(), "symmem-health", kHealthyHealth);
  writeTool(tools.path(), "symmem-tune", kTune);
  fs::create_symlink(builtPlotScript(), tools.path() + "/symmem-report-plots");
  // /usr/bin first: a python3 with matplotlib there draws the plots (else the report says it is missing).
  const std::string env = "SYMMEM_REPORT_TOOLS_DIR=" + tools.path() + " NCCL_DEBUG=WARN NCCL_DEBUG_FILE=" + t.path() +
                          "/nccl.%h.log PATH=/usr/bin:$PATH";
  const ReportRun r = runReport(t.path(), "--out r --gpus 0,1", env);
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r.out, "tune progress: world 2")) << "tune's stderr reaches the terminal:\n" << r.out;
  const auto files = folder(t.path() + "/r");
  const std::string& md = files.at("report.md");
  EXPECT_TRUE(has(md,
                  "- Topology: this machine, as symmem-info detected it (Topology from nvml+hwloc: 2 GPUs; "
                  "Communicator over all GPUs: link class pcie-switch, P2P on every pair: yes)"))
      << md;
  EXPECT_TRUE(has(md, "- Health check: **healthy**")) << md;
  EXPECT_TRUE(has(md,
                  "- Tune: tuned table written (table.txt); what it chooses:\n"
                  "  - `sym cc=12.0 link=pcie-switch ranks=2 upto=64KiB algo=oneshot variant=push`\n"
                  "  - `band cc=12.0 link=pcie-switch ranks=2 coll=allreduce upto=1MiB algo=ring proto=ll "
                  "channels=0`\n"))
      << md;
  EXPECT_TRUE(has(md, "(SYMMEM_REPORT_TOOLS_DIR)")) << md;
  // The tuned table is checked as the plugin would read it.
  EXPECT_TRUE(has(md, "| tuned table check | `<path>/symmem-info --check --table ./table.txt` | exit 0 |")) << md;
  EXPECT_TRUE(has(md,
                  "Checked with `<path>/symmem-info --check --table ./table.txt` (exit 0):\n\n```text\n"
                  "no problems (stand-in)\n```\n"))
      << md;
  EXPECT_TRUE(has(md, "symmem-health --gpus 0,1 --csv ./health.csv` | exit 0 |")) << md;
  EXPECT_TRUE(has(md, "| NCCL_DEBUG | `WARN` |")) << md;
  EXPECT_TRUE(has(md, "| NCCL_DEBUG_FILE | `<cwd>/nccl.%h.log` |") ||
              has(md, "| NCCL_DEBUG_FILE | `<path>/nccl.%h.log` |"))
      << md;
  EXPECT_TRUE(has(md, "`health.csv`: 4 data rows")) << md;
  EXPECT_TRUE(has(md, "`latency.csv`: 4 data rows")) << md;
  EXPECT_FALSE(has(md, "Missing from this folder")) << md;
  // What the tools wrote, redacted: the staging folder reads as the folder, the rest as placeholders.
  EXPECT_TRUE(has(files.at("health.txt"), "csv written to ./health.csv")) << files.at("health.txt");
  EXPECT_TRUE(has(files.at("tune.txt"), "(table written to ./table.txt)")) << files.at("tune.txt");
  EXPECT_TRUE(has(files.at("topology.txt"), "plugin: <path>/libnccl-tuner-symmem.so")) << files.at("topology.txt");
  EXPECT_TRUE(has(files.at("topology.txt"), "in <cwd> with -I<home>/include")) << files.at("topology.txt");
  EXPECT_TRUE(has(files.at("topology.txt"), "tools-dir-variable=unset")) << "the tools do not see it";
  EXPECT_EQ(files.at("health.csv"),
            "record,gpu_a,gpu_b,field,value\npair,0,1,writeGBs,25.0\npair,0,1,readGBs,20.0\n"
            "pair,1,0,writeGBs,24.0\npair,1,0,readGBs,\n");
  for (const auto& [name, text] : files)
    EXPECT_FALSE(has(text, "tune progress")) << "tune's stderr is not stored, but " << name << " has it";
  expectNothingOfMine(files, me(t.path()));
  // The plots: drawn and embedded where matplotlib is installed, else the report says how to draw them.
  if (files.count("latency-2ranks.png")) {
    EXPECT_EQ(files.at("latency-2ranks.png").substr(1, 3), "PNG");
    EXPECT_TRUE(files.count("health-bandwidth.png"));
    EXPECT_TRUE(has(md, "![latency-2ranks.png](latency-2ranks.png)")) << md;
    EXPECT_TRUE(has(md, "| latency-2ranks.png | ")) << md;
  } else {
    EXPECT_TRUE(has(md, "- Plots: not drawn: matplotlib is not installed for python3")) << md;
    EXPECT_TRUE(has(md, "`symmem-report-plots .` in this folder")) << md;
  }
}

TEST(ReportTool, MissingAndUnusableToolsAreReportedNotFatal) {
  TempDir t, tools;
  writeTool(tools.path(), "symmem-info", kInfoThatTalks);
  writeTool(tools.path(), "symmem-health", "exit 0\n", fs::perms::owner_read | fs::perms::owner_write);
  const ReportRun r = runReport(t.path(), "--out r", "SYMMEM_REPORT_TOOLS_DIR=" + tools.path());
  ASSERT_EQ(r.exitCode, 0) << r.out;
  const std::string md = readFile(t.path() + "/r/report.md");
  EXPECT_TRUE(
      has(md, "- Health check: no verdict: symmem-health could not start: not executable: <path>/symmem-health"))
      << md;
  EXPECT_TRUE(has(md, "- Tune: no table: symmem-tune could not start: not found: <path>/symmem-tune")) << md;
  EXPECT_TRUE(has(md, "- Plots: not drawn: symmem-report-plots could not start: not found")) << md;
  EXPECT_TRUE(has(md, "  - latency.csv: symmem-tune could not start: not found")) << md;
  EXPECT_TRUE(has(md, "| health check | `<path>/symmem-health --csv ./health.csv` | could not start")) << md;
}

TEST(ReportTool, PartialOutputsAreKeptAndNamed) {
  TempDir t, tools;
  writeTool(tools.path(), "symmem-info", "echo 'no GPU detected: the bundled default machine'\nexit 1\n");
  writeTool(tools.path(), "symmem-health",
            "while [ $# -gt 0 ]; do case \"$1\" in --csv) csv=\"$2\"; shift;; esac; shift; done\n"
            "echo 'GPU 0: probing'\necho 'record,gpu_a,gpu_b,field,value' > \"$csv\"\n"
            "echo 'symmem-health: the probe child died (signal 11)' >&2\nexit 4\n");
  writeTool(tools.path(), "symmem-tune",
            "while [ $# -gt 0 ]; do case \"$1\" in --out) out=\"$2\"; shift;; esac; shift; done\n"
            "printf 'symmem-table 1\\nentry cc=9.0 link=nvlink ranks=2 oneshot=1MiB twoshot=8MiB\\n' > \"$out\"\n"
            "echo '4 ranks: failed'\nexit 3\n");
  const ReportRun r = runReport(t.path(), "--out r", "SYMMEM_REPORT_TOOLS_DIR=" + tools.path());
  ASSERT_EQ(r.exitCode, 0) << r.out;
  const auto files = folder(t.path() + "/r");
  const std::string& md = files.at("report.md");
  EXPECT_TRUE(has(md, "- Topology: **no GPU detected**")) << md;
  EXPECT_TRUE(has(md, "| topology | `<path>/symmem-info` | exit 1 |")) << md;
  EXPECT_TRUE(has(md,
                  "- Health check: no verdict: symmem-health could not run its checks (symmem-health exit 4): "
                  "`symmem-health: the probe child died (signal 11)`"))
      << md;
  EXPECT_TRUE(has(md, "`health.csv`: 0 data rows")) << md;
  EXPECT_TRUE(has(md,
                  "- Tune: some world sizes failed (symmem-tune exit 3); the table holds the others:\n"
                  "  - `entry cc=9.0 link=nvlink ranks=2 oneshot=1MiB twoshot=8MiB`"))
      << md;
  EXPECT_TRUE(has(md, "  - latency.csv: symmem-tune exited 3 without writing it")) << md;
  EXPECT_TRUE(files.count("table.txt"));
  EXPECT_FALSE(files.count("latency.csv"));
}

// A stand-in symmem-health that hangs, with a grandchild that would outlive it.
const char* kHangingHealth =
    "sleep 300 &\n"
    "echo $! > \"$(dirname \"$0\")/grandchild.pid\"\n"
    "echo 'checking pairs ...'\n"
    "sleep 300\n";

bool processGone(pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    if (kill(pid, 0) != 0) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = all.rfind(')');
    if (close != std::string::npos && close + 2 < all.size() && all[close + 2] == 'Z') return true;  // only unreaped
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

pid_t grandchildOf(const std::string& toolsDir) {
  std::ifstream in(toolsDir + "/grandchild.pid");
  int pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

TEST(ReportTool, AToolThatHangsIsKilledWithItsChildrenAtTheTimeout) {
  TempDir t, tools;
  writeTool(tools.path(), "symmem-info", "echo 'this machine:'\n");
  writeTool(tools.path(), "symmem-health", kHangingHealth);
  const ReportRun r = runReport(t.path(), "--out r --no-tune --timeout-s 2", "SYMMEM_REPORT_TOOLS_DIR=" + tools.path());
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_LT(r.seconds, 60) << r.out;
  const std::string md = readFile(t.path() + "/r/report.md");
  EXPECT_TRUE(has(md, "- Health check: no verdict: symmem-health timed out after 2 s (killed)")) << md;
  EXPECT_TRUE(has(md, "- Tune: not run (--no-tune)")) << md;
  EXPECT_EQ(readFile(t.path() + "/r/health.txt"), "checking pairs ...\n") << "what it printed before is kept";
  const pid_t grandchild = grandchildOf(tools.path());
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(processGone(grandchild)) << "the hung tool's own child " << grandchild << " is still running";
  if (!processGone(grandchild)) kill(grandchild, SIGKILL);
}

TEST(ReportTool, InterruptedReportStillWritesItsFolder) {
  TempDir t, tools;
  writeTool(tools.path(), "symmem-info", "echo 'this machine:'\n");
  writeTool(tools.path(), "symmem-health", kHangingHealth);
  writeTool(tools.path(), "symmem-tune", "echo should not run\n");
  const std::string out = t.path() + "/r";
  const std::string toolsDir = tools.path();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("SYMMEM_REPORT_TOOLS_DIR", toolsDir.c_str(), 1);
    if (freopen("/dev/null", "w", stderr) == nullptr) _exit(126);
    execl(SYMMEM_REPORT_PATH, SYMMEM_REPORT_PATH, "--out", out.c_str(), nullptr);
    _exit(127);
  }
  for (int i = 0; i < 200 && grandchildOf(toolsDir) <= 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_GT(grandchildOf(toolsDir), 0) << "the stand-in health check did not start";
  kill(pid, SIGINT);
  int status = 0;
  pid_t waited = 0;
  for (int i = 0; i < 600 && (waited = waitpid(pid, &status, WNOHANG)) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (waited == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "symmem-report did not end after SIGINT";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const std::string md = readFile(out + "/report.md");
  EXPECT_TRUE(has(md, "**Interrupted**")) << md;
  EXPECT_TRUE(has(md, "- Health check: no verdict: symmem-health interrupted (killed)")) << md;
  EXPECT_TRUE(has(md, "- Tune: not run (symmem-report was interrupted before it)")) << md;
  EXPECT_TRUE(processGone(grandchildOf(toolsDir)));
  if (!processGone(grandchildOf(toolsDir))) kill(grandchildOf(toolsDir), SIGKILL);
}

// ---- the plot script ----------------------------------------------------------------------------------

ReportRun runScript(const std::string& command) { return testing::runTool(command); }

TEST(ReportTool, PlotScriptSaysWhenThereIsNothingToPlot) {
  TempDir t;
  const ReportRun empty = runScript("'" + builtPlotScript() + "' '" + t.path() + "'");
  EXPECT_EQ(empty.exitCode, 0) << empty.out;
  EXPECT_TRUE(has(empty.out, "nothing to plot")) << empty.out;
  std::ofstream(t.path() + "/latency.csv") << "bytes,us\n8,1\n";
  std::ofstream(t.path() + "/health.csv") << "record,gpu_a,gpu_b,field,value\npair,0,1,writeGBs,\n";
  const ReportRun unmeasured = runScript("'" + builtPlotScript() + "' '" + t.path() + "'");
  EXPECT_EQ(unmeasured.exitCode, 0) << unmeasured.out;
  EXPECT_TRUE(has(unmeasured.out, "latency.csv: header is not ranks,link,cc")) << unmeasured.out;
  EXPECT_EQ(runScript("'" + builtPlotScript() + "' /no/such/folder").exitCode, 2);
}

TEST(ReportTool, PlotScriptDrawsEachWorldSizeAndTheBandwidth) {
  TempDir t;
  std::ofstream(t.path() + "/latency.csv") << "ranks,link,cc,bytes,path,median_us,min_us,max_us,chosen\n"
                                              "2,pcie-switch,12.0,8,nccl,12,11,13,0\n"
                                              "2,pcie-switch,12.0,8,oneshot-pull,6,5,7,1\n"
                                              "2,pcie-switch,12.0,1024,nccl-ring-ll,14,13,15,1\n"
                                              "4,pcie-root,12.0,8,nccl,20,19,21,1\n"
                                              "4,pcie-root,12.0,8,twoshot-staged,,,,0\n";
  std::ofstream(t.path() + "/health.csv") << "record,gpu_a,gpu_b,field,value\npair,0,1,writeGBs,25\n"
                                             "pair,0,1,readGBs,20\nall,0,,writeGBsPerGpu,40\n";
  // The script as installed (its python3 from PATH), then Debian's python3 where that has matplotlib.
  std::string why;
  for (const std::string& python : {std::string(), std::string("/usr/bin/python3 ")}) {
    if (!python.empty() && !fs::exists("/usr/bin/python3")) continue;
    const ReportRun r = runScript(python + "'" + builtPlotScript() + "' '" + t.path() + "'");
    if (r.exitCode == 3) {
      EXPECT_TRUE(has(r.out, "matplotlib is not installed for")) << r.out;
      why += r.out;
      continue;
    }
    ASSERT_EQ(r.exitCode, 0) << r.out;
    EXPECT_TRUE(has(r.out, "wrote latency-2ranks.png, latency-4ranks.png, health-bandwidth.png")) << r.out;
    for (const char* png : {"latency-2ranks.png", "latency-4ranks.png", "health-bandwidth.png"})
      EXPECT_EQ(readFile(t.path() + "/" + png).substr(0, 4), "\x89PNG") << png;
    // Nothing is replaced.
    const std::string before = readFile(t.path() + "/latency-2ranks.png");
    const ReportRun again = runScript(python + "'" + builtPlotScript() + "' '" + t.path() + "'");
    EXPECT_TRUE(has(again.out, "latency-2ranks.png exists, not replaced")) << again.out;
    EXPECT_EQ(readFile(t.path() + "/latency-2ranks.png"), before);
    return;
  }
  GTEST_SKIP() << "no python3 here has matplotlib, so the drawing is not checked: " << why;
}

// ---- the plugin's live statistics -----------------------------------------------------------------------

// A process running the plugin (its statistics file in a folder of the test's) is in the report: the
// table and the JSON in the folder, and the count in the summary; without one, one line says so.
TEST(ReportTool, LiveStatisticsOfRunningProcesses) {
  TempDir t, tools, stats;
  writeTool(tools.path(), "symmem-info", "echo this machine:\n");
  const std::string env = "SYMMEM_REPORT_TOOLS_DIR=" + tools.path() + " SYMMEM_STATS_DIR=" + stats.path();
  ReportRun r = runReport(t.path(), "--out none --no-tune", env);
  ASSERT_EQ(r.exitCode, 0) << r.out;
  auto files = folder(t.path() + "/none");
  EXPECT_FALSE(files.count("live-stats.txt"));
  EXPECT_FALSE(files.count("live-stats.json"));
  EXPECT_TRUE(
      has(files.at("report.md"), "- Live statistics: no process had the plugin loaded (no statistics file in `"))
      << files.at("report.md");

  testing::StatsWritingProcess p(stats.path());
  ASSERT_TRUE(p.ready());
  r = runReport(t.path(), "--out live --no-tune", env);
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(has(r.out, "symmem-report: Live statistics: 1 process with the plugin loaded, 2 communicators")) << r.out;
  files = folder(t.path() + "/live");
  ASSERT_TRUE(files.count("live-stats.txt")) << r.out;
  ASSERT_TRUE(files.count("live-stats.json")) << r.out;
  const std::string& md = files.at("report.md");
  EXPECT_TRUE(has(md,
                  "- Live statistics: 1 process with the plugin loaded, 2 communicators (`live-stats.txt`, "
                  "`live-stats.json`)"))
      << md;
  EXPECT_TRUE(has(md, "## Live statistics")) << md;
  EXPECT_TRUE(has(md, "| live-stats.json | ")) << md;
  const std::string pid = std::to_string(p.pid());
  EXPECT_TRUE(std::regex_search(files.at("live-stats.txt"),
                                std::regex("\\n +" + pid + " +" + std::to_string(geteuid()) +
                                           "  stat-child +0xa1 +0/2 +one-shot push +[0-9.]+ +12  8B-4KiB")))
      << files.at("live-stats.txt");
  EXPECT_TRUE(has(md, "stat-child")) << "the table is embedded: " << md;
  EXPECT_TRUE(has(files.at("live-stats.json"), "\"pid\":" + pid + ",\"program\":\"stat-child\""))
      << files.at("live-stats.json");
  EXPECT_TRUE(has(files.at("live-stats.json"), "\"one_shot_push\":{\"calls\":12,\"eager\":7,\"captured\":5,"))
      << files.at("live-stats.json");
  expectNothingOfMine(files, me(t.path()));
}

}  // namespace
}  // namespace symmem::report

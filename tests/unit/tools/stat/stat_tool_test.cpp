// SPDX-License-Identifier: Apache-2.0
// The built symmem-stat, run as a user runs it against a live process: a forked child that keeps a
// statistics file in a folder of the test's own (as the plugin does in /dev/shm) with known counts.
// Each form is read back and its numbers checked; files of ended processes, foreign layouts, no
// process at all, a closed pipe and Ctrl-C each end the way docs/live-stats.md says.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/call_stats_segment.h"
#include "tests/unit/call_stats_writer.h"
#include "tests/unit/stats_process.h"
#include "tests/unit/temp_file.h"
#include "tests/unit/tool_run.h"
#include "tests/unit/tools/stat/json_value.h"

namespace symmem::stats {
namespace {

using testing::JsonReader;
using testing::JsonValue;

constexpr uint64_t kSecond = 1000000000ull;

bool exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

struct StatsDir : symmem::testing::TempDir {
  StatsDir() : symmem::testing::TempDir("symmem-stat-test") {}
};

symmem::testing::ToolRun stat(const std::string& args) {
  return symmem::testing::runTool(std::string("env -u SYMMEM_STATS_DIR '") + SYMMEM_STAT_PATH + "' " + args);
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<std::string> linesWith(const std::string& text, const std::string& part) {
  std::vector<std::string> out;
  for (const std::string& l : lines(text))
    if (l.find(part) != std::string::npos) out.push_back(l);
  return out;
}

TEST(StatTool, Table) {
  StatsDir dir;
  testing::StatsWritingProcess p(dir.path());
  ASSERT_TRUE(p.ready());
  const auto r = stat("--dir '" + dir.path() + "' --once");
  EXPECT_EQ(r.exitCode, 0) << r.out;
  const std::string pid = std::to_string(p.pid());
  const std::string uid = std::to_string(geteuid());
  const std::vector<std::string> rows = linesWith(r.out, " stat-child ");
  ASSERT_EQ(rows.size(), 3u) << r.out;
  // pid uid program comm rank route calls/s calls sizes eager/capt gpu-runs/s gpu-mean gpu-max
  const std::regex push("^ +" + pid + " +" + uid +
                        "  stat-child +0xa1 +0/2 +one-shot push +(1\\.[12]) +12  8B-4KiB +58/42 +(1\\.[12]) +3\\.7 "
                        "+7\\.0$");
  std::smatch m;
  EXPECT_TRUE(std::regex_match(rows[0], m, push)) << rows[0] << "\n(12 calls and 12 runs in 10 s: 1.2 a second)";
  EXPECT_TRUE(std::regex_match(
      rows[1], std::regex("^ +" + pid + " +" + uid +
                          "  stat-child +0xa1 +0/2 +NCCL \\(table band\\) +0\\.3 +3  1MiB +100/0 +- +- +-$")))
      << rows[1];
  EXPECT_TRUE(std::regex_match(
      rows[2], std::regex("^ +" + pid + " +" + uid +
                          "  stat-child +0xb2 +1/4 +NCCL \\(path off\\) +ended +4  128B +100/0 +- +- +-$")))
      << rows[2];
  EXPECT_EQ(linesWith(r.out, "#   pid").size(), 1u) << r.out;
  EXPECT_TRUE(r.has("pid " + pid + " comm 0xb2 rank 1/4: symmetric path off: NCCL: a peer has no P2P access")) << r.out;
  EXPECT_TRUE(r.has("pid " + pid + ": 1 communicator not shown")) << r.out;

  // The same through SYMMEM_STATS_DIR.
  const auto viaSetting =
      symmem::testing::runTool("SYMMEM_STATS_DIR='" + dir.path() + "' '" + SYMMEM_STAT_PATH + "' --once " + pid);
  EXPECT_EQ(viaSetting.exitCode, 0) << viaSetting.out;
  EXPECT_EQ(linesWith(viaSetting.out, " stat-child ").size(), 3u) << viaSetting.out;
}

TEST(StatTool, Json) {
  StatsDir dir;
  testing::StatsWritingProcess p(dir.path());
  ASSERT_TRUE(p.ready());
  const auto r =
      symmem::testing::runTool(std::string("'") + SYMMEM_STAT_PATH + "' --json --dir '" + dir.path() + "' 2>/dev/null");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  ASSERT_EQ(lines(r.out).size(), 1u) << "one document on one line: " << r.out;
  const JsonValue doc = JsonReader::parse(r.out);
  EXPECT_EQ(doc["layout_version"].u64(), 3u);
  ASSERT_EQ(doc["processes"].items.size(), 1u);
  const JsonValue& proc = doc["processes"][0];
  EXPECT_EQ(proc["pid"].u64(), static_cast<uint64_t>(p.pid()));
  EXPECT_EQ(proc["program"].text, "stat-child");
  EXPECT_EQ(proc["uid"].u64(), getuid());
  EXPECT_EQ(proc["plugin_version"].text, "0.1.0");
  EXPECT_EQ(proc["untracked_communicators"].u64(), 1u);
  ASSERT_EQ(proc["communicators"].items.size(), 2u);
  const JsonValue& c = proc["communicators"][0];
  EXPECT_EQ(c["comm"].text, "0xa1");
  EXPECT_EQ(c["state"].text, "live");
  EXPECT_EQ(c["rank"].u64(), 0u);
  EXPECT_EQ(c["nranks"].u64(), 2u);
  EXPECT_EQ(c["calls"].u64(), 15u);
  EXPECT_EQ(c["rates_since"].text, "opened");
  EXPECT_EQ(c["closed_ns"].kind, JsonValue::Kind::Null);
  const JsonValue& push = c["routes"]["one_shot_push"];
  EXPECT_EQ(push["calls"].u64(), 12u);
  EXPECT_EQ(push["eager"].u64(), 7u);
  EXPECT_EQ(push["captured"].u64(), 5u);
  EXPECT_GE(push["calls_per_s"].number, 1.1);
  EXPECT_LE(push["calls_per_s"].number, 1.2);
  ASSERT_EQ(push["buckets"].items.size(), 2u);
  EXPECT_EQ(push["buckets"][0]["le_bytes"].u64(), 8u);
  EXPECT_EQ(push["buckets"][0]["eager"].u64(), 7u);
  EXPECT_EQ(push["buckets"][1]["le_bytes"].u64(), 4096u);
  EXPECT_EQ(push["buckets"][1]["captured"].u64(), 5u);
  EXPECT_EQ(c["routes"]["nccl_tuned"]["calls"].u64(), 3u);
  const JsonValue& k = c["kernels"]["one_shot_push"];
  EXPECT_EQ(c["gpu_sampling"].u64(), 1u);
  EXPECT_EQ(c["gpu_runs"]["one_shot"].u64(), 12u);
  EXPECT_EQ(c["gpu_runs"]["two_shot"].u64(), 0u);
  EXPECT_EQ(k["executions"].u64(), 12u);
  EXPECT_EQ(k["timed"].u64(), 12u);
  EXPECT_EQ(k["sum_ns"].u64(), 44000u);
  EXPECT_EQ(k["min_ns"].u64(), 1500u);
  EXPECT_EQ(k["max_ns"].u64(), 7000u);
  EXPECT_EQ(k["buckets"][1]["count"].u64(), 5u);
  EXPECT_EQ(k["buckets"][1]["sum_ns"].u64(), 30000u);
  const JsonValue& off = proc["communicators"][1];
  EXPECT_EQ(off["state"].text, "ended");
  EXPECT_FALSE(off["symmetric"].boolean);
  EXPECT_EQ(off["path"].text, "NCCL: a peer has no P2P access");
  EXPECT_EQ(off["routes"]["nccl_path_off"]["calls"].u64(), 4u);
  EXPECT_NEAR(off["routes"]["nccl_path_off"]["calls_per_s"].number, 2.0, 1e-9) << "4 calls in its 2 s";
  EXPECT_TRUE(off["kernels"].members.empty());
}

TEST(StatTool, Prometheus) {
  StatsDir dir;
  testing::StatsWritingProcess p(dir.path());
  ASSERT_TRUE(p.ready());
  const auto r = symmem::testing::runTool(std::string("'") + SYMMEM_STAT_PATH + "' --prometheus --dir '" + dir.path() +
                                          "' 2>/dev/null");
  ASSERT_EQ(r.exitCode, 0) << r.out;
  std::map<std::string, std::string> series;  // name{labels} -> value
  std::map<std::string, std::string> types;
  for (const std::string& l : lines(r.out)) {
    if (l.starts_with("# TYPE ")) {
      const size_t sp = l.rfind(' ');
      types[l.substr(7, sp - 7)] = l.substr(sp + 1);
      continue;
    }
    if (l.starts_with("#")) continue;
    const size_t sp = l.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << l;
    EXPECT_TRUE(series.emplace(l.substr(0, sp), l.substr(sp + 1)).second) << "a series twice: " << l;
  }
  EXPECT_EQ(types["nccl_symmem_calls_total"], "counter");
  EXPECT_EQ(types["nccl_symmem_kernel_max_seconds"], "gauge");
  const std::string a = "pid=\"" + std::to_string(p.pid()) + "\",uid=\"" + std::to_string(geteuid()) +
                        "\",program=\"stat-child\",comm=\"0xa1\",rank=\"0\",nranks=\"2\"";
  const std::string b = "pid=\"" + std::to_string(p.pid()) + "\",uid=\"" + std::to_string(geteuid()) +
                        "\",program=\"stat-child\",comm=\"0xb2\",rank=\"1\",nranks=\"4\"";
  const std::map<std::string, std::string> expected = {
      {"nccl_symmem_calls_total{" + a + ",route=\"one_shot_push\",bucket_le_bytes=\"8\",mode=\"eager\"}", "7"},
      {"nccl_symmem_calls_total{" + a + ",route=\"one_shot_push\",bucket_le_bytes=\"4096\",mode=\"captured\"}", "5"},
      {"nccl_symmem_calls_total{" + a + ",route=\"nccl_tuned\",bucket_le_bytes=\"1048576\",mode=\"eager\"}", "3"},
      {"nccl_symmem_calls_total{" + b + ",route=\"nccl_path_off\",bucket_le_bytes=\"128\",mode=\"eager\"}", "4"},
      {"nccl_symmem_kernel_timed_executions_total{" + a + ",route=\"one_shot_push\",bucket_le_bytes=\"8\"}", "7"},
      {"nccl_symmem_kernel_timed_executions_total{" + a + ",route=\"one_shot_push\",bucket_le_bytes=\"4096\"}", "5"},
      {"nccl_symmem_gpu_executions_total{" + a + ",algorithm=\"one_shot\"}", "12"},
      {"nccl_symmem_gpu_executions_total{" + a + ",algorithm=\"two_shot\"}", "0"},
      {"nccl_symmem_kernel_seconds_total{" + a + ",route=\"one_shot_push\",bucket_le_bytes=\"8\"}", "0.000014"},
      {"nccl_symmem_kernel_seconds_total{" + a + ",route=\"one_shot_push\",bucket_le_bytes=\"4096\"}", "0.00003"},
      {"nccl_symmem_kernel_max_seconds{" + a + ",route=\"one_shot_push\",bucket_le_bytes=\"8\"}", "0.0000025"},
      {"nccl_symmem_kernel_max_seconds{" + a + ",route=\"one_shot_push\",bucket_le_bytes=\"4096\"}", "0.000007"},
      {"nccl_symmem_kernel_min_seconds{" + a + ",route=\"one_shot_push\",bucket_le_bytes=\"8\"}", "0.0000015"},
      {"nccl_symmem_kernel_min_seconds{" + a + ",route=\"one_shot_push\",bucket_le_bytes=\"4096\"}", "0.000005"},
      {"nccl_symmem_untracked_communicators{pid=\"" + std::to_string(p.pid()) + "\",uid=\"" +
           std::to_string(geteuid()) + "\",program=\"stat-child\"}",
       "1"},
  };
  EXPECT_EQ(series, expected);
}

TEST(StatTool, LiveTableRatesPerInterval) {
  StatsDir dir;
  testing::StatsWritingProcess p(dir.path());
  ASSERT_TRUE(p.ready());
  const auto r = stat("--dir '" + dir.path() + "' --interval 0.2 --count 3");
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_EQ(linesWith(r.out, "#   pid").size(), 1u) << "the heading once for 9 rows: " << r.out;
  const std::vector<std::string> push = linesWith(r.out, "one-shot push");
  ASSERT_EQ(push.size(), 3u) << r.out;
  EXPECT_TRUE(std::regex_search(push[0], std::regex(" 1\\.[12] +12 "))) << "since opened: " << push[0];
  EXPECT_TRUE(std::regex_search(push[1], std::regex(" 0\\.0 +12 "))) << "no calls in the interval: " << push[1];
  EXPECT_TRUE(std::regex_search(push[2], std::regex(" 0\\.0 +12 "))) << push[2];
  EXPECT_EQ(linesWith(r.out, "symmetric path off").size(), 1u) << "said once in a live view: " << r.out;
  EXPECT_GE(r.seconds, 0.35);
}

TEST(StatTool, FilesOfEndedProcesses) {
  StatsDir dir;
  testing::StatsWritingProcess p(dir.path());
  ASSERT_TRUE(p.ready());
  const pid_t ended = fork();
  ASSERT_GE(ended, 0);
  if (ended == 0) {
    std::string why;
    auto seg = WrittenSegment::createShared(dir.path(), "ended-child", "0.1.0", &why);
    _exit(seg == nullptr ? 3 : 0);  // no destructor: the file stays, as after a kill
  }
  int status = 0;
  ASSERT_EQ(waitpid(ended, &status, 0), ended);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  const std::string left = dir.path() + "/" + segmentFileName(getuid(), ended);
  ASSERT_TRUE(exists(left));
  const auto r = stat("--dir '" + dir.path() + "' --once");
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(r.has("symmem-stat: pid " + std::to_string(ended) + " ended without removing its statistics file " +
                    left + " (the next process of this user that writes statistics here removes it)"))
      << r.out;
  EXPECT_TRUE(exists(left)) << "a viewer changes nothing";
  EXPECT_EQ(linesWith(r.out, " stat-child ").size(), 3u) << "the live process still shown: " << r.out;
  EXPECT_EQ(linesWith(r.out, "ended-child").size(), 0u) << r.out;
  // The next writer removes it.
  testing::StatsWritingProcess next(dir.path());
  ASSERT_TRUE(next.ready());
  EXPECT_FALSE(exists(left)) << "removed by the next writer";
  EXPECT_FALSE(stat("--dir '" + dir.path() + "' --once").has("ended without removing")) << "nothing left to report";
}

TEST(StatTool, AFileOfAnotherLayoutIsSkipped) {
  StatsDir dir;
  // Named for this (running) test process, written by a newer plugin.
  const std::string path = dir.path() + "/" + segmentFileName(getuid(), getpid());
  Header h{};
  initHeader(&h, getpid(), 0, "newer", "9.0");
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kLayoutVersion + 1;
  std::string bytes(kSegmentBytes, '\0');
  std::memcpy(bytes.data(), &h, sizeof h);
  std::ofstream(path, std::ios::binary) << bytes;
  auto r = stat("--dir '" + dir.path() + "' --once");
  EXPECT_EQ(r.exitCode, 1) << "nothing could be read: " << r.out;
  EXPECT_TRUE(r.has("symmem-stat: skipped " + path + ": layout version 4; this reader knows version 3")) << r.out;
  EXPECT_TRUE(exists(path)) << "a refused file is left alone";
  testing::StatsWritingProcess p(dir.path());
  ASSERT_TRUE(p.ready());
  r = stat("--dir '" + dir.path() + "' --once");
  EXPECT_EQ(r.exitCode, 0) << "one process read: " << r.out;
  EXPECT_TRUE(r.has("layout version 4")) << r.out;
  EXPECT_EQ(linesWith(r.out, " stat-child ").size(), 3u) << r.out;
}

TEST(StatTool, NoProcess) {
  StatsDir dir;
  auto r = stat("--dir '" + dir.path() + "' --once");
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(r.has("no process has the plugin loaded")) << r.out;
  EXPECT_TRUE(r.has("SYMMEM_STATS=0")) << r.out;
  EXPECT_FALSE(r.has("#   pid")) << "no heading over nothing: " << r.out;
  r = stat("--dir '" + dir.path() + "' --once " + std::to_string(getpid()));
  EXPECT_EQ(r.exitCode, 1) << r.out;
  EXPECT_TRUE(r.has("pid " + std::to_string(getpid()) + ": no statistics file in " + dir.path())) << r.out;
  r = stat("--dir '" + dir.path() + "/missing' --once");
  EXPECT_EQ(r.exitCode, 1) << r.out;
  EXPECT_TRUE(r.has("cannot read " + dir.path() + "/missing")) << r.out;
  r = stat("--dir '" + dir.path() + "' --json");
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(r.has(R"({"layout_version":3,"processes":[],"notes":[]})")) << r.out;
}

TEST(StatTool, EndsQuietlyWhenItsReaderGoes) {
  StatsDir dir;
  testing::StatsWritingProcess p(dir.path());
  ASSERT_TRUE(p.ready());
  const std::string rc = dir.path() + "/rc";
  const auto r =
      symmem::testing::runTool("('" + std::string(SYMMEM_STAT_PATH) + "' --dir '" + dir.path() +
                               "' --interval 0.1 --count 100000 2>/dev/null; echo $? > '" + rc + "') | head -n 3");
  EXPECT_LT(r.seconds, 10.0) << "symmem-stat ran on after head exited";
  EXPECT_EQ(lines(r.out).size(), 3u) << r.out;
  EXPECT_EQ(symmem::testing::readWholeFile(rc), "0\n");
}

TEST(StatTool, EndsOnInterruptOrTerminate) {
  StatsDir dir;
  for (int sig : {SIGINT, SIGTERM}) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      freopen("/dev/null", "w", stdout);
      freopen("/dev/null", "w", stderr);
      execl(SYMMEM_STAT_PATH, "symmem-stat", "--dir", dir.path().c_str(), "--interval", "60", nullptr);
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(child, sig);
    int status = 0;
    pid_t done = 0;
    for (int i = 0; i < 50 && done == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      done = waitpid(child, &status, WNOHANG);
    }
    if (done == 0) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      ADD_FAILURE() << "signal " << sig << " did not end it within 5 s";
      continue;
    }
    EXPECT_TRUE(WIFEXITED(status)) << "signal " << sig << " killed it instead of ending it";
    EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0) << "signal " << sig;
  }
}

TEST(StatTool, HelpVersionAndMistakes) {
  auto r = stat("--help");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_TRUE(r.has("usage: symmem-stat [PID...]")) << r.out;
  r = stat("--version");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_TRUE(r.has("symmem-stat (nccl-symmem ")) << r.out;
  r = stat("--onse");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_TRUE(r.has("symmem-stat: unknown option --onse (did you mean --once?")) << r.out;
  r = stat("--interval 0");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_TRUE(r.has("symmem-stat --help lists the options")) << r.out;
}

}  // namespace
}  // namespace symmem::stats

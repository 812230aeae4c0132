// SPDX-License-Identifier: Apache-2.0
// What the plugin says on stderr with NCCL_DEBUG unset, as in production, where NCCL's logger prints
// nothing: one "nccl-symmem:" line when it becomes active (naming the table in force) and one per
// fallback cause that defeats its purpose, once per process however many communicators meet it; and
// nothing at all under SYMMEM_LOG=quiet. A forked child loads the plugin as NCCL's tuner beside the
// stand-in libnccl (tests/hook_fixture), with its stderr sent to a file the parent reads.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "plugin/nccl/tuner_abi.h"
#include "tests/unit/hook_fixture.h"
#include "tests/unit/temp_file.h"

namespace {

// NCCL_DEBUG unset: NCCL's logger would print nothing, so the test's prints nothing either.
void silentLogger(int, unsigned long, const char*, int, const char*, ...) {}

// The child's whole stderr, after loading the plugin as NCCL's tuner with `env` and creating
// `communicators` communicators of 2 ranks on one node; "" on the first line of what follows when it
// failed, with the reason.
std::string stderrOfTunerChild(const std::map<std::string, std::string>& env, int communicators) {
  const symmem::testing::TempFile err("", "symmem-notices");
  const symmem::testing::TempDir config;
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    const int fd = open(err.path().c_str(), O_WRONLY | O_TRUNC);
    if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) _exit(10);
    close(fd);
    unsetenv("NCCL_DEBUG");
    unsetenv("SYMMEM_LOG");
    unsetenv("SYMMEM_TABLE");
    setenv("XDG_CONFIG_HOME", config.path().c_str(), 1);  // no installed table of the user's
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
#if SYMMEM_HAVE_HOOK_FIXTURE
    if (!dlopen(SYMMEM_STAND_IN_NCCL_PATH, RTLD_NOW | RTLD_LOCAL)) _exit(11);
#endif
    void* lib = dlopen(SYMMEM_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    auto* v5 = lib ? static_cast<const symmem::abi::TunerV5*>(dlsym(lib, "ncclTunerPlugin_v5")) : nullptr;
    if (!v5) _exit(12);
    for (int i = 0; i < communicators; ++i) {
      void* ctx = nullptr;
      if (v5->init(&ctx, 0x5100 + static_cast<uint64_t>(i), 2, 1, silentLogger, nullptr, nullptr) != 0) _exit(13);
    }
    std::fflush(stderr);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "\nchild failed (status " + std::to_string(status) + ")";
  return symmem::testing::readWholeFile(err.path());
}

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

class PluginNotices : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string unavailable = symmem::testing::hookFixtureUnavailable();
    if (!unavailable.empty()) GTEST_SKIP() << unavailable;
  }
};

// Code hooks refused (no disassembler to load): said once on stderr, with the cause, although three
// communicators each try again; and the line that the plugin is active, naming the built-in table.
TEST_F(PluginNotices, ARefusedHookAndTheActivePluginAreSaidOnceOnStderr) {
  const std::string err = stderrOfTunerChild({{"SYMMEM_DISASSEMBLER", "/nonexistent/libZydis.so.4.0"}}, 3);
  EXPECT_EQ(count(err, "nccl-symmem: "), 2) << err;
  EXPECT_EQ(count(err, "nccl-symmem: code hooks on libnccl refused ("), 1) << err;
  EXPECT_EQ(count(err, "ctypes clients (vLLM's and SGLang's pynccl) keep stock NCCL's all-reduce"), 1) << err;
  EXPECT_EQ(count(err, " active in this process (pid "), 1) << err;
  EXPECT_EQ(count(err, "decision table: built-in"), 1) << err;
  EXPECT_EQ(err.find("nccl-symmem: "), 0u) << "each line starts with the prefix:\n" << err;
}

// A table named by SYMMEM_TABLE is the one named; one that cannot be used is not: the line names the
// built-in table, which is then in force, and why the file is not.
TEST_F(PluginNotices, TheActiveLineNamesTheTableInForce) {
  const symmem::testing::TempFile table("symmem-table 2\n# no entries: the built-in ones stay\nend\n", "symmem-table");
  std::string err = stderrOfTunerChild({{"SYMMEM_TABLE", table.path()}}, 1);
  EXPECT_EQ(count(err, "decision table: SYMMEM_TABLE=" + table.path()), 1) << err;

  const symmem::testing::TempFile headerless("# not a table: no header\n", "symmem-table");
  err = stderrOfTunerChild({{"SYMMEM_TABLE", headerless.path()}}, 1);
  EXPECT_EQ(count(err, "decision table: SYMMEM_TABLE="), 0) << err;
  EXPECT_EQ(count(err, "decision table: built-in (SYMMEM_TABLE=" + headerless.path() + " cannot be used: "), 1) << err;
}

// SYMMEM_LOG=quiet: not one line, whatever falls back.
TEST_F(PluginNotices, QuietSaysNothing) {
  const std::string err =
      stderrOfTunerChild({{"SYMMEM_LOG", "quiet"}, {"SYMMEM_DISASSEMBLER", "/nonexistent/libZydis.so.4.0"}}, 2);
  EXPECT_EQ(err, "");
}

}  // namespace

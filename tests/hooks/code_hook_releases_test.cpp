// SPDX-License-Identifier: Apache-2.0
// The calls that create communicators, on the real libnccl.so.2 of every NCCL release (the cache
// tests/nccl_releases/fetch_libnccl.py fills; NCCL_SYMMEM_TEST_RELEASES names it): each one the
// release has takes a code hook and gives its bytes back. Nothing is called: this says the hooks the
// communicator identity needs (docs/communicator-identity.md, "The plan for every NCCL") can go in
// on every release, before they are written.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "plugin/hooks/code_hook.h"
#include "tests/unit/forked_check.h"
#include "tests/unit/hook_fixture.h"
#include "tests/unit/nccl_releases.h"

namespace {

// Never called: the hooks are undone before anything could reach it.
extern "C" int creationReplacement() { return 0; }

constexpr const char* kCreationCalls[] = {
    "ncclCommInitRank", "ncclCommInitRankConfig", "ncclCommInitAll", "ncclCommInitRankScalable",
    "ncclCommSplit",    "ncclCommShrink",         "ncclCommGrow"};

TEST(CodeHookReleases, EveryReleasesCreationCallsTakeAHook) {
  const std::string unavailable = symmem::testing::codeHooksUnavailable();
  if (!unavailable.empty()) GTEST_SKIP() << unavailable;
  std::string why;
  bool unset = false;
  const std::vector<std::filesystem::path> libs = symmem::testing::ncclReleaseFolders(&why, &unset);
  if (unset) GTEST_SKIP() << why;
  ASSERT_FALSE(libs.empty()) << why;
  for (const auto& folder : libs) {
    const std::string release = folder.filename().string();
    const std::string problems = symmem::testing::runForkedCheck([&]() -> std::string {
      const std::string path = (folder / "libnccl.so.2").string();
      void* nccl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (nccl == nullptr) return "cannot load " + path + "\n";
      std::vector<symmem::CodeHook> hooks;
      for (const char* name : kCreationCalls)
        if (void* target = dlsym(nccl, name))
          hooks.push_back({name, target, reinterpret_cast<void*>(&creationReplacement)});
      if (hooks.empty()) return "no creation call found\n";
      std::string out;
      if (hooks.size() < 3) out += "only " + std::to_string(hooks.size()) + " creation calls found\n";
      const std::vector<unsigned char> before(static_cast<unsigned char*>(hooks[0].target),
                                              static_cast<unsigned char*>(hooks[0].target) + 16);
      const symmem::CodeHookReport r = symmem::installCodeHooks(hooks);
      if (!r.installed) return out + "refused: " + r.refusal + "\n";
      std::string line = "[ info ] NCCL " + release + ": " + std::to_string(r.hooks.size()) + " creation calls hooked:";
      for (const symmem::InstalledHook& h : r.hooks) line += " " + h.name + " (" + h.moved + ");";
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
      if (symmem::undoCodeHooks() != static_cast<int>(hooks.size())) out += "not every hook was undone\n";
      if (std::memcmp(before.data(), hooks[0].target, before.size()) != 0) out += "the undo left other bytes\n";
      return out;
    });
    EXPECT_EQ(problems, "") << "NCCL " << release;
  }
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// Code hooks against tests/hook_fixture/hook_shapes.S: functions whose first bytes are shaped like
// NCCL's entry points (endbr64 + pushes, a RIP-relative lea) or like what must be refused (too short,
// a branch into the moved bytes, a jump first). Callers hold pointers taken before the hook, as a
// ctypes client does.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "plugin/code_hook.h"
#include "tests/unit/hook_fixture.h"

namespace {

using Seven = long (*)(long, long, long, long, long, long, long);
using One = long (*)(long);

constexpr long kMark = 1'000'000'000;  // what the replacements add on top of the original's answer

using Slow = long (*)(long, long, long);

// The fixture functions, and the trampolines beforeWrite hands over for them.
void* gSevenTarget = nullptr;
void* gRipTarget = nullptr;
void* gSlowTarget = nullptr;
void* gStraddleTarget = nullptr;
std::atomic<void*> gSevenOriginal{nullptr};
std::atomic<void*> gRipOriginal{nullptr};
std::atomic<void*> gSlowOriginal{nullptr};
std::atomic<void*> gStraddleOriginal{nullptr};

long sevenReplacement(long a, long b, long c, long d, long e, long f, long g) {
  return kMark + reinterpret_cast<Seven>(gSevenOriginal.load())(a, b, c, d, e, f, g);
}
long ripReplacement(long x) { return kMark + reinterpret_cast<One>(gRipOriginal.load())(x); }
long slowReplacement(long x, long one, long zero) {
  return kMark + reinterpret_cast<Slow>(gSlowOriginal.load())(x, one, zero);
}
long straddleReplacement(long x) { return kMark + reinterpret_cast<One>(gStraddleOriginal.load())(x); }
long oneReplacement(long x) { return -x; }

long sevenExpected(long a, long b, long c, long d, long e, long f, long g) {
  return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g;
}

void recordOriginal(void* target, void* original);

class CodeHooks : public ::testing::Test {
 protected:
  void SetUp() override {
#if !SYMMEM_HAVE_HOOK_FIXTURE
    GTEST_SKIP() << symmem::testing::codeHooksUnavailable();
#else
    const std::string unavailable = symmem::testing::codeHooksUnavailable();
    if (!unavailable.empty()) GTEST_SKIP() << unavailable;
    lib_ = dlopen(SYMMEM_HOOK_SHAPES_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib_, nullptr) << dlerror();
    seven_ = reinterpret_cast<Seven>(dlsym(lib_, "shapeSeven"));
    sevenAlias_ = reinterpret_cast<Seven>(dlsym(lib_, "shapeSevenAlias"));
    rip_ = reinterpret_cast<One>(dlsym(lib_, "shapeRipLea"));
    tiny_ = reinterpret_cast<One>(dlsym(lib_, "shapeTiny"));
    branchInto_ = reinterpret_cast<One>(dlsym(lib_, "shapeBranchInto"));
    jumpFirst_ = reinterpret_cast<One>(dlsym(lib_, "shapeJumpFirst"));
    slow_ = reinterpret_cast<Slow>(dlsym(lib_, "shapeSlow"));
    ASSERT_TRUE(seven_ && sevenAlias_ && rip_ && tiny_ && branchInto_ && jumpFirst_ && slow_);
    gSevenTarget = reinterpret_cast<void*>(seven_);
    gRipTarget = reinterpret_cast<void*>(rip_);
    gSlowTarget = reinterpret_cast<void*>(slow_);
    straddle_ = reinterpret_cast<One>(dlsym(lib_, "shapeStraddle"));
    ASSERT_NE(straddle_, nullptr);
    gStraddleTarget = reinterpret_cast<void*>(straddle_);
    options_.beforeWrite = &recordOriginal;
#endif
  }
  void TearDown() override {
    symmem::undoCodeHooks();
    gSevenOriginal = nullptr;
    gRipOriginal = nullptr;
  }

  symmem::CodeHook sevenHook() const {
    return {"shapeSeven", reinterpret_cast<void*>(seven_), reinterpret_cast<void*>(&sevenReplacement)};
  }
  // The first 16 bytes of a function, to show that a refusal wrote nothing.
  static std::vector<unsigned char> head(const void* f) {
    const auto* p = static_cast<const unsigned char*>(f);
    return {p, p + 16};
  }
  void expectRefused(const symmem::CodeHook& hook, const std::string& reasonPart) {
    const auto before = head(hook.target);
    const symmem::CodeHookReport r = symmem::installCodeHooks({&hook, 1}, options_);
    EXPECT_FALSE(r.installed);
    EXPECT_NE(r.refusal.find(reasonPart), std::string::npos) << r.refusal;
    EXPECT_EQ(head(hook.target), before) << "a refused hook wrote code";
  }

  void* lib_ = nullptr;
  Seven seven_ = nullptr, sevenAlias_ = nullptr;
  One rip_ = nullptr, tiny_ = nullptr, branchInto_ = nullptr, jumpFirst_ = nullptr;
  Slow slow_ = nullptr;
  One straddle_ = nullptr;
  symmem::CodeHookOptions options_;
};

void recordOriginal(void* target, void* original) {
  if (target == gSevenTarget) gSevenOriginal = original;
  if (target == gRipTarget) gRipOriginal = original;
  if (target == gSlowTarget) gSlowOriginal = original;
  if (target == gStraddleTarget) gStraddleOriginal = original;
}

TEST_F(CodeHooks, CachedPointersReachTheReplacementWithArgumentsIntact) {
  ASSERT_EQ(seven_(1, 2, 3, 4, 5, 6, 7), sevenExpected(1, 2, 3, 4, 5, 6, 7));
  const symmem::CodeHook hook = sevenHook();
  const symmem::CodeHookReport r = symmem::installCodeHooks({&hook, 1}, options_);
  ASSERT_TRUE(r.installed) << r.refusal;
  ASSERT_EQ(r.hooks.size(), 1u);
  EXPECT_NE(r.hooks[0].moved.find("endbr64 kept"), std::string::npos) << r.hooks[0].moved;
  EXPECT_EQ(r.hooks[0].original, gSevenOriginal.load()) << "beforeWrite got another trampoline";
  // The seventh argument is on the stack: a trampoline that moved the stack would lose it.
  EXPECT_EQ(seven_(1, 2, 3, 4, 5, 6, 7), kMark + sevenExpected(1, 2, 3, 4, 5, 6, 7));
  EXPECT_EQ(seven_(-9, 8, -7, 6, -5, 4, -3), kMark + sevenExpected(-9, 8, -7, 6, -5, 4, -3));
  // The weak alias is the same code, so it is hooked too (NCCL's ncclX and pncclX).
  EXPECT_EQ(sevenAlias_(1, 1, 1, 1, 1, 1, 1), kMark + 28);
  // A fresh dlsym after the hook: the same address, the same answer.
  auto again = reinterpret_cast<Seven>(dlsym(lib_, "shapeSeven"));
  EXPECT_EQ(again(0, 0, 0, 0, 0, 0, 2), kMark + 14);
}

TEST_F(CodeHooks, RipRelativeOperandsAreReaimed) {
  ASSERT_EQ(rip_(5), 40005);
  const symmem::CodeHook hook{"shapeRipLea", reinterpret_cast<void*>(rip_), reinterpret_cast<void*>(&ripReplacement)};
  const symmem::CodeHookReport r = symmem::installCodeHooks({&hook, 1}, options_);
  ASSERT_TRUE(r.installed) << r.refusal;
  EXPECT_NE(r.hooks[0].moved.find("[rip]"), std::string::npos) << r.hooks[0].moved;
  EXPECT_EQ(rip_(5), kMark + 40005);
}

TEST_F(CodeHooks, AJumpAcrossTwo16ByteWindowsIsWritten) {
  ASSERT_EQ(reinterpret_cast<uintptr_t>(straddle_) & 15, 12u);
  ASSERT_EQ(straddle_(4), 7);
  const symmem::CodeHook hook{"shapeStraddle", reinterpret_cast<void*>(straddle_),
                              reinterpret_cast<void*>(&straddleReplacement)};
  const symmem::CodeHookReport r = symmem::installCodeHooks({&hook, 1}, options_);
  ASSERT_TRUE(r.installed) << r.refusal;
  EXPECT_EQ(straddle_(4), kMark + 7);
  EXPECT_EQ(symmem::undoCodeHooks(), 1);
  EXPECT_EQ(straddle_(4), 7);
}

TEST_F(CodeHooks, IdempotentAndUndone) {
  const symmem::CodeHook hook = sevenHook();
  const symmem::CodeHookReport first = symmem::installCodeHooks({&hook, 1}, options_);
  ASSERT_TRUE(first.installed) << first.refusal;
  const auto patched = head(hook.target);
  const symmem::CodeHookReport second = symmem::installCodeHooks({&hook, 1}, options_);
  ASSERT_TRUE(second.installed) << second.refusal;
  EXPECT_EQ(second.hooks[0].original, first.hooks[0].original);
  EXPECT_EQ(head(hook.target), patched);
  EXPECT_EQ(seven_(1, 0, 0, 0, 0, 0, 0), kMark + 1) << "hooked twice would add the mark twice";
  // Another replacement for the same function is refused.
  const symmem::CodeHook other{"shapeSeven", hook.target, reinterpret_cast<void*>(&oneReplacement)};
  EXPECT_FALSE(symmem::installCodeHooks({&other, 1}, options_).installed);
  EXPECT_EQ(symmem::undoCodeHooks(), 1);
  EXPECT_EQ(seven_(1, 0, 0, 0, 0, 0, 0), 1);
}

TEST_F(CodeHooks, RefusesWhatCannotBeMovedSafely) {
  expectRefused({"shapeTiny", reinterpret_cast<void*>(tiny_), reinterpret_cast<void*>(&oneReplacement)}, "too short");
  expectRefused({"shapeBranchInto", reinterpret_cast<void*>(branchInto_), reinterpret_cast<void*>(&oneReplacement)},
                "inside the bytes the hook would move");
  expectRefused({"shapeJumpFirst", reinterpret_cast<void*>(jumpFirst_), reinterpret_cast<void*>(&oneReplacement)},
                "which cannot be moved");
  expectRefused({"mid", reinterpret_cast<char*>(seven_) + 4, reinterpret_cast<void*>(&oneReplacement)},
                "not the start of a function");
  EXPECT_EQ(tiny_(3), 3);
  EXPECT_EQ(branchInto_(3), 3);
}

TEST_F(CodeHooks, AllOrNothing) {
  const symmem::CodeHook set[] = {
      sevenHook(), {"shapeTiny", reinterpret_cast<void*>(tiny_), reinterpret_cast<void*>(&oneReplacement)}};
  const auto before = head(set[0].target);
  const symmem::CodeHookReport r = symmem::installCodeHooks(set, options_);
  EXPECT_FALSE(r.installed);
  EXPECT_NE(r.refusal.find("shapeTiny"), std::string::npos) << r.refusal;
  EXPECT_EQ(head(set[0].target), before) << "the hookable one was patched although the set was refused";
  EXPECT_EQ(seven_(1, 0, 0, 0, 0, 0, 0), 1);
}

TEST_F(CodeHooks, MissingDisassemblerIsARefusalWithItsReason) {
  options_.disassembler = "/nonexistent/libZydis.so.4.0";
  const symmem::CodeHook hook = sevenHook();
  const symmem::CodeHookReport r = symmem::installCodeHooks({&hook, 1}, options_);
  EXPECT_FALSE(r.installed);
  EXPECT_TRUE(r.refusal.find("/nonexistent/libZydis.so.4.0") != std::string::npos ||
              r.refusal.find("without the Zydis headers") != std::string::npos)
      << r.refusal;
}

TEST_F(CodeHooks, WriteProtectedCodeIsARefusalThatWritesNothing) {
  // A W^X policy: making code writable fails (the trampoline page may still be made executable).
  options_.protect = [](void* page, size_t length, int prot) {
    if (prot & PROT_WRITE && prot & PROT_EXEC) {
      errno = EACCES;
      return -1;
    }
    return mprotect(page, length, prot);
  };
  expectRefused(sevenHook(), "W^X");
  EXPECT_EQ(seven_(1, 0, 0, 0, 0, 0, 0), 1);
}

// Callers on other threads, in a tight loop through cached pointers, while hooks go in and out:
// every answer is the original's or the replacement's, and nothing crashes. shapeSlow's first bytes
// are two divisions, so callers are often parked in the middle of them and must be moved into the
// trampoline (without that move this test crashes or counts wrong answers).
TEST_F(CodeHooks, CallersOnOtherThreadsDuringThePatchNeverCrash) {
  const symmem::CodeHook set[] = {
      sevenHook(),
      {"shapeSlow", reinterpret_cast<void*>(slow_), reinterpret_cast<void*>(&slowReplacement)},
      {"shapeStraddle", reinterpret_cast<void*>(straddle_), reinterpret_cast<void*>(&straddleReplacement)}};
  std::atomic<bool> stop{false};
  std::atomic<long> calls{0}, wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&, t] {
      while (!stop.load(std::memory_order_relaxed)) {
        const long v = seven_(t, 1, 2, 3, 4, 5, 6);
        const long expected = sevenExpected(t, 1, 2, 3, 4, 5, 6);
        if (v != expected && v != kMark + expected) wrong.fetch_add(1);
        const long w = slow_(t + 7, 1, 0);
        if (w != t + 7 && w != kMark + t + 7) wrong.fetch_add(1);
        const long s = straddle_(t);
        if (s != t + 3 && s != kMark + t + 3) wrong.fetch_add(1);
        calls.fetch_add(3, std::memory_order_relaxed);
      }
    });
  }
  int parkedTotal = 0, movedTotal = 0;
  for (int cycle = 0; cycle < 300; ++cycle) {
    const symmem::CodeHookReport r = symmem::installCodeHooks(set, options_);
    ASSERT_TRUE(r.installed) << "cycle " << cycle << ": " << r.refusal;
    parkedTotal += r.threadsParked;
    movedTotal += r.threadsMoved;
    ASSERT_EQ(symmem::undoCodeHooks(), 3);
  }
  stop = true;
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(calls.load(), 1000);
  EXPECT_GE(parkedTotal, 300 * 3) << "the caller threads were not parked";
  std::printf(
      "[ info ] %ld calls during 300 hook cycles; threads parked %d times, moved out of the "
      "rewritten bytes %d times\n",
      calls.load(), parkedTotal, movedTotal);
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// Attach (GOT rebinding) against stand-in libraries built in tests/attach_fixture: libfake_nccl.so
// defines fakeAllReduce (x + 1000); the fake_app_* libraries call it through each kind of GOT slot.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "plugin/hooks/attach.h"

#if __has_include("symmem/attach_fixture_paths.h")
#include "symmem/attach_fixture_paths.h"
#define SYMMEM_HAVE_ATTACH_FIXTURE 1
#else
#define SYMMEM_HAVE_ATTACH_FIXTURE 0
#endif

namespace {

using AllReduceFn = int (*)(int);

constexpr int kRealOffset = 1000;          // what libfake_nccl's fakeAllReduce adds
constexpr int kReplacementMark = 2000000;  // what the replacement adds on top of forwarding

void* gRealAllReduce = nullptr;

// The replacement: marks the result and forwards to the real function, as the plugin's
// ncclAllReduce wrapper forwards to NCCL.
extern "C" int replacementAllReduce(int x) {
  return kReplacementMark + reinterpret_cast<AllReduceFn>(gRealAllReduce)(x);
}

const symmem::Rebinding kRebindings[] = {
    {"fakeAllReduce", reinterpret_cast<void*>(&replacementAllReduce), &gRealAllReduce}};

void* openFixture(const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(handle, nullptr) << dlerror();
  return handle;
}

template <class Fn>
Fn fixtureFunction(void* handle, const char* name) {
  void* f = handle ? dlsym(handle, name) : nullptr;
  EXPECT_NE(f, nullptr) << name;
  return reinterpret_cast<Fn>(f);
}

// The permissions column of /proc/self/maps ("r--p") for the mapping holding `address`.
std::string permissionsAt(const void* address) {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (!maps) return "";
  char line[512];
  std::string found;
  const auto a = reinterpret_cast<uintptr_t>(address);
  while (std::fgets(line, sizeof(line), maps)) {
    uintptr_t start = 0, end = 0;
    char perms[5] = {};
    if (std::sscanf(line, "%lx-%lx %4s", &start, &end, perms) == 3 && a >= start && a < end) found = perms;
  }
  std::fclose(maps);
  return found;
}

bool containsSubstring(const std::vector<std::string>& lines, const std::string& needle) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(needle) != std::string::npos; });
}

const symmem::PatchedSlot* slotIn(const symmem::AttachReport& report, const char* pathPart) {
  for (const symmem::PatchedSlot& s : report.slots)
    if (s.object.find(pathPart) != std::string::npos) return &s;
  return nullptr;
}

class Attach : public ::testing::Test {
 protected:
  void SetUp() override {
#if !SYMMEM_HAVE_ATTACH_FIXTURE
    GTEST_SKIP() << "attach fixture libraries not built";
#else
#if !defined(__x86_64__) && !defined(__aarch64__)
    GTEST_SKIP() << "GOT rebinding is implemented for x86-64 and aarch64 only";
#endif
    now_ = openFixture(SYMMEM_FAKE_APP_NOW_PATH);
    lazy_ = openFixture(SYMMEM_FAKE_APP_LAZY_PATH);
    address_ = openFixture(SYMMEM_FAKE_APP_ADDRESS_PATH);
    nowCall_ = fixtureFunction<AllReduceFn>(now_, "fakeAppCall");
    lazyCall_ = fixtureFunction<AllReduceFn>(lazy_, "fakeAppCall");
    pointerCall_ = fixtureFunction<AllReduceFn>(address_, "fakeAppCallThroughPointer");
    options_.definingLibrary = SYMMEM_FAKE_NCCL_NAME;
#endif
  }
  void TearDown() override {
    symmem::undoRebindings();
    gRealAllReduce = nullptr;
    // Every library stays loaded on purpose: a handle dropped here would leave later tests with
    // fewer objects than they expect, and the libraries are tiny.
  }

  static constexpr int kInput = 5;
  static constexpr int kReal = kInput + kRealOffset;
  static constexpr int kWrapped = kReplacementMark + kReal;

  void* now_ = nullptr;
  void* lazy_ = nullptr;
  void* address_ = nullptr;
  AllReduceFn nowCall_ = nullptr;
  AllReduceFn lazyCall_ = nullptr;
  AllReduceFn pointerCall_ = nullptr;
  symmem::AttachOptions options_;
};

TEST_F(Attach, BindNowRelroCallReachesReplacementWhichForwards) {
  ASSERT_EQ(nowCall_(kInput), kReal);
  const symmem::AttachReport report = symmem::attachRebindings(kRebindings, options_);
  EXPECT_EQ(nowCall_(kInput), kWrapped);
  EXPECT_TRUE(containsSubstring(report.patchedObjects, "libfake_app_now.so"));
  // The forward target is the stand-in NCCL's own definition.
  void* nccl = dlopen(SYMMEM_FAKE_NCCL_PATH, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(nccl, nullptr);
  EXPECT_EQ(gRealAllReduce, dlsym(nccl, "fakeAllReduce"));
  dlclose(nccl);
}

TEST_F(Attach, RelroSlotIsReadOnlyAgainAfterTheWrite) {
  const symmem::AttachReport report = symmem::attachRebindings(kRebindings, options_);
  const symmem::PatchedSlot* slot = slotIn(report, "libfake_app_now.so");
  ASSERT_NE(slot, nullptr);
  EXPECT_FALSE(slot->alreadyPatched);
  EXPECT_EQ(*slot->address, reinterpret_cast<void*>(&replacementAllReduce));
  EXPECT_EQ(permissionsAt(slot->address), "r--p");
  symmem::undoRebindings();
  EXPECT_EQ(permissionsAt(slot->address), "r--p");
}

TEST_F(Attach, LazySlotIsReboundAndKeepsItsWritablePage) {
  // Never called before attach: the slot still holds the object's lazy-binding stub.
  const symmem::AttachReport report = symmem::attachRebindings(kRebindings, options_);
  EXPECT_EQ(lazyCall_(kInput), kWrapped);
  const symmem::PatchedSlot* slot = slotIn(report, "libfake_app_lazy.so");
  ASSERT_NE(slot, nullptr);
  // Lazy .got.plt lies outside RELRO: restoring must not make it read-only, or the next lazy
  // binding in that object would fault.
  EXPECT_EQ(permissionsAt(slot->address), "rw-p");
  symmem::undoRebindings();
  EXPECT_EQ(lazyCall_(kInput), kReal);  // the stub resolves the real function again
}

TEST_F(Attach, TakenAddressInGlobDatSlotIsRebound) {
  ASSERT_EQ(pointerCall_(kInput), kReal);
  const symmem::AttachReport report = symmem::attachRebindings(kRebindings, options_);
  EXPECT_EQ(pointerCall_(kInput), kWrapped);
  auto addressOf = fixtureFunction<AllReduceFn (*)()>(address_, "fakeAppAddress");
  EXPECT_EQ(reinterpret_cast<void*>(addressOf()), reinterpret_cast<void*>(&replacementAllReduce));
  const symmem::PatchedSlot* slot = slotIn(report, "libfake_app_address.so");
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(permissionsAt(slot->address), "r--p");
}

TEST_F(Attach, SecondAttachCountsSlotsWithoutWrappingTwice) {
  const symmem::AttachReport first = symmem::attachRebindings(kRebindings, options_);
  void* forwardTarget = gRealAllReduce;
  const symmem::AttachReport second = symmem::attachRebindings(kRebindings, options_);
  EXPECT_GE(first.slotsWritten, 3);
  EXPECT_EQ(second.slotsWritten, 0);
  EXPECT_EQ(second.slotsPatched, first.slotsPatched);
  EXPECT_TRUE(std::all_of(second.slots.begin(), second.slots.end(), [](auto& s) { return s.alreadyPatched; }));
  EXPECT_EQ(gRealAllReduce, forwardTarget);
  EXPECT_EQ(nowCall_(kInput), kWrapped);
  EXPECT_EQ(symmem::reattachRebindings().slotsWritten, 0);
}

TEST_F(Attach, ForwardTargetNeverBecomesTheReplacement) {
  // No defining library named: the real target comes from what the slots hold. On a repeat every
  // slot holds the replacement, which must not be taken as the target (it would recurse forever).
  symmem::AttachOptions noLibrary;
  symmem::attachRebindings(kRebindings, noLibrary);
  ASSERT_NE(gRealAllReduce, nullptr);
  gRealAllReduce = reinterpret_cast<void*>(&replacementAllReduce);
  symmem::attachRebindings(kRebindings, noLibrary);
  EXPECT_NE(gRealAllReduce, reinterpret_cast<void*>(&replacementAllReduce));
  EXPECT_EQ(nowCall_(kInput), kWrapped);
  EXPECT_EQ(pointerCall_(kInput), kWrapped);
}

TEST_F(Attach, UndoRestoresTheRealFunction) {
  symmem::attachRebindings(kRebindings, options_);
  ASSERT_EQ(nowCall_(kInput), kWrapped);
  EXPECT_GE(symmem::undoRebindings(), 3);
  EXPECT_EQ(nowCall_(kInput), kReal);
  EXPECT_EQ(pointerCall_(kInput), kReal);
  EXPECT_EQ(symmem::undoRebindings(), 0);
  EXPECT_EQ(symmem::reattachRebindings().slotsPatched, 0);  // undo also forgets the last call
}

TEST_F(Attach, DefinitionInsideAnotherObjectIsReportedNotCovered) {
  void* definer = openFixture(SYMMEM_FAKE_DEFINES_PATH);
  auto definerCall = fixtureFunction<AllReduceFn>(definer, "fakeDefinerCall");
  const symmem::AttachReport report = symmem::attachRebindings(kRebindings, options_);
  EXPECT_TRUE(containsSubstring(report.notCovered, "defined inside"));
  EXPECT_TRUE(containsSubstring(report.notCovered, "libfake_defines.so"));
  EXPECT_EQ(definerCall(kInput), kInput + 5000);  // its own copy, untouched
  EXPECT_EQ(nowCall_(kInput), kWrapped);          // the dynamic callers are still covered
}

TEST_F(Attach, CleanProcessReportsNothingNotCovered) {
  const symmem::AttachReport report = symmem::attachRebindings(kRebindings, options_);
  for (const std::string& line : report.notCovered)
    if (line.find("libfake_defines.so") == std::string::npos) ADD_FAILURE() << line;
  EXPECT_TRUE(report.unreferenced.empty());
}

TEST_F(Attach, SkippedObjectsKeepTheRealFunction) {
  options_.skipObjectsNamed = {"libfake_app_lazy.so"};
  options_.skipObjectsContaining = {reinterpret_cast<const void*>(nowCall_)};
  symmem::attachRebindings(kRebindings, options_);
  EXPECT_EQ(nowCall_(kInput), kReal);
  EXPECT_EQ(lazyCall_(kInput), kReal);
  EXPECT_EQ(pointerCall_(kInput), kWrapped);
}

TEST_F(Attach, PredicateCanLeaveAnObjectAlone) {
  options_.shouldPatch = [](std::string_view path) {
    return path.find("libfake_app_address") == std::string_view::npos;
  };
  const symmem::AttachReport report = symmem::attachRebindings(kRebindings, options_);
  EXPECT_EQ(pointerCall_(kInput), kReal);
  EXPECT_EQ(nowCall_(kInput), kWrapped);
  EXPECT_FALSE(containsSubstring(report.patchedObjects, "libfake_app_address.so"));
}

TEST_F(Attach, MissingDefiningLibraryRebindsNothing) {
  options_.definingLibrary = "libfake_not_loaded.so";
  const symmem::AttachReport report = symmem::attachRebindings(kRebindings, options_);
  EXPECT_EQ(report.slotsPatched, 0);
  EXPECT_TRUE(containsSubstring(report.notCovered, "libfake_not_loaded.so is not loaded"));
  EXPECT_EQ(nowCall_(kInput), kReal);
  EXPECT_EQ(gRealAllReduce, nullptr);
}

// Rebinding::real: "the real function, when the caller already knows it: then no lookup by name is
// made". The known function here (libfake_defines' fakeDefinerCall, x + 5000) differs from what a
// lookup of fakeAllReduce would find (x + 1000), and the named defining library is not even loaded:
// only a kept `real` can make the call forward, and to the right place, also after a re-attach.
TEST_F(Attach, AGivenRealFunctionIsUsedWithoutALookup) {
  void* definer = openFixture(SYMMEM_FAKE_DEFINES_PATH);
  void* known = definer ? dlsym(definer, "fakeDefinerCall") : nullptr;
  ASSERT_NE(known, nullptr);
  const symmem::Rebinding withReal[] = {
      {"fakeAllReduce", reinterpret_cast<void*>(&replacementAllReduce), &gRealAllReduce, known}};
  options_.definingLibrary = "libfake_not_loaded.so";
  const symmem::AttachReport report = symmem::attachRebindings(withReal, options_);
  EXPECT_FALSE(containsSubstring(report.notCovered, "is not loaded")) << "no lookup was to be made";
  EXPECT_EQ(gRealAllReduce, known);
  EXPECT_EQ(nowCall_(kInput), kReplacementMark + kInput + 5000);
  gRealAllReduce = nullptr;  // a re-attach fills it again from the kept value
  symmem::reattachRebindings();
  EXPECT_EQ(gRealAllReduce, known);
  EXPECT_EQ(lazyCall_(kInput), kReplacementMark + kInput + 5000);
}

TEST_F(Attach, UnimportedAndUndefinedSymbolsAreReported) {
  const symmem::Rebinding rebindings[] = {
      kRebindings[0],
      {"fakeGroupEnd", reinterpret_cast<void*>(&replacementAllReduce), nullptr},  // nobody imports it
      {"fakeMissing", reinterpret_cast<void*>(&replacementAllReduce), nullptr}};  // nobody defines it
  const symmem::AttachReport report = symmem::attachRebindings(rebindings, options_);
  EXPECT_EQ(report.unreferenced, std::vector<std::string>{"fakeGroupEnd"});
  EXPECT_TRUE(containsSubstring(report.notCovered, "fakeMissing: no usable definition"));
  EXPECT_EQ(nowCall_(kInput), kWrapped);
}

TEST_F(Attach, ObjectLoadedLaterIsCoveredByReattach) {
  symmem::attachRebindings(kRebindings, options_);
  void* late = openFixture(SYMMEM_FAKE_APP_LATE_PATH);
  auto lateCall = fixtureFunction<AllReduceFn>(late, "fakeAppCall");
  EXPECT_TRUE(symmem::loadedObjectsChangedSinceAttach());
  EXPECT_EQ(lateCall(kInput), kReal);  // loaded after attach: not yet covered
  const symmem::AttachReport report = symmem::reattachRebindings();
  EXPECT_EQ(report.slotsWritten, 1);
  EXPECT_EQ(lateCall(kInput), kWrapped);
  EXPECT_FALSE(symmem::loadedObjectsChangedSinceAttach());
  symmem::undoRebindings();
  dlclose(late);  // unloaded again so a repeated run sees it load after attach once more
}

}  // namespace

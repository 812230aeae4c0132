// SPDX-License-Identifier: Apache-2.0
// Groups as the interposer handles them (plugin/interpose/interposer_group.cpp): held symmetric all-reduces
// launched at the outermost ncclGroupEnd before NCCL's part, setup of communicators first met in a
// group run after NCCL's group end and together, errors, nesting, simulated ends, NCCL 2.31's
// ncclAllReduceConfig and non-blocking communicators. The order of events across NCCL and the
// symmetric kernels is checked exactly.
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <thread>

#include "plugin/interpose/coll_config.h"
#include "tests/unit/interposer_fakes.h"

namespace symmem {
namespace {

using Events = std::vector<std::string>;

// What NCCL_COLLCONFIG_INITIALIZER gives (2.32), with a profiler tag, which asks nothing of the execution.
CollConfigLayout unsetConfig() {
  return {sizeof(CollConfigLayout),
          kCollConfigMagic,
          23200,
          nullptr,
          INT_MIN,
          INT_MIN,
          INT_MIN,
          INT_MIN,
          nullptr,
          1,
          INT_MIN,
          42,
          nullptr};
}

std::string ev(const char* what, const void* comm) {
  char b[64];
  std::snprintf(b, sizeof(b), "%s %p", what, comm);
  return b;
}

class InterposerGroupTest : public InterposerTest {
 protected:
  // One grouped all-reduce of `count` floats per communicator, as XLA and nccl-tests -g N issue them.
  ncclResult_t group(Interposer& ip, std::initializer_list<ncclComm_t> comms, size_t count = 8) {
    EXPECT_EQ(ip.groupStart(), ncclSuccess);
    for (ncclComm_t c : comms) EXPECT_EQ(ip.allReduce(buf, buf, count, ncclFloat32, ncclSum, c, nullptr), ncclSuccess);
    return ip.groupEnd();
  }
};

// XLA: every collective in its own group. The first group meets the communicator: NCCL takes the call,
// and setup runs after NCCL's group end (never inside it, where its exchange would be swallowed).
// From the next group on, the symmetric kernel runs, launched before NCCL's group end.
TEST_F(InterposerGroupTest, EveryCallInItsOwnGroupTakesTheSymmetricPathFromTheSecondGroup) {
  Interposer ip = make(true);
  ncclComm_t a = fakeComm(0x5000, 2);
  EXPECT_EQ(group(ip, {a}), ncclSuccess);
  EXPECT_EQ(FakeNccl::events, (Events{"start", ev("nccl", a), "end", ev("setup", a)}));
  FakeNccl::events.clear();
  EXPECT_EQ(group(ip, {a}), ncclSuccess);
  EXPECT_EQ(group(ip, {a}), ncclSuccess);
  EXPECT_EQ(FakeNccl::events, (Events{"start", ev("sym", a), "end", "start", ev("sym", a), "end"}));
  EXPECT_EQ(setups, 1);
}

// nccl-tests -g 2, ncclCommInitAll: one thread, one group, one all-reduce per communicator, one GPU
// each. Each setup waits for the other's exchange; run one after the other they would wait forever
// (here: the hook reports it), so they run side by side.
TEST_F(InterposerGroupTest, OneThreadDrivingTwoRanksSetsThemUpTogether) {
  Interposer ip = make(true);
  ncclComm_t a = fakeComm(0x5100, 2), b = fakeComm(0x5200, 2);
  FakeNccl::devices[b] = 1;
  std::atomic<int> arrived{0};
  std::atomic<bool> waitedAlone{false};
  setupHook = [&](ncclComm_t) {
    ++arrived;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (arrived.load() < 2 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (arrived.load() < 2) waitedAlone = true;
  };
  EXPECT_EQ(group(ip, {a, b}), ncclSuccess);
  EXPECT_FALSE(waitedAlone) << "one setup waited for a peer's exchange that nothing was posting";
  EXPECT_EQ(setups, 2);
  FakeNccl::events.clear();
  EXPECT_EQ(group(ip, {a, b}), ncclSuccess);
  EXPECT_EQ(FakeNccl::events, (Events{"start", ev("sym", a), ev("sym", b), "end"}));
}

// Two communicators on one GPU first met in one group: their setups run one after the other, in issue
// order, on every process alike (NCCL documents collectives of several communicators on one device
// posted in different orders across ranks as a deadlock). Side by side, their order would be chance.
TEST_F(InterposerGroupTest, CommunicatorsOnOneGpuSetUpInIssueOrder) {
  Interposer ip = make(true);
  ncclComm_t a = fakeComm(0x5a00, 2), b = fakeComm(0x5b00, 2), c = fakeComm(0x5c00, 2);
  FakeNccl::devices[c] = 1;
  std::mutex m;
  std::vector<ncclComm_t> order;
  std::atomic<int> running{0};
  std::atomic<bool> overlapped{false};
  setupHook = [&](ncclComm_t comm) {
    if (comm == c) return;
    if (running.fetch_add(1) != 0) overlapped = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // room for a second one to start
    {
      std::lock_guard<std::mutex> lock(m);
      order.push_back(comm);
    }
    running.fetch_sub(1);
  };
  EXPECT_EQ(group(ip, {b, c, a}), ncclSuccess);
  EXPECT_FALSE(overlapped) << "two setups on one GPU ran at once";
  EXPECT_EQ(order, (std::vector<ncclComm_t>{b, a})) << "not in issue order";
  EXPECT_EQ(setups, 3);
}

// A group mixing held all-reduces with what NCCL takes on the same communicator and stream: NCCL's
// calls join its group when issued, the held ones run in issue order before NCCL's group end.
TEST_F(InterposerGroupTest, MixedGroupKeepsIssueOrderAndPutsTheSymmetricKernelsFirst) {
  Interposer ip = make(true);
  ncclComm_t a = fakeComm(0x5300, 4);
  EXPECT_EQ(group(ip, {a}), ncclSuccess);  // first sight: setup
  FakeNccl::events.clear();
  EXPECT_EQ(ip.groupStart(), ncclSuccess);
  EXPECT_EQ(ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr), ncclSuccess);          // one-shot
  EXPECT_EQ(ip.allReduce(buf, buf, 1 << 20, ncclFloat32, ncclSum, a, nullptr), ncclSuccess);    // 4 MiB: NCCL
  EXPECT_EQ(ip.allReduce(buf, buf, 8, ncclInt32, ncclSum, a, nullptr), ncclSuccess);            // int32: NCCL
  EXPECT_EQ(ip.allReduce(buf, buf, 64 * 1024, ncclFloat32, ncclSum, a, nullptr), ncclSuccess);  // two-shot
  EXPECT_EQ(FakeNccl::events, (Events{"start", ev("nccl", a), ev("nccl", a)})) << "nothing symmetric before the end";
  EXPECT_EQ(ip.groupEnd(), ncclSuccess);
  EXPECT_EQ(FakeNccl::events, (Events{"start", ev("nccl", a), ev("nccl", a), ev("sym", a), ev("sym", a), "end"}));
  EXPECT_EQ(FakeSymmetric::lastAlgorithm, kernels::Algorithm::TwoShot) << "issue order: the two-shot call last";
}

// Only the outermost end launches; inner ends only close NCCL's inner group.
TEST_F(InterposerGroupTest, NestedGroupsLaunchAtTheOutermostEnd) {
  Interposer ip = make(true);
  ncclComm_t a = fakeComm(0x5400, 2);
  EXPECT_EQ(group(ip, {a}), ncclSuccess);
  FakeNccl::events.clear();
  EXPECT_EQ(ip.groupStart(), ncclSuccess);
  EXPECT_EQ(ip.groupStart(), ncclSuccess);
  EXPECT_EQ(ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr), ncclSuccess);
  EXPECT_EQ(ip.groupEnd(), ncclSuccess);
  EXPECT_EQ(FakeSymmetric::calls, 0) << "launched at an inner end";
  EXPECT_EQ(ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr), ncclSuccess);
  EXPECT_EQ(ip.groupEnd(), ncclSuccess);
  EXPECT_EQ(FakeNccl::events, (Events{"start", "start", "end", ev("sym", a), ev("sym", a), "end"}));
  // Out of every group again: an ungrouped call runs at once.
  EXPECT_EQ(ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr), ncclSuccess);
  EXPECT_EQ(FakeSymmetric::calls, 3);
}

// ncclGroupEnd returns the group's errors: NCCL's first, then the symmetric path's. A call the kernels
// cannot take still joins NCCL's group (open until after the held calls).
TEST_F(InterposerGroupTest, GroupEndReturnsTheGroupsErrors) {
  Interposer ip = make(true);
  ncclComm_t a = fakeComm(0x5500, 2);
  EXPECT_EQ(group(ip, {a}), ncclSuccess);
  FakeNccl::groupEndAnswer = ncclRemoteError;
  EXPECT_EQ(group(ip, {a}), ncclRemoteError);
  FakeNccl::groupEndAnswer = ncclSuccess;
  FakeSymmetric::answer = kernels::Status::PeerTimeout;
  EXPECT_EQ(group(ip, {a}), ncclSystemError);
  FakeSymmetric::answer = kernels::Status::Unsupported;
  FakeNccl::events.clear();
  EXPECT_EQ(group(ip, {a}), ncclSuccess);
  EXPECT_EQ(FakeNccl::events, (Events{"start", ev("sym", a), ev("nccl", a), "end"}));
}

// A held call that throws once launched: the held calls after it are still launched (their peers' are,
// and wait for them), NCCL's group is ended exactly once, and the group returns an error. Nothing is
// handed to NCCL a second time.
TEST_F(InterposerGroupTest, AHeldCallThatThrowsLeavesTheRestLaunchedAndNcclsGroupEndedOnce) {
  Interposer ip = make(true);
  ncclComm_t a = fakeComm(0x5d00, 2), b = fakeComm(0x5e00, 2), c = fakeComm(0x5f00, 2);
  EXPECT_EQ(group(ip, {a, b, c}), ncclSuccess);  // first sight: setups
  FakeNccl::events.clear();
  FakeNccl::allReduces = FakeNccl::groupEnds = 0;
  FakeSymmetric::throwAtCall = FakeSymmetric::calls + 2;  // the second held call
  ncclResult_t r = ncclSuccess;
  EXPECT_NO_THROW(r = group(ip, {a, b, c}));
  EXPECT_EQ(r, ncclInternalError);
  EXPECT_EQ(FakeNccl::events, (Events{"start", ev("sym", a), ev("sym", b), ev("sym", c), "end"}));
  EXPECT_EQ(FakeNccl::groupEnds, 1);
  EXPECT_EQ(FakeNccl::allReduces, 0);
  FakeNccl::events.clear();
  EXPECT_EQ(group(ip, {a}), ncclSuccess);
  EXPECT_EQ(FakeNccl::events, (Events{"start", ev("sym", a), "end"})) << "the plugin's group was left open";
}

// A simulated end launches nothing: the held calls are handed to NCCL so that it estimates the group
// as issued, and the plugin's group is closed with NCCL's.
TEST_F(InterposerGroupTest, SimulatedEndHandsHeldCallsToNcclAndClosesTheGroup) {
  Interposer ip = make(true);
  ncclComm_t a = fakeComm(0x5600, 2), b = fakeComm(0x5700, 2);
  EXPECT_EQ(group(ip, {a}), ncclSuccess);
  FakeNccl::events.clear();
  EXPECT_EQ(ip.groupStart(), ncclSuccess);
  EXPECT_EQ(ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr), ncclSuccess);
  EXPECT_EQ(ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, b, nullptr), ncclSuccess);  // first sight of b
  EXPECT_EQ(ip.groupSimulateEnd(nullptr), ncclSuccess);
  EXPECT_EQ(FakeNccl::events, (Events{"start", ev("nccl", b), ev("nccl", a), "simulate"}));
  EXPECT_EQ(setups, 1) << "a simulated group sets nothing up";
  EXPECT_EQ(FakeSymmetric::calls, 0);
  FakeNccl::events.clear();
  EXPECT_EQ(group(ip, {a}), ncclSuccess);
  EXPECT_EQ(FakeNccl::events, (Events{"start", ev("sym", a), "end"})) << "the plugin's group was left open";
}

// Capture in a group: no setup (as outside groups); calls stay on NCCL until an eager group.
TEST_F(InterposerGroupTest, NoSetupForAGroupBeingCaptured) {
  Interposer ip = make(true, /*capturing=*/true);
  ncclComm_t a = fakeComm(0x5800, 2);
  EXPECT_EQ(group(ip, {a}), ncclSuccess);
  EXPECT_EQ(setups, 0);
  EXPECT_EQ(FakeNccl::allReduces, 1);
}

// A non-blocking communicator: ncclGroupEnd's ncclInProgress is returned as NCCL gave it; the setup
// after the group waits until NCCL has enqueued its part (ncclCommGetAsyncError leaves ncclInProgress)
// before posting its exchange; later groups hold and launch as for blocking communicators.
TEST_F(InterposerGroupTest, NonBlockingCommunicatorReturnsInProgressAndSetsUpAfterNcclsPart) {
  Interposer ip = make(true);
  ncclComm_t a = fakeComm(0x5900, 2);
  FakeNccl::groupEndAnswer = ncclInProgress;
  FakeNccl::inProgressPolls = 3;
  EXPECT_EQ(group(ip, {a}), ncclInProgress);
  EXPECT_EQ(setups, 1);
  EXPECT_EQ(FakeNccl::inProgressPolls, 0) << "setup did not wait for NCCL's part of the group";
  FakeNccl::events.clear();
  EXPECT_EQ(group(ip, {a}), ncclInProgress);
  EXPECT_EQ(FakeNccl::events, (Events{"start", ev("sym", a), "end"}));
}

// NCCL 2.31's ncclAllReduceConfig: a configuration asking nothing is decided like ncclAllReduce (in and
// out of groups); one that forces anything goes to NCCL with its configuration, unchanged.
TEST_F(InterposerGroupTest, ConfigEntryPointDecidesPlainConfigurationsAndForwardsForcingOnes) {
  Interposer ip = make(true);
  ncclComm_t a = fakeComm(0x5a00, 2);
  CollConfigLayout config = unsetConfig();
  EXPECT_EQ(ip.allReduceConfig(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr, nullptr), ncclSuccess);
  EXPECT_EQ(ip.allReduceConfig(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr, &config), ncclSuccess);
  EXPECT_EQ(FakeSymmetric::calls, 2);
  EXPECT_EQ(FakeNccl::allReduceConfigs, 0);
  // Decided for NCCL by the table (4 MiB): NCCL gets the call with its configuration.
  EXPECT_EQ(ip.allReduceConfig(buf, buf, 1 << 20, ncclFloat32, ncclSum, a, nullptr, &config), ncclSuccess);
  EXPECT_EQ(FakeNccl::allReduceConfigs, 1);
  config.maxCTAs = 4;
  EXPECT_EQ(ip.allReduceConfig(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr, &config), ncclSuccess);
  EXPECT_EQ(FakeNccl::allReduceConfigs, 2);
  EXPECT_EQ(FakeNccl::allReduces, 0) << "a forced call must reach NCCL's ncclAllReduceConfig, not ncclAllReduce";
  config.maxCTAs = INT_MIN;
  EXPECT_EQ(ip.groupStart(), ncclSuccess);
  EXPECT_EQ(ip.allReduceConfig(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr, &config), ncclSuccess);
  EXPECT_EQ(FakeSymmetric::calls, 2) << "held inside the group";
  EXPECT_EQ(ip.groupEnd(), ncclSuccess);
  EXPECT_EQ(FakeSymmetric::calls, 3);
}

// The launch-completion event is a local CUDA object: one rank may pass one where its peers pass
// none. It must not decide the route (one rank on NCCL while its peers launch the symmetric kernel hangs
// them all): with and without it, in and out of groups, the call takes the same path, and the event is
// recorded right after the symmetric kernel (in a group: after the held call is launched).
TEST_F(InterposerGroupTest, ALaunchCompletionEventDoesNotChangeTheRoute) {
  Interposer ip = make(true);
  ncclComm_t a = fakeComm(0x6a00, 2);
  CollConfigLayout without = unsetConfig();
  CollConfigLayout with = unsetConfig();
  void* event = reinterpret_cast<void*>(0xe1);
  with.launchCompletionEvent = event;
  EXPECT_EQ(ip.allReduceConfig(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr, &without), ncclSuccess);
  EXPECT_EQ(ip.allReduceConfig(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr, &with), ncclSuccess);
  EXPECT_EQ(ip.groupStart(), ncclSuccess);
  EXPECT_EQ(ip.allReduceConfig(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr, &with), ncclSuccess);
  EXPECT_EQ(ip.allReduceConfig(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr, &without), ncclSuccess);
  EXPECT_EQ(ip.groupEnd(), ncclSuccess);
  EXPECT_EQ(FakeSymmetric::calls, 4);
  EXPECT_EQ(FakeNccl::allReduceConfigs, 0) << "the rank with an event left its peers for NCCL";
  EXPECT_EQ(FakeNccl::events, (Events{ev("setup", a), ev("sym", a), ev("sym", a), ev("event", event), "start",
                                      ev("sym", a), ev("event", event), ev("sym", a), "end"}));
  // A call NCCL takes (4 MiB: the table's) gets its configuration back, event included: NCCL records it.
  EXPECT_EQ(ip.allReduceConfig(buf, buf, 1 << 20, ncclFloat32, ncclSum, a, nullptr, &with), ncclSuccess);
  EXPECT_EQ(FakeNccl::allReduceConfigs, 1);
  EXPECT_EQ(FakeNccl::events.back(), ev("nccl-config", a));
  // 2.31's struct has no event: whatever lies past its end is not read as one.
  with.size = kCollConfigSize2_31;
  FakeNccl::events.clear();
  EXPECT_EQ(ip.allReduceConfig(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr, &with), ncclSuccess);
  EXPECT_EQ(FakeNccl::events, (Events{ev("sym", a)}));
}

// A record that fails is the call's CUDA error, said once per communicator like a failed launch; the
// kernel was launched, so the route stays: nothing is handed to NCCL.
TEST_F(InterposerGroupTest, AFailedEventRecordIsTheCallsCudaErrorNotAnotherRoute) {
  std::vector<std::string> warnings;
  setLogSinkForTesting([&](LogLevel level, const std::string& text) {
    if (level == LogLevel::Warn) warnings.push_back(text);
  });
  Interposer ip = make(true);
  ncclComm_t a = fakeComm(0x6b00, 2);
  CollConfigLayout with = unsetConfig();
  with.launchCompletionEvent = reinterpret_cast<void*>(0xe2);
  FakeSymmetric::recordAnswer = kernels::Status::CudaError;
  EXPECT_EQ(ip.allReduceConfig(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr, &with), ncclUnhandledCudaError);
  EXPECT_EQ(ip.groupStart(), ncclSuccess);
  EXPECT_EQ(ip.allReduceConfig(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr, &with), ncclSuccess);
  EXPECT_EQ(ip.groupEnd(), ncclUnhandledCudaError);
  EXPECT_EQ(FakeSymmetric::calls, 2);
  EXPECT_EQ(FakeNccl::allReduceConfigs + FakeNccl::allReduces, 0);
  EXPECT_EQ(FakeNccl::groupEnds, 1);
  setLogSinkForTesting({});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("launch-completion event"), std::string::npos) << warnings[0];
}

TEST(CollConfig, TheCompletionEventIsReadFrom2_32sStructOnly) {
  void* event = reinterpret_cast<void*>(0xe3);
  CollConfigLayout c = unsetConfig();
  EXPECT_EQ(completionEventOf(nullptr), nullptr);
  EXPECT_EQ(completionEventOf(&c), nullptr);
  c.launchCompletionEvent = event;
  EXPECT_EQ(completionEventOf(&c), event);
  c.size = kCollConfigSize2_31;
  EXPECT_EQ(completionEventOf(&c), nullptr) << "2.31's struct ends before the field";
  c.size = 96;
  EXPECT_EQ(completionEventOf(&c), nullptr) << "a size this code does not know";
  c.size = kCollConfigSize2_32;
  c.magic = 0;
  EXPECT_EQ(completionEventOf(&c), nullptr) << "not NCCL's magic";
}

TEST(CollConfig, TheLaunchCompletionEventDoesNotDecide) {
  CollConfigLayout c = unsetConfig();
  c.launchCompletionEvent = reinterpret_cast<void*>(0xe1);
  EXPECT_TRUE(judgeCollConfig(&c).symmetricAllowed) << judgeCollConfig(&c).why;
  c.maxCTAs = 4;  // what every rank passes alike still decides
  EXPECT_FALSE(judgeCollConfig(&c).symmetricAllowed);
}

TEST(CollConfig, OnlyAConfigurationAskingNothingAllowsTheSymmetricPath) {
  const CollConfigLayout plain = unsetConfig();
  EXPECT_TRUE(judgeCollConfig(nullptr).symmetricAllowed);
  EXPECT_TRUE(judgeCollConfig(&plain).symmetricAllowed);
  CollConfigLayout c = plain;
  c.size = kCollConfigSize2_31;  // 2.31's struct: no launch-completion event, whatever follows it
  c.launchCompletionEvent = reinterpret_cast<void*>(0x1);
  EXPECT_TRUE(judgeCollConfig(&c).symmetricAllowed);
  const char* empty = "";
  struct Case {
    void (*set)(CollConfigLayout&, const char*);
    std::string why;
  };
  const std::vector<Case> cases = {
      {[](CollConfigLayout& x, const char*) { x.magic = 0; }, "magic"},
      {[](CollConfigLayout& x, const char*) { x.size = 96; }, "size"},
      {[](CollConfigLayout& x, const char*) { x.size = 8; }, "size"},
      {[](CollConfigLayout& x, const char*) { x.ext = &x; }, "vendor extensions"},
      {[](CollConfigLayout& x, const char*) { x.minCTAs = 1; }, "a CTA count"},
      {[](CollConfigLayout& x, const char*) { x.maxCTAs = 8; }, "a CTA count"},
      {[](CollConfigLayout& x, const char*) { x.nvlsCTAs = 2; }, "a CTA count"},
      {[](CollConfigLayout& x, const char*) { x.cgaClusterSize = 2; }, "a cluster size"},
      {[](CollConfigLayout& x, const char*) { x.algSelection = "RING"; }, "an algorithm selection"},
      {[](CollConfigLayout& x, const char*) { x.CTAPolicy = 0; }, "a CTA policy"},
  };
  for (const Case& k : cases) {
    CollConfigLayout x = plain;
    k.set(x, empty);
    const CollConfigVerdict v = judgeCollConfig(&x);
    EXPECT_FALSE(v.symmetricAllowed) << k.why;
    EXPECT_NE(std::string(v.why).find(k.why), std::string::npos) << v.why;
  }
  c = plain;
  c.algSelection = empty;  // "" is automatic selection
  EXPECT_TRUE(judgeCollConfig(&c).symmetricAllowed);
}

}  // namespace
}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
// The interposer's bookkeeping with a stand-in NCCL and a stand-in setup: which calls are forwarded,
// when setup runs, what teardown forgets, how kernel errors surface. No GPU needed.
#include <gtest/gtest.h>

#include "tests/unit/interposer_fakes.h"

namespace symmem {
namespace {

TEST_F(InterposerTest, IneligibleCallsGoStraightToNcclWithoutSetup) {
  Interposer ip = make(true);
  ncclComm_t comm = fakeComm(0x1000, 4);
  EXPECT_EQ(ip.allReduce(buf, buf, 0, ncclBfloat16, ncclSum, comm, nullptr), ncclSuccess);  // empty
  EXPECT_EQ(ip.allReduce(buf, buf, 4, ncclInt32, ncclSum, comm, nullptr), ncclSuccess);     // dtype
  EXPECT_EQ(ip.allReduce(buf, buf, 4, ncclFloat64, ncclSum, comm, nullptr), ncclSuccess);   // dtype
  EXPECT_EQ(ip.allReduce(buf, buf, 4, ncclFloat32, ncclAvg, comm, nullptr), ncclSuccess);   // op
  EXPECT_EQ(ip.allReduce(buf, buf, 4, ncclFloat32, static_cast<ncclRedOp_t>(7), comm, nullptr),
            ncclSuccess);  // user op
  EXPECT_EQ(FakeNccl::allReduces, 5);
  EXPECT_EQ(setups, 0);
  EXPECT_EQ(ip.liveCommunicators(), 0u);
}

TEST_F(InterposerTest, FirstEligibleCallSetsUpOnceThenRoutesByTable) {
  Interposer ip = make(true);
  ncclComm_t comm = fakeComm(0x2000, 4);
  // 12.0 pcie-switch, 4 ranks: one-shot pull <= 64 KiB, two-shot staged <= 512 KiB.
  EXPECT_EQ(ip.allReduce(buf, buf, 8, ncclBfloat16, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(setups, 1);
  EXPECT_EQ(FakeSymmetric::calls, 1);
  EXPECT_EQ(FakeSymmetric::lastAlgorithm, kernels::Algorithm::OneShot);
  EXPECT_EQ(FakeSymmetric::lastVariant, SymVariant::Pull) << "the band's variant reaches the kernels";
  EXPECT_EQ(ip.allReduce(buf, buf, 64 * 1024, ncclFloat32, ncclMax, comm, nullptr), ncclSuccess);  // 256 KiB
  EXPECT_EQ(FakeSymmetric::lastAlgorithm, kernels::Algorithm::TwoShot);
  EXPECT_EQ(FakeSymmetric::lastVariant, SymVariant::Staged);
  EXPECT_EQ(ip.allReduce(buf, buf, 1 << 20, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);  // 4 MiB: NCCL
  EXPECT_EQ(setups, 1) << "setup runs once per communicator";
  EXPECT_EQ(FakeSymmetric::calls, 2);
  EXPECT_EQ(FakeNccl::allReduces, 1);
}

TEST_F(InterposerTest, CommunicatorThatCannotUseThePathStaysOnNccl) {
  Interposer ip = make(false);
  ncclComm_t comm = fakeComm(0x3000, 2);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ip.allReduce(buf, buf, 8, ncclFloat16, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(setups, 1) << "a failed setup is remembered, not retried per call";
  EXPECT_EQ(FakeNccl::allReduces, 3);
  EXPECT_EQ(ip.liveCommunicators(), 1u);
}

TEST_F(InterposerTest, SingleRankNeedsNoExchange) {
  Interposer ip = make(true);
  ncclComm_t comm = fakeComm(0x3100, 1);
  EXPECT_EQ(ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(setups, 0);
  EXPECT_EQ(FakeNccl::allReduces, 1);
}

TEST_F(InterposerTest, NoSetupDuringCapture) {
  Interposer capturing = make(true, /*capturing=*/true);
  ncclComm_t comm = fakeComm(0x4000, 2);
  EXPECT_EQ(capturing.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(setups, 0);
  EXPECT_EQ(capturing.liveCommunicators(), 0u) << "setup waits for an eager call";
  EXPECT_EQ(FakeNccl::allReduces, 1);
}

// Whether a non-blocking communicator is still initialising depends on timing, which differs between
// ranks: setup waits for it instead of forwarding (forwarding on one rank while another starts the
// setup exchange would pair different collectives).
TEST_F(InterposerTest, NonBlockingInitIsWaitedForNotForwarded) {
  Interposer eager = make(true);
  ncclComm_t comm = fakeComm(0x4100, 2);
  FakeNccl::inProgressPolls = 3;
  EXPECT_EQ(eager.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(setups, 1);
  EXPECT_GE(FakeNccl::asyncPolls, 4);
  EXPECT_EQ(FakeNccl::allReduces, 0);
  EXPECT_EQ(FakeSymmetric::calls, 1);
  // A communicator whose initialisation failed is left to NCCL, which reports the error.
  ncclComm_t broken = fakeComm(0x4200, 2);
  FakeNccl::asyncState = ncclInternalError;
  EXPECT_EQ(eager.allReduce(buf, buf, 8, ncclFloat32, ncclSum, broken, nullptr), ncclSuccess);
  EXPECT_EQ(setups, 1);
  EXPECT_EQ(FakeNccl::allReduces, 1);
}

TEST_F(InterposerTest, TeardownForgetsTheCommunicatorSoAReusedAddressStartsFresh) {
  Interposer ip = make(true);
  ncclComm_t comm = fakeComm(0x6000, 2);
  ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr);
  EXPECT_EQ(ip.liveCommunicators(), 1u);
  EXPECT_EQ(ip.commDestroy(comm), ncclSuccess);
  EXPECT_EQ(ip.liveCommunicators(), 0u);
  EXPECT_EQ(FakeNccl::destroys, 1);
  ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr);
  EXPECT_EQ(setups, 2) << "same address, new communicator: set up again";
  EXPECT_EQ(ip.commAbort(comm), ncclSuccess);
  EXPECT_EQ(ip.liveCommunicators(), 0u);
  ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr);
  EXPECT_EQ(ip.commFinalize(comm), ncclSuccess);
  EXPECT_EQ(ip.liveCommunicators(), 0u);
  EXPECT_EQ(FakeNccl::aborts, 1);
  EXPECT_EQ(FakeNccl::finalizes, 1);
  // Revoke does not exist in this stand-in NCCL: the call reports it, after forgetting the state.
  ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr);
  EXPECT_EQ(ip.commRevoke(comm, 0), ncclInvalidUsage);
  EXPECT_EQ(ip.liveCommunicators(), 0u);
}

// Abort runs while peers may be dead and the plugin's kernels stuck waiting for them: the kernels are
// told to stop before NCCL's abort runs, and the state is released (freed once the kernels have ended,
// which the kernels layer waits for, bounded).
TEST_F(InterposerTest, AbortStopsTheKernelsThenFrees) {
  Interposer ip = make(true);
  ncclComm_t a = fakeComm(0x6100, 2), b = fakeComm(0x6200, 2);
  ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, a, nullptr);
  ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, b, nullptr);
  EXPECT_EQ(ip.commAbort(a), ncclSuccess);
  EXPECT_EQ(FakeNccl::aborts, 1);
  const int abortsOfA = FakeSymmetric::aborted;
  EXPECT_GE(abortsOfA, 1) << "abort must stop the kernels' waits";
  EXPECT_EQ(FakeSymmetric::destroyed, 1) << "and free the state, not leak it";
  EXPECT_EQ(ip.commDestroy(b), ncclSuccess);
  EXPECT_EQ(FakeSymmetric::aborted, abortsOfA) << "a plain destroy does not abort";
  EXPECT_EQ(FakeSymmetric::destroyed, 2);
  EXPECT_EQ(ip.liveCommunicators(), 0u);
}

// A kernel that timed out inside a replayed graph leaves no call to return an error from: the async
// error NCCL's clients poll says it, with one WARN naming the rank waited for.
TEST_F(InterposerTest, ATimeoutSeenOnlyByTheDeviceReachesTheAsyncError) {
  std::vector<std::string> warnings;
  setLogSinkForTesting([&](LogLevel level, const std::string& text) {
    if (level == LogLevel::Warn) warnings.push_back(text);
  });
  Interposer ip = make(true);
  ncclComm_t comm = fakeComm(0x6300, 2);
  ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr);
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ip.commGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  FakeSymmetric::device = kernels::Status::PeerTimeout;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ip.commGetAsyncError(comm, &async), ncclSuccess);
    EXPECT_EQ(async, ncclSystemError);
  }
  FakeNccl::asyncState = ncclRemoteError;
  EXPECT_EQ(ip.commGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclRemoteError) << "NCCL's own error comes first";
  EXPECT_EQ(ip.commDestroy(comm), ncclSuccess);
  setLogSinkForTesting({});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("waiting for rank 1"), std::string::npos) << warnings[0];
}

// Teardown says a timeout nobody polled for, once.
TEST_F(InterposerTest, TeardownSaysATimeoutNobodyHeardOf) {
  std::vector<std::string> warnings;
  setLogSinkForTesting([&](LogLevel level, const std::string& text) {
    if (level == LogLevel::Warn) warnings.push_back(text);
  });
  Interposer ip = make(true);
  ncclComm_t comm = fakeComm(0x6400, 2);
  ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr);
  FakeSymmetric::device = kernels::Status::PeerTimeout;
  EXPECT_EQ(ip.commDestroy(comm), ncclSuccess);
  setLogSinkForTesting({});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("timed out"), std::string::npos) << warnings[0];
}

TEST_F(InterposerTest, KernelTimeoutIsAnErrorAndOneWarning) {
  std::vector<std::string> warnings;
  setLogSinkForTesting([&](LogLevel level, const std::string& text) {
    if (level == LogLevel::Warn) warnings.push_back(text);
  });
  Interposer ip = make(true);
  ncclComm_t comm = fakeComm(0x7000, 2);
  FakeSymmetric::answer = kernels::Status::PeerTimeout;
  EXPECT_EQ(ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr), ncclSystemError);
  EXPECT_EQ(ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr), ncclSystemError);
  setLogSinkForTesting({});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("timed out"), std::string::npos);
  FakeSymmetric::answer = kernels::Status::Unsupported;
  EXPECT_EQ(ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(FakeNccl::allReduces, 1) << "Unsupported goes to NCCL";
}

// A kernel launch that throws may have launched: the call is not handed to NCCL as well (it would
// run twice on this rank, once more than on its peers); the application hears of it as an error, with
// one WARN, and the communicator's next calls run as before.
TEST_F(InterposerTest, AFailureAfterTheLaunchIsAnErrorNotASecondCallToNccl) {
  std::vector<std::string> warnings;
  setLogSinkForTesting([&](LogLevel level, const std::string& text) {
    if (level == LogLevel::Warn) warnings.push_back(text);
  });
  Interposer ip = make(true);
  ncclComm_t comm = fakeComm(0x9000, 2);
  FakeSymmetric::throwAtCall = 1;
  ncclResult_t r = ncclSuccess;
  EXPECT_NO_THROW(r = ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr));
  EXPECT_EQ(r, ncclInternalError);
  EXPECT_EQ(FakeSymmetric::calls, 1);
  EXPECT_EQ(FakeNccl::allReduces, 0) << "the launched call went to NCCL as well";
  EXPECT_EQ(ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(FakeSymmetric::calls, 2);
  EXPECT_EQ(FakeNccl::allReduces, 0);
  setLogSinkForTesting({});
  EXPECT_EQ(warnings.size(), 1u);
}

// A setup that fails once this rank has reached the agreement (its exchanges posted, or half posted):
// NCCL's all-reduce would pair with the peers' exchanges, so the call is an error instead.
TEST_F(InterposerTest, ASetupThatFailsMidwayIsAnErrorNotACallToNccl) {
  Interposer ip = make(true);
  ncclComm_t comm = fakeComm(0x9100, 2);
  setupHook = [](ncclComm_t) { throw std::runtime_error("exchange half posted"); };
  ncclResult_t r = ncclSuccess;
  EXPECT_NO_THROW(r = ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr));
  EXPECT_EQ(r, ncclInternalError);
  EXPECT_EQ(setups, 1);
  EXPECT_EQ(FakeNccl::allReduces, 0) << "NCCL's all-reduce would pair with the peers' setup exchanges";
  EXPECT_EQ(FakeSymmetric::calls, 0);
}

// Before anything its peers pair with has happened, a failure is left to the entry point, which hands
// the call to NCCL as if the plugin were not there.
TEST_F(InterposerTest, AFailureBeforeAnySideEffectReachesTheEntryPoint) {
  Interposer ip(
      nccl, process, [](ncclComm_t, int, int, int, void*) { return std::make_unique<CommState>(); },
      [](cudaStream_t) -> std::optional<bool> { throw std::runtime_error("probe failed"); });
  ncclComm_t comm = fakeComm(0x9200, 2);
  EXPECT_THROW(ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr), std::runtime_error);
  EXPECT_EQ(FakeNccl::allReduces, 0);
}

// What the entry points go by: a call starts short of its point of no return, whatever an earlier or
// enclosing call did; an enclosing call learns that a call nested in it passed its own.
TEST(InterposerPointOfNoReturn, IsPerCallAndTellsTheEnclosingCall) {
  const PointOfNoReturn outer;
  EXPECT_FALSE(outer.passed());
  {
    const PointOfNoReturn inner;
    EXPECT_FALSE(inner.passed());
    PointOfNoReturn::pass();
    EXPECT_TRUE(inner.passed());
  }
  EXPECT_TRUE(outer.passed());
  {
    const PointOfNoReturn next;
    EXPECT_FALSE(next.passed()) << "a call starts where the previous one left off";
  }
  EXPECT_TRUE(outer.passed());
}

// A rank whose settings turn the path off still runs setup (its vote, plugin/interpose/setup_vote.h) at the
// first eligible call: its peers, with the path on, post the setup exchange at that very call, and a
// rank that forwarded it to NCCL instead would pair their all-gather with its all-reduce.
TEST_F(InterposerTest, ARankWithThePathOffStillTakesPartInSetup) {
  for (const bool enabled : {true, false}) {
    FakeNccl::reset();
    setups = 0;
    process.policy.enabled = enabled;
    process.policy.symmetric = !enabled;
    Interposer ip = make(true);
    ncclComm_t comm = fakeComm(0x8000, 2);
    ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr);
    ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr);
    EXPECT_EQ(setups, 1) << "enabled=" << enabled;
    EXPECT_EQ(FakeNccl::allReduces, 2) << "the calls themselves stay on NCCL";
  }
}

}  // namespace
}  // namespace symmem

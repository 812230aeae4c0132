// SPDX-License-Identifier: Apache-2.0
// The thread that copies the kernels' counts into the statistics file (plugin/stats/stats_publisher.h): it
// publishes every period, never after a registration has ended (and that end waits for a publication
// in progress), stops for good, keeps signals off its thread, and is forgotten in a forked child.
#include "plugin/stats/stats_publisher.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/unit/forked_check.h"

namespace symmem {
namespace {

using std::chrono::milliseconds;

template <typename Pred>
bool eventually(Pred pred, int ms = 3000) {
  for (int i = 0; i < ms / 5; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return pred();
}

TEST(StatsPublisher, PublishesEveryPeriodUntilTheRegistrationEnds) {
  StatsPublisher publisher(milliseconds(5));
  std::atomic<int> published{0};
  auto registration = publisher.add([&] {
    ++published;
    return true;
  });
  ASSERT_NE(registration, nullptr);
  EXPECT_TRUE(eventually([&] { return published >= 3; })) << published;
  registration.reset();
  const int after = published;
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(published, after) << "published after its registration ended";
  EXPECT_GE(publisher.rounds(), 3u);
}

TEST(StatsPublisher, EndingARegistrationWaitsForItsPublicationInProgress) {
  StatsPublisher publisher(milliseconds(1));
  std::atomic<bool> inside{false}, returned{false};
  auto registration = publisher.add([&] {
    inside = true;
    std::this_thread::sleep_for(milliseconds(100));
    returned = true;
    return true;
  });
  ASSERT_TRUE(eventually([&] { return inside.load(); }));
  registration.reset();  // while the publication sleeps
  EXPECT_TRUE(returned) << "the registration ended while its publication was still running";
}

TEST(StatsPublisher, OthersGoOnWhenOneFailsOrThrows) {
  StatsPublisher publisher(milliseconds(2));
  std::atomic<int> good{0};
  auto failing = publisher.add([] { return false; });
  auto throwing = publisher.add([]() -> bool { throw std::runtime_error("copy failed"); });
  auto working = publisher.add([&] {
    ++good;
    return true;
  });
  EXPECT_TRUE(eventually([&] { return good >= 3; })) << good;
}

TEST(StatsPublisher, StopEndsTheThreadAndRefusesNewRegistrations) {
  StatsPublisher publisher(milliseconds(2));
  std::atomic<int> published{0};
  auto registration = publisher.add([&] {
    ++published;
    return true;
  });
  ASSERT_TRUE(eventually([&] { return published >= 1; }));
  publisher.stop();
  const int after = published;
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_EQ(published, after);
  EXPECT_EQ(publisher.add([] { return true; }), nullptr);
  registration.reset();  // after stop: returns at once
  publisher.stop();      // twice: harmless
}

TEST(StatsPublisher, ItsThreadBlocksEverySignal) {
  StatsPublisher publisher(milliseconds(1));
  std::atomic<int> blocked{-1};
  auto registration = publisher.add([&] {
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, nullptr, &mask);
    blocked = sigismember(&mask, SIGINT) == 1 && sigismember(&mask, SIGTERM) == 1 ? 1 : 0;
    return true;
  });
  ASSERT_TRUE(eventually([&] { return blocked >= 0; }));
  EXPECT_EQ(blocked, 1) << "SIGINT or SIGTERM could be delivered to the publisher's thread";
  sigset_t mine;
  pthread_sigmask(SIG_BLOCK, nullptr, &mine);
  EXPECT_EQ(sigismember(&mine, SIGINT), 0) << "the caller's own mask was left changed";
}

TEST(StatsPublisher, AForkedChildForgetsTheParentsThread) {
  StatsPublisher publisher(milliseconds(1));
  std::atomic<int> published{0};
  auto registration = publisher.add([&] {
    ++published;
    return true;
  });
  ASSERT_TRUE(eventually([&] { return published >= 1; }));
  const std::string report = testing::runForkedCheck([&]() -> std::string {
    publisher.forgetInForkedChild();
    registration.reset();  // the child's copy of the registration ends without waiting
    if (publisher.add([] { return true; }) != nullptr) return "the child started a publisher thread";
    publisher.stop();  // nothing to join: no hang, no terminate
    return "";
  });
  EXPECT_EQ(report, "");
  const int before = published;
  EXPECT_TRUE(eventually([&] { return published > before; })) << "the parent's thread stopped";
}

}  // namespace
}  // namespace symmem

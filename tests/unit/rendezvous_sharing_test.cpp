// SPDX-License-Identifier: Apache-2.0
// The agreement on a shared machine (plugin/interpose/rendezvous.h, plugin/interpose/shm_directory.h,
// plugin/interpose/live_process.h): what another user, a full /dev/shm, a FIFO, a killed job or a repeated communicator
// id can do to it. Every case ends in a bounded time with the same verdict on every rank, never a hang or a crash; each
// child process runs under an alarm, so a hang shows as its signal, not as a stuck test.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/decision_table.h"
#include "plugin/interpose/live_process.h"
#include "plugin/interpose/rendezvous.h"
#include "plugin/interpose/setup_vote.h"
#include "plugin/interpose/shm_directory.h"

namespace symmem {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uid_t kOtherUser = 12345;
constexpr int kAlarmSeconds = 20;

uint64_t freshId() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ (static_cast<uint64_t>(getpid()) << 16);
}

std::string ownDirectory() {
  std::string why;
  const std::string dir = privateShmDirectory(&why);
  EXPECT_FALSE(dir.empty()) << why;
  return dir;
}

// `body()` in a forked child under an alarm; its exit code, or 100 + the signal that ended it.
int inChild(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(kAlarmSeconds);
    _exit(body());
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

// nRanks children at once, exit codes in rank order.
std::vector<int> ranks(int nRanks, const std::function<int(int)>& body) {
  std::vector<pid_t> pids;
  for (int r = 0; r < nRanks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(kAlarmSeconds);
      _exit(body(r));
    }
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    codes.push_back(pid > 0 && waitpid(pid, &status, 0) == pid
                        ? (WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status))
                        : -1);
  }
  return codes;
}

int code(const Tally& t) { return t.verdict == Verdict::Go ? 1 : t.verdict == Verdict::No ? 2 : 11; }

// One rank of a two-rank communicator: joins, declares, arrives (taking part or not), awaits.
int oneRank(uint64_t id, int rank, bool takesPart, int64_t timeoutMs = 5000) {
  static const DecisionTable table = DecisionTable::builtIn();
  ProcessContext context;
  context.table = &table;
  std::string why;
  auto r = Rendezvous::join(id, 2, &why);
  if (!r) return 10;
  r->declare(Reach::Every, "");
  r->arrive(rank, voteOf(context), takesPart, takesPart ? "" : "test: cannot");
  return code(r->await(timeoutMs, false, nullptr));
}

// A child that becomes another user (CI and the GPU machine run as root; elsewhere: skipped).
bool canBecomeAnotherUser() { return geteuid() == 0; }
bool becomeAnotherUser() {
  return setresgid(kOtherUser, kOtherUser, kOtherUser) == 0 && setresuid(kOtherUser, kOtherUser, kOtherUser) == 0;
}

// ---- another user ------------------------------------------------------------------------------

TEST(RendezvousSharing, TheDirectoryIsTheUsersOwnAndNobodyElseCanWriteOrListIt) {
  const std::string dir = ownDirectory();
  struct stat st {};
  ASSERT_EQ(lstat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, geteuid());
  if (!canBecomeAnotherUser()) GTEST_SKIP() << "needs root to act as a second user";
  const int rc = inChild([&] {
    if (!becomeAnotherUser()) return 10;
    if (open((dir + "/rdv-0000000000000001-2").c_str(), O_RDWR | O_CREAT, 0666) >= 0) return 11;
    if (opendir(dir.c_str()) != nullptr) return 12;
    return 0;
  });
  EXPECT_EQ(rc, 0) << "another user could make a name in, or list, the user's directory";
}

// Another user who made the directory's name first (anyone can, in /dev/shm), or left a FIFO or a link
// there, only moves the user to the next name; every process of the user picks the same one.
TEST(RendezvousSharing, ANameAnotherUserTookFirstMovesTheDirectoryToTheNextOne) {
  if (!canBecomeAnotherUser()) GTEST_SKIP() << "needs root to act as a second user";
  char root[] = "/tmp/symmem-shm-root-XXXXXX";
  ASSERT_NE(mkdtemp(root), nullptr);
  ASSERT_EQ(chmod(root, 01777), 0);  // as /dev/shm
  const int rc = inChild([&] {
    if (!becomeAnotherUser()) return 10;
    if (mkdir(shmDirectoryCandidate(root, 0, 0).c_str(), 0777) != 0) return 11;      // a directory of theirs
    if (mkfifo(shmDirectoryCandidate(root, 0, 1).c_str(), 0666) != 0) return 12;     // a FIFO
    if (symlink("/tmp", shmDirectoryCandidate(root, 0, 2).c_str()) != 0) return 13;  // a link
    return 0;
  });
  ASSERT_EQ(rc, 0);
  std::string why;
  const std::string got = privateShmDirectory(&why, root);
  EXPECT_EQ(got, shmDirectoryCandidate(root, 0, 3)) << why;
  EXPECT_EQ(privateShmDirectory(&why, root), got) << "a second look must find the same directory";
  // Every name taken: no directory, a reason, and nothing made or followed.
  const int all = inChild([&] {
    if (!becomeAnotherUser()) return 10;
    for (int k = 4; k < kShmDirectoryCandidates; ++k)
      if (mkdir(shmDirectoryCandidate(root, 1, k).c_str(), 0777) != 0) return 11;
    for (int k = 0; k < 4; ++k)
      if (mkdir(shmDirectoryCandidate(root, 1, k).c_str(), 0777) != 0) return 12;
    return 0;
  });
  ASSERT_EQ(all, 0);
  const int asUser1 = inChild([&] {
    if (setresuid(1, 1, 1) != 0) return 10;
    std::string whyNot;
    return privateShmDirectory(&whyNot, root).empty() && whyNot.find("another user's") != std::string::npos ? 0 : 11;
  });
  EXPECT_EQ(asUser1, 0);
  std::string cleanup = std::string("rm -rf ") + root;
  EXPECT_EQ(std::system(cleanup.c_str()), 0);
}

// ---- files that are not segments ---------------------------------------------------------------

// A FIFO under a segment's name (made by the user's own mistake or tool: nobody else can) is never
// opened for blocking: join answers at once, and the sweep passes it over.
TEST(RendezvousSharing, AFifoUnderASegmentsNameNeverBlocks) {
  const std::string dir = ownDirectory();
  const uint64_t id = freshId();
  const std::string path = rendezvousPath(dir, id, 2);
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
  const std::string other = rendezvousPath(dir, id ^ 1, 2);
  ASSERT_EQ(mkfifo(other.c_str(), 0600), 0);
  const auto start = Clock::now();
  const int rc = inChild([&] {
    std::string why;
    sweepStaleRendezvous(dir);
    auto r = Rendezvous::join(id, 2, &why);
    return r == nullptr && why.find("not this plugin's") != std::string::npos ? 0 : 11;
  });
  EXPECT_EQ(rc, 0) << "join blocked on a FIFO (" << 100 + SIGALRM << " is the alarm) or accepted it";
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  unlink(path.c_str());
  unlink(other.c_str());
}

// A full /dev/shm (a container's default is 64 MiB, shared with NCCL's own SHM transport): the
// segment's space is reserved before it is touched, so the rank says no, with the reason, and the
// process lives. Before, ftruncate's sparse file raised SIGBUS at the first store.
TEST(RendezvousSharing, AFullShmIsANoNeverASigbus) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs in a private mount namespace";
  const int rc = inChild([] {
    if (unshare(CLONE_NEWNS) != 0) return 20;
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 21;
    if (mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=16k,mode=1777") != 0) return 22;
    // Fill it, as other processes' segments would.
    const int fill = open("/dev/shm/filler", O_RDWR | O_CREAT, 0600);
    char page[4096] = {};
    while (fill >= 0 && write(fill, page, sizeof page) == static_cast<ssize_t>(sizeof page)) {
    }
    std::string why;
    auto r = Rendezvous::join(freshId(), 2, &why);
    if (r) return 12;  // joined a segment it could not have room for
    std::printf("[ info ] full /dev/shm: %s\n", why.c_str());
    return why.find("cannot") != std::string::npos ? 0 : 13;
  });
  if (rc == 20 || rc == 21 || rc == 22) GTEST_SKIP() << "no private mount namespace here (step " << rc - 20 << ")";
  EXPECT_EQ(rc, 0) << (rc == 100 + SIGBUS ? "SIGBUS on a full /dev/shm" : "no clean refusal");
}

// ---- one agreement per communicator instance ---------------------------------------------------

// NCCL's intra-node barrier after every rank's tuner init, between the test's processes.
struct RoundBarrier {
  std::atomic<int> arrived{0};
  bool wait(int round, int nRanks) {
    arrived.fetch_add(1);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (arrived.load() < (round + 1) * nRanks)
      if (Clock::now() > deadline) return false;
    return true;
  }
};

// The same id over and over (a fixed NCCL_COMM_ID gives every communicator of a job the same one),
// each communicator kept alive while the next is made, as a job's process groups are: each agrees for
// itself. Odd rounds have a rank that cannot take part; a verdict read from an earlier communicator's
// agreement shows as a wrong code.
TEST(RendezvousSharing, ARepeatedIdAgreesAnewForEveryCommunicator) {
  constexpr int kRounds = 50;
  const uint64_t id = freshId();
  void* shared = mmap(nullptr, sizeof(RoundBarrier), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* barrier = new (shared) RoundBarrier();
  static const DecisionTable table = DecisionTable::builtIn();
  ProcessContext context;
  context.table = &table;
  const std::vector<int> codes = ranks(2, [&](int rank) {
    std::vector<std::shared_ptr<Rendezvous>> alive;  // every earlier communicator still exists
    for (int round = 0; round < kRounds; ++round) {
      std::string why;
      auto r = Rendezvous::join(id, 2, &why);
      if (!r) return 10;
      r->declare(Reach::Every, "");
      if (!barrier->wait(round, 2)) return 11;
      const bool refuses = round % 2 == 1 && rank == 1;
      r->arrive(rank, voteOf(context), !refuses, refuses ? "test: cannot" : "");
      const Verdict v = r->await(5000, true, nullptr).verdict;
      if (v != (round % 2 == 1 ? Verdict::No : Verdict::Go)) return 20 + round;
      alive.push_back(std::move(r));
    }
    return 0;
  });
  munmap(shared, sizeof(RoundBarrier));
  EXPECT_EQ(codes, (std::vector<int>{0, 0})) << "20 + n: round n read another communicator's verdict";
  EXPECT_NE(access(rendezvousPath(ownDirectory(), id, 2).c_str(), F_OK), 0) << "a segment was left behind";
}

// A job SIGKILLed inside its agreement leaves its segment; the next job with the same id (a fixed
// NCCL_COMM_ID) must not inherit that job's slots or verdict: it replaces the segment and agrees for
// itself.
TEST(RendezvousSharing, AJobAfterAKilledOneWithTheSameIdAgreesForItself) {
  const uint64_t id = freshId();
  const DecisionTable table = DecisionTable::builtIn();
  ProcessContext context;
  context.table = &table;
  // The killed job: one rank joined, arrived unable to take part, decided "no", then was killed.
  const int killed = inChild([&] {
    std::string why;
    auto r = Rendezvous::join(id, 2, &why);
    if (!r) return 10;
    r->declare(Reach::Every, "");
    r->arrive(0, voteOf(context), false, "killed job");
    r->refuse("killed job's verdict");
    kill(getpid(), SIGKILL);
    return 11;
  });
  ASSERT_EQ(killed, 100 + SIGKILL);
  ASSERT_EQ(access(rendezvousPath(ownDirectory(), id, 2).c_str(), F_OK), 0) << "nothing was left to inherit";
  const std::vector<int> codes = ranks(2, [&](int rank) { return oneRank(id, rank, true); });
  EXPECT_EQ(codes, (std::vector<int>{1, 1})) << "the next job inherited the killed job's agreement";
}

// A process whose pid a new process took since is no claimer: a pid alone would keep a killed job's
// segment alive for as long as the pid is reused.
TEST(RendezvousSharing, AReusedPidIsNotTheProcessThatClaimed) {
  const ProcessMark me = thisProcessMark();
  EXPECT_EQ(me.pid, getpid());
  EXPECT_NE(me.startTicks, 0u) << "this machine's /proc gives no start time";
  EXPECT_TRUE(stillRunning(me));
  EXPECT_FALSE(stillRunning({me.pid, me.startTicks + 1})) << "another start time is another process";
  EXPECT_TRUE(stillRunning({me.pid, 0})) << "an unknown start time leaves the pid's word";
  EXPECT_FALSE(stillRunning({0, 0}));
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(stillRunning({child, 0}));
}

// A rank killed at any moment of its decision leaves its peer a whole verdict or none; the peer
// never waits past its limit. (Before, a decider killed between "deciding" and the verdict left the
// word at "deciding", and every peer spun on it for good.)
TEST(RendezvousSharing, ADeciderKilledAtAnyMomentLeavesItsPeerBounded) {
  const DecisionTable table = DecisionTable::builtIn();
  ProcessContext context;
  context.table = &table;
  std::mt19937 rng(47);
  for (int round = 0; round < 20; ++round) {
    const uint64_t id = freshId();
    const int killAfterUs = static_cast<int>(rng() % 400);
    const pid_t decider = fork();
    if (decider == 0) {
      alarm(kAlarmSeconds);
      std::string why;
      auto r = Rendezvous::join(id, 2, &why);
      if (!r) _exit(10);
      r->declare(Reach::Every, "");
      r->arrive(0, voteOf(context), false, "decider");
      for (;;) r->await(1, false, nullptr);  // decides "no", again and again, until killed
    }
    const int peer = inChild([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      return oneRank(id, 1, true, 2000);
    });
    std::this_thread::sleep_for(std::chrono::microseconds(killAfterUs));
    kill(decider, SIGKILL);
    waitpid(decider, nullptr, 0);
    ASSERT_EQ(peer, 2) << "round " << round << ": the peer " << (peer == 100 + SIGALRM ? "hung" : "read no verdict");
  }
}

// ---- the NCCL bands: the same on every rank, or none ------------------------------------------

int bandsRank(uint64_t id, uint64_t bands, bool declares, std::atomic<int>* declared) {
  std::string why;
  auto r = Rendezvous::join(id, 2, &why);
  if (!r) return 10;
  if (declares) r->declare(Reach::Every, "", bands);
  declared->fetch_add(1);
  // NCCL's intra-node barrier: every rank's tuner init is over before any collective is planned.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (declared->load() < 2 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return r->bandsAgreed() ? 1 : 2;
}

std::vector<int> bandsOf(uint64_t bands0, uint64_t bands1, bool rank1Declares = true) {
  void* shared = mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  auto* declared = new (shared) std::atomic<int>(0);
  const uint64_t id = freshId();
  std::vector<int> codes = ranks(
      2, [&](int rank) { return bandsRank(id, rank == 0 ? bands0 : bands1, rank == 0 || rank1Declares, declared); });
  munmap(shared, sizeof(std::atomic<int>));
  return codes;
}

// SYMMEM_ENABLE=0, SYMMEM_TUNER=0 or another table on one rank: its tuner declares other bands, and no
// rank applies any (NCCL's ranks choosing different algorithms hang).
TEST(RendezvousBands, RanksApplyBandsOnlyWhenEveryRankDeclaredTheSame) {
  EXPECT_EQ(bandsOf(77, 77), (std::vector<int>{1, 1}));
  EXPECT_EQ(bandsOf(77, 1), (std::vector<int>{2, 2})) << "one rank with no bands";
  EXPECT_EQ(bandsOf(77, 78), (std::vector<int>{2, 2})) << "two tables";
  EXPECT_EQ(bandsOf(77, 77, /*rank1Declares=*/false), (std::vector<int>{2, 2})) << "one rank declared nothing";
}

TEST(RendezvousBands, ThePureCheckWantsEverySlotDeclaredAlike) {
  auto slot = [](uint32_t state, uint64_t bands) {
    SlotView s;
    s.state = state;
    s.bands = bands;
    return s;
  };
  TallyInput in;
  in.nRanks = 2;
  in.claimed = 2;
  in.slots = {slot(SlotView::Declared, 5), slot(SlotView::Arrived, 5)};
  EXPECT_TRUE(bandsAgreeIn(in));
  in.slots[1].bands = 0;
  EXPECT_FALSE(bandsAgreeIn(in)) << "0 is no declaration";
  in.slots[1] = slot(SlotView::Claimed, 5);
  EXPECT_FALSE(bandsAgreeIn(in)) << "claimed, not declared";
  in.slots = {slot(SlotView::Declared, 5)};
  in.claimed = 1;
  EXPECT_FALSE(bandsAgreeIn(in)) << "a rank missing";
}

}  // namespace
}  // namespace symmem

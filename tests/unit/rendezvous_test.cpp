// SPDX-License-Identifier: Apache-2.0
// The agreement before any exchange (plugin/interpose/rendezvous.h): the pure tally, then ranks as real
// processes meeting in the shared segment, then the interposer of two processes whose ranks differ
// (one unhooked, one unable to allocate, one aborted): every rank ends with the same verdict, and no
// rank ever starts an exchange its peers will not post.
#include "plugin/interpose/rendezvous.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/decision_table.h"
#include "plugin/interpose/comm_names.h"
#include "plugin/interpose/comm_setup.h"
#include "plugin/interpose/comm_tickets.h"
#include "plugin/interpose/creation_calls.h"
#include "plugin/interpose/interposer.h"
#include "plugin/interpose/shm_directory.h"
#include "plugin/tuner/tuner.h"

namespace symmem {
namespace {

using Clock = std::chrono::steady_clock;

std::string shmDirectory() {
  std::string why;
  const std::string dir = privateShmDirectory(&why);
  EXPECT_FALSE(dir.empty()) << why;
  return dir;
}

SetupVote voteFor(const ProcessContext& c) { return voteOf(c); }

ProcessContext defaultContext(const DecisionTable& table) {
  ProcessContext c;
  c.table = &table;
  return c;
}

SlotView arrived(int rank, const SetupVote& vote, bool takesPart = true, std::string why = {}) {
  SlotView s;
  s.state = SlotView::Arrived;
  s.pid = 1000 + rank;
  s.reach = Reach::Every;
  s.rank = rank;
  s.takesPart = takesPart;
  s.vote = vote;
  s.why = std::move(why);
  return s;
}

SlotView declared(pid_t pid, Reach reach, std::string why = {}) {
  SlotView s;
  s.state = SlotView::Declared;
  s.pid = pid;
  s.reach = reach;
  s.why = std::move(why);
  return s;
}

TallyInput twoRanks(std::vector<SlotView> slots) {
  TallyInput in;
  in.nRanks = 2;
  in.claimed = static_cast<uint32_t>(slots.size());
  in.slots = std::move(slots);
  in.timeoutMs = 1000;
  return in;
}

class RendezvousTally : public ::testing::Test {
 protected:
  DecisionTable table = DecisionTable::builtIn();
  ProcessContext context = defaultContext(table);
  SetupVote vote = voteFor(context);
};

TEST_F(RendezvousTally, EveryRankArrivedWithTheSameVoteGoes) {
  const Tally t = tallyRendezvous(twoRanks({arrived(1, vote), arrived(0, vote)}));
  EXPECT_EQ(t.verdict, Verdict::Go) << t.why;
}

TEST_F(RendezvousTally, ARankWhoseCallsDoNotReachThePluginStopsEveryoneAtOnce) {
  const Tally t =
      tallyRendezvous(twoRanks({arrived(0, vote), declared(4242, Reach::None, "code hooks not installed")}));
  EXPECT_EQ(t.verdict, Verdict::No);
  EXPECT_NE(t.why.find("4242"), std::string::npos) << t.why;
  EXPECT_NE(t.why.find("code hooks not installed"), std::string::npos) << t.why;
}

TEST_F(RendezvousTally, OnOneNodeAMissingDeclarationIsFinal) {
  TallyInput in = twoRanks({arrived(0, vote)});
  EXPECT_EQ(tallyRendezvous(in).verdict, Verdict::Pending) << "across nodes (testing) it may still come";
  in.everyDeclarationIsIn = true;
  const Tally t = tallyRendezvous(in);
  EXPECT_EQ(t.verdict, Verdict::No);
  EXPECT_NE(t.why.find("only 1 of 2"), std::string::npos) << t.why;
}

TEST_F(RendezvousTally, ARankThatCannotTakePartSaysWhy) {
  const Tally t = tallyRendezvous(twoRanks({arrived(0, vote), arrived(1, vote, false, "no exchange buffers")}));
  EXPECT_EQ(t.verdict, Verdict::No);
  EXPECT_NE(t.why.find("rank 1 cannot take part (no exchange buffers)"), std::string::npos) << t.why;
}

TEST_F(RendezvousTally, DifferentSettingsStopEveryone) {
  SetupVote other = vote;
  other.sharedGpuTest = 1;
  const Tally t = tallyRendezvous(twoRanks({arrived(0, vote), arrived(1, other)}));
  EXPECT_EQ(t.verdict, Verdict::No);
  EXPECT_NE(t.why.find("SYMMEM_TEST_SHARED_GPU"), std::string::npos) << t.why;
}

TEST_F(RendezvousTally, WaitsThenTimesOutNamingTheMissingRanks) {
  TallyInput in = twoRanks({arrived(0, vote), declared(77, Reach::Every)});
  EXPECT_EQ(tallyRendezvous(in).verdict, Verdict::Pending);
  in.timedOut = true;
  const Tally t = tallyRendezvous(in);
  EXPECT_EQ(t.verdict, Verdict::No);
  EXPECT_NE(t.why.find("rank(s) 1 did not reach"), std::string::npos) << t.why;
}

TEST_F(RendezvousTally, DeadPeersDuplicatesExcessAndAbortStopEveryone) {
  SlotView dead = declared(77, Reach::Every);
  dead.alive = false;
  EXPECT_EQ(tallyRendezvous(twoRanks({arrived(0, vote), dead})).verdict, Verdict::No);
  EXPECT_EQ(tallyRendezvous(twoRanks({arrived(0, vote), arrived(0, vote)})).verdict, Verdict::No);
  TallyInput excess = twoRanks({arrived(0, vote), arrived(1, vote)});
  excess.claimed = 3;
  EXPECT_EQ(tallyRendezvous(excess).verdict, Verdict::No);
  TallyInput aborted = twoRanks({arrived(0, vote)});
  aborted.aborted = true;
  EXPECT_EQ(tallyRendezvous(aborted).verdict, Verdict::No);
  TallyInput tooMany = twoRanks({});
  tooMany.nRanks = kRendezvousSlots + 1;
  EXPECT_EQ(tallyRendezvous(tooMany).verdict, Verdict::No);
}

// ---- ranks as processes ---------------------------------------------------------------------------

uint64_t freshCommId() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid());
}

// Runs `body(rank)` in nRanks forked children; each child's exit code is its verdict (1 Go, 2 No,
// 10+ a failure of the test itself). Returns the exit codes in rank order.
std::vector<int> runRanks(int nRanks, const std::function<int(int rank)>& body) {
  std::vector<pid_t> pids;
  for (int r = 0; r < nRanks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) _exit(body(r));
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
      codes.push_back(-1);
      continue;
    }
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status));
  }
  return codes;
}

int verdictCode(const Tally& t) { return t.verdict == Verdict::Go ? 1 : t.verdict == Verdict::No ? 2 : 11; }

TEST(RendezvousProcesses, TwoRanksThatArriveBothGoAndTheSegmentGoesWithThem) {
  const uint64_t id = freshCommId();
  const DecisionTable table = DecisionTable::builtIn();
  const ProcessContext context = defaultContext(table);
  const std::vector<int> codes = runRanks(2, [&](int rank) {
    std::string why;
    auto r = Rendezvous::join(id, 2, &why);
    if (!r) return 10;
    // The segment lies in this user's own directory, which nobody else can list or write.
    struct stat st {};
    const std::string dir = r->path().substr(0, r->path().rfind('/'));
    if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || (st.st_mode & 0777) != 0700 || st.st_uid != geteuid())
      return 12;
    r->declare(Reach::Every, "");
    std::this_thread::sleep_for(std::chrono::milliseconds(rank * 50));
    r->arrive(rank, voteOf(context), true, "");
    return verdictCode(r->await(5000, /*everyDeclarationIsIn=*/false, nullptr));  // no init barrier here
  });
  EXPECT_EQ(codes, (std::vector<int>{1, 1}));
  EXPECT_NE(access(rendezvousPath(shmDirectory(), id, 2).c_str(), F_OK), 0) << "the segment was left behind";
}

// A job killed before its destructors ran leaves its segment; the next segment this user creates
// removes it, and leaves a live one alone.
TEST(RendezvousProcesses, ASegmentLeftByKilledProcessesGoesAtTheNextCreation) {
  const uint64_t dead = freshCommId(), live = freshCommId() ^ 1, next = freshCommId() ^ 2;
  const std::vector<int> codes = runRanks(1, [&](int) {
    std::string why;
    auto r = Rendezvous::join(dead, 2, &why);
    if (!r) return 10;
    r->declare(Reach::Every, "");
    kill(getpid(), SIGKILL);  // no destructor runs
    return 11;
  });
  ASSERT_EQ(codes, (std::vector<int>{100 + SIGKILL}));
  const std::string deadPath = rendezvousPath(shmDirectory(), dead, 2);
  ASSERT_EQ(access(deadPath.c_str(), F_OK), 0) << "the killed process left nothing to sweep";
  std::string why;
  auto alive = Rendezvous::join(live, 2, &why);  // this process: alive, so its segment stays
  ASSERT_TRUE(alive) << why;
  EXPECT_NE(access(deadPath.c_str(), F_OK), 0) << "the killed job's segment was left behind";
  auto another = Rendezvous::join(next, 2, &why);
  ASSERT_TRUE(another) << why;
  EXPECT_EQ(access(alive->path().c_str(), F_OK), 0) << "a live process's segment was removed";
}

TEST(RendezvousProcesses, AnUnhookedRankStopsItsPeerWithoutAWait) {
  const uint64_t id = freshCommId();
  const DecisionTable table = DecisionTable::builtIn();
  const ProcessContext context = defaultContext(table);
  const std::vector<int> codes = runRanks(2, [&](int rank) {
    std::string why;
    auto r = Rendezvous::join(id, 2, &why);
    if (!r) return 10;
    if (rank == 1) {
      r->declare(Reach::None, "code hooks not installed");
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // never arrives: its calls go to NCCL
      return 2;
    }
    r->declare(Reach::Every, "");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    r->arrive(0, voteOf(context), true, "");
    const auto start = Clock::now();
    const Tally t = r->await(60000, true, nullptr);
    if (Clock::now() - start > std::chrono::seconds(2)) return 13;  // waited for a rank that will never come
    return t.why.find("code hooks not installed") == std::string::npos ? 14 : verdictCode(t);
  });
  EXPECT_EQ(codes, (std::vector<int>{2, 2}));
}

// The verdict is the same on every rank however the timing falls: a rank arrives around the moment
// its peer's wait ends, many times over.
TEST(RendezvousProcesses, EveryRankReadsTheSameVerdictWhateverTheTiming) {
  const DecisionTable table = DecisionTable::builtIn();
  const ProcessContext context = defaultContext(table);
  int go = 0, no = 0;
  for (int round = 0; round < 24; ++round) {
    const uint64_t id = freshCommId();
    const int lateByMs = 20 + (round % 6) * 4;  // around rank 0's 40 ms limit
    const std::vector<int> codes = runRanks(2, [&](int rank) {
      std::string why;
      auto r = Rendezvous::join(id, 2, &why);
      if (!r) return 10;
      r->declare(Reach::Every, "");
      if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(lateByMs));
      r->arrive(rank, voteOf(context), true, "");
      return verdictCode(r->await(rank == 0 ? 40 : 5000, false, nullptr));
    });
    ASSERT_EQ(codes.size(), 2u);
    ASSERT_TRUE(codes[0] == 1 || codes[0] == 2) << "rank 0 exit " << codes[0];
    EXPECT_EQ(codes[0], codes[1]) << "round " << round << ": the ranks read different verdicts";
    (codes[0] == 1 ? go : no) += 1;
  }
  std::printf("[ info ] 24 rounds around the limit: %d go, %d no, every round one verdict\n", go, no);
}

// ---- the interposer of two processes ----------------------------------------------------------------

// A stand-in NCCL for one rank of a two-rank communicator, as a process sees it.
struct RankNccl {
  static inline int rank = 0;
  static inline int forwarded = 0;
  static RealNccl table() {
    RealNccl r;
    r.allReduce = [](const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) {
      ++forwarded;
      return ncclSuccess;
    };
    r.commCount = [](const ncclComm_t, int* n) {
      *n = 2;
      return ncclSuccess;
    };
    r.commUserRank = [](const ncclComm_t, int* out) {
      *out = rank;
      return ncclSuccess;
    };
    r.commCuDevice = [](const ncclComm_t, int* dev) {
      *dev = 0;
      return ncclSuccess;
    };
    r.commGetAsyncError = [](ncclComm_t, ncclResult_t* s) {
      *s = ncclSuccess;
      return ncclSuccess;
    };
    return r;
  }
};

// NCCL's communicator as the tuner sees it: its init gets the address of a member 1,075,712 bytes in.
constexpr size_t kContextOffset = 1075712;
alignas(64) char gCommStruct[kContextOffset + 4096];

void quietLogger(int, unsigned long, const char*, int, const char*, ...) {}

// TunerV4: NCCL 2.27 and older, whose tuner init gets no id; the code hooks' creation call names the
// communicator (on rank 1 too, or not: Rank1Unnamed).
enum class Twist { None, Rank1Unhooked, Rank1CannotAllocate, TunerV4, TunerV4Rank1Unnamed };

// What one rank's process does: NCCL's tuner init, then its first eligible all-reduce. Exit code:
// 1 the symmetric setup ran, 2 the call went to NCCL without any exchange, 1x test failures.
// NCCL's intra-node barrier after every rank's tuner init, between the test's processes.
struct InitBarrier {
  std::atomic<int> inited{0};
  void arriveAndWait(int nRanks) {
    inited.fetch_add(1);
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (inited.load() < nRanks && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
};

int oneRank(int rank, uint64_t commId, Twist twist, std::atomic<bool>* setupRan, InitBarrier* barrier) {
  resetTicketsForTests();
  RankNccl::rank = rank;
  const bool unhooked = twist == Twist::Rank1Unhooked && rank == 1;
  setTunerInitHook(unhooked ? +[](abi::Logger, std::string* why) {
    *why = "code hooks not installed";
    return false;
  }
                            : +[](abi::Logger, std::string*) { return true; });
  void** slot = reinterpret_cast<void**>(gCommStruct + kContextOffset);
  const bool v4 = twist == Twist::TunerV4 || twist == Twist::TunerV4Rank1Unnamed;
  {
    resetCreationCallsForTests();
    resetCommNamesForTests();
    const void* handle = gCommStruct;  // NCCL writes the caller's handle before its tuner init runs
    const bool named = v4 && !(twist == Twist::TunerV4Rank1Unnamed && rank == 1);
    std::optional<CreationUnderWay> underWay;
    if (named) underWay.emplace(CommName{commId, NamedBy::UniqueId}, 2, &handle);
    if (tuner::init(slot, v4 ? 0 : commId, 2, 1, quietLogger, nullptr, nullptr) != abi::kSuccess) return 10;
    if (named) nameComm(gCommStruct, {commId, NamedBy::UniqueId});
  }
  barrier->arriveAndWait(2);
  if (unhooked) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // its all-reduces never reach the plugin
    tuner::finalize(*slot);
    return 2;
  }
  static DecisionTable table = DecisionTable::builtIn();
  static ProcessContext context;
  context.table = &table;
  // The unnamed twist: a limit far past the declarations' due time, which must end the wait first.
  context.timeoutMs = twist == Twist::TunerV4Rank1Unnamed ? 60000 : 3000;
  static RealNccl nccl = RankNccl::table();
  SetupSteps steps;
  if (twist == Twist::Rank1CannotAllocate && rank == 1)
    steps.prepare = [](ncclComm_t, int, int, std::string* why) -> std::shared_ptr<void> {
      *why = "its setup exchange buffers could not be allocated";
      return nullptr;
    };
  steps.agree = [](ncclComm_t comm, const Arrival& mine, const std::function<bool()>& aborted) {
    return agreeBeforeExchanges(context, comm, mine, aborted);
  };
  steps.setup = [setupRan](ncclComm_t, int, int, int, void*) {
    setupRan->store(true);  // here the real setup posts its first NCCL all-gather
    return std::unique_ptr<CommState>();
  };
  Interposer ip(nccl, context, steps, [](cudaStream_t) { return std::optional<bool>(false); });
  char buf[64] = {};
  const auto comm = reinterpret_cast<ncclComm_t>(gCommStruct);
  const auto start = Clock::now();
  if (ip.allReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) return 11;
  const auto took = Clock::now() - start;
  tuner::finalize(*slot);
  // NCCL 2.27's tuner init comes after its barrier: a declaration still missing may yet come, so a
  // rank waits for it, until it is due (kLateDeclarationsDueMs), not for its whole limit.
  const bool mayWait = twist == Twist::TunerV4Rank1Unnamed && rank == 0;
  if (took >= std::chrono::milliseconds(mayWait ? kLateDeclarationsDueMs + 3000 : 2000)) return 12;
  return setupRan->load() ? 1 : (RankNccl::forwarded == 1 ? 2 : 13);
}

std::vector<int> twoProcesses(Twist twist) {
  const uint64_t id = freshCommId();
  void* shared = mmap(nullptr, sizeof(InitBarrier), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return {};
  auto* barrier = new (shared) InitBarrier();
  std::vector<int> codes = runRanks(2, [&](int rank) {
    std::atomic<bool> setupRan{false};
    return oneRank(rank, id, twist, &setupRan, barrier);
  });
  munmap(shared, sizeof(InitBarrier));
  return codes;
}

TEST(RendezvousInterposer, BothRanksHookedSetUpTogether) {
  EXPECT_EQ(twoProcesses(Twist::None), (std::vector<int>{1, 1}));
}

// What hung on the GPU machine: rank 1's code hooks refused (its ctypes calls go straight to NCCL),
// rank 0 hooked. Rank 0 must forward its first all-reduce too, at once, and post no exchange.
TEST(RendezvousInterposer, OneRankUnhookedEveryRankStaysOnNcclWithoutAnExchange) {
  EXPECT_EQ(twoProcesses(Twist::Rank1Unhooked), (std::vector<int>{2, 2}));
}

// NCCL 2.27 and older: the ranks find each other by the name their creation calls give the
// communicator.
TEST(RendezvousInterposer, TunerWithoutIdsBothRanksNamedByTheirCreationCallsSetUpTogether) {
  EXPECT_EQ(twoProcesses(Twist::TunerV4), (std::vector<int>{1, 1}));
}

// A rank whose creation call was not seen joins nothing: its peer waits for its declaration until it
// is due (5 s, not its 60 s limit), and stays on NCCL with it.
TEST(RendezvousInterposer, TunerWithoutIdsOneRankUnnamedEveryRankStaysOnNccl) {
  EXPECT_EQ(twoProcesses(Twist::TunerV4Rank1Unnamed), (std::vector<int>{2, 2}));
}

// A rank whose exchange buffers cannot be allocated still arrives, saying no.
TEST(RendezvousInterposer, OneRankUnableToAllocateStopsBoth) {
  EXPECT_EQ(twoProcesses(Twist::Rank1CannotAllocate), (std::vector<int>{2, 2}));
}

TEST(RendezvousDeclaration, OnlyHookedEnabledSingleNodeRanksPromiseToArrive) {
  const DecisionTable table = DecisionTable::builtIn();
  ProcessContext c = defaultContext(table);
  EXPECT_EQ(declarationFor(c, 7, 2, 1, true, "").reach, Reach::Every);
  const Declaration unhooked = declarationFor(c, 7, 2, 1, false, "code hooks not installed");
  EXPECT_TRUE(unhooked.join);
  EXPECT_EQ(unhooked.reach, Reach::None);
  EXPECT_EQ(unhooked.whyNot, "code hooks not installed");
  EXPECT_FALSE(declarationFor(c, 0, 2, 1, true, "").join) << "no communicator id: nobody joins";
  EXPECT_FALSE(declarationFor(c, 7, 1, 1, true, "").join);
  EXPECT_FALSE(declarationFor(c, 7, kRendezvousSlots + 1, 1, true, "").join);
  EXPECT_EQ(declarationFor(c, 7, 2, 2, true, "").reach, Reach::None) << "several nodes, no testing mode";
  c.sharedGpuTest = true;
  EXPECT_EQ(declarationFor(c, 7, 2, 2, true, "").reach, Reach::Every) << "the testing mode waits for the others";
  c.policy.enabled = false;
  EXPECT_EQ(declarationFor(c, 7, 2, 1, true, "").whyNot, "SYMMEM_ENABLE=0 on this rank");
}

// A driver older than the CUDA runtime the plugin carries needs: this rank says no, with the reason, so
// that every rank of its communicators stays on NCCL. The version is faked: no /proc is read.
TEST(RendezvousDeclaration, ADriverTooOldKeepsEveryRankOnNccl) {
  EXPECT_EQ(driverTooOldReason(kMinDriverMajor), "");
  EXPECT_EQ(driverTooOldReason(590), "");
  EXPECT_EQ(driverTooOldReason(0), "") << "no driver version read: not judged";
  const std::string old = driverTooOldReason(575);
  EXPECT_NE(old.find("NVIDIA driver 575 is older than 580"), std::string::npos) << old;

  const DecisionTable table = DecisionTable::builtIn();
  ProcessContext c = defaultContext(table);
  c.driverTooOld = old;
  const Declaration d = declarationFor(c, 7, 2, 1, true, "");
  EXPECT_TRUE(d.join) << "the peers must hear it";
  EXPECT_EQ(d.reach, Reach::None);
  EXPECT_EQ(d.whyNot, old);
  c.driverTooOld.clear();
  EXPECT_EQ(declarationFor(c, 7, 2, 1, true, "").reach, Reach::Every);
}

// A ticket whose rank count is not the communicator's belongs to another communicator: nothing is
// written into that one's agreement on this one's behalf.
TEST(CommTickets, AnotherCommunicatorsTicketIsNeverArrivedIn) {
  resetTicketsForTests();
  static char commStruct[kContextOffset + 64];
  std::string why;
  auto ticket = std::make_shared<CommTicket>();
  ticket->contextSlot = commStruct + kContextOffset;
  ticket->commId = freshCommId();
  ticket->nRanks = 4;
  ticket->nNodes = 1;
  ticket->rendezvous = Rendezvous::join(ticket->commId, 4, &why);
  ASSERT_TRUE(ticket->rendezvous) << why;
  registerTicket(ticket);
  const DecisionTable table = DecisionTable::builtIn();
  const ProcessContext context = defaultContext(table);
  Arrival mine;
  mine.rank = 0;
  mine.nRanks = 2;
  mine.device = 0;
  mine.takesPart = true;
  const Agreement a = agreeBeforeExchanges(context, reinterpret_cast<ncclComm_t>(commStruct), mine, nullptr);
  EXPECT_FALSE(a.go);
  EXPECT_NE(a.why.find("differs from its tuner's"), std::string::npos) << a.why;
  EXPECT_EQ(ticket->rendezvous->verdict().verdict, Verdict::Pending) << "the other communicator was decided for";
  resetTicketsForTests();
}

TEST(CommTickets, TheNearestContextSlotPastACommunicatorIsItsOwn) {
  resetTicketsForTests();
  static char structs[3][kContextOffset + 64];
  std::vector<std::shared_ptr<CommTicket>> made;
  for (auto& s : structs) {
    auto t = std::make_shared<CommTicket>();
    t->contextSlot = s + kContextOffset;
    made.push_back(t);
    registerTicket(t);
  }
  EXPECT_EQ(ticketFor(structs[1]), made[1]);
  EXPECT_EQ(ticketFor(structs[0]), made[0]);
  EXPECT_EQ(ticketFor(structs[2]), made[2]);
  retireTicket(structs[1] + kContextOffset);
  EXPECT_EQ(ticketFor(structs[1]), nullptr) << "the learned distance must match exactly";
  resetTicketsForTests();
}

// Two NCCL copies in one process (PyTorch's and the one pynccl is pointed at) lay their communicator
// structs out differently: each copy's distance is learned from its own communicators, and a slot is
// looked for only among the tickets its copy's tuner init made.
TEST(CommTickets, EachNcclCopyHasItsOwnDistance) {
  resetTicketsForTests();
  constexpr size_t kOtherOffset = kContextOffset + 4096;  // another build's struct
  static char copy0[2][kContextOffset + 64];
  static char copy1[2][kOtherOffset + 64];
  auto make = [](const void* slot, int copy) {
    auto t = std::make_shared<CommTicket>();
    t->contextSlot = slot;
    t->copy = copy;
    registerTicket(t);
    return t;
  };
  const auto a0 = make(copy0[0] + kContextOffset, 0);
  const auto b0 = make(copy0[1] + kContextOffset, 0);
  const auto a1 = make(copy1[0] + kOtherOffset, 1);
  const auto b1 = make(copy1[1] + kOtherOffset, 1);
  EXPECT_EQ(ticketFor(copy0[0], 0), a0);  // copy 0 learns its distance first
  EXPECT_EQ(ticketFor(copy1[0], 1), a1) << "copy 1's first communicator, at another distance";
  EXPECT_EQ(ticketFor(copy1[1], 1), b1);
  EXPECT_EQ(ticketFor(copy0[1], 0), b0);
  EXPECT_EQ(ticketFor(copy1[0], 0), nullptr) << "copy 0's lookups never take copy 1's tickets";
  EXPECT_EQ(ticketFor(copy0[0], 2), nullptr) << "a copy with no tickets finds none";
  EXPECT_EQ(ticketFor(copy0[0], -1), nullptr);
  resetTicketsForTests();
}

}  // namespace
}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
// The parking of other threads while code hooks are written (plugin/hooks/code_hook_parking.h), where it
// cannot see what it needs: a /proc without the per-thread "syscall" file (gVisor), a parking request
// merged into a SIGURG someone else sent, a stack that cannot be searched, a word on a stack that
// only looks like a signal frame. Each case runs in a forked child, so a thread resuming inside a new
// jump (SIGILL, SIGSEGV) fails the test instead of ending the test program.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "plugin/hooks/code_hook.h"
#include "plugin/hooks/code_hook_parking.h"
#include "tests/unit/forked_check.h"
#include "tests/unit/hook_fixture.h"

namespace {

using Slow = long (*)(long, long, long);
using Load = long (*)(const long*);

constexpr long kMark = 1'000'000'000;    // what the replacement adds on top of the original's answer
constexpr const char* kSkip = "skip: ";  // a child that cannot set up its case says so with this prefix

// shapeSlow's forward pointer, kept as the plugin keeps NCCL's: it follows every retarget.
std::atomic<void*> gSlowForward{nullptr};
long slowReplacement(long x, long one, long zero) {
  return kMark + reinterpret_cast<Slow>(gSlowForward.load())(x, one, zero);
}
void followRetarget(void* from, void* to) {
  void* expected = from;
  gSlowForward.compare_exchange_strong(expected, to);
}
long loadReplacement(const long*) { return -1; }

class CodeHookParking : public ::testing::Test {
 protected:
  void SetUp() override {
#if !SYMMEM_HAVE_HOOK_FIXTURE
    GTEST_SKIP() << symmem::testing::codeHooksUnavailable();
#else
    const std::string unavailable = symmem::testing::codeHooksUnavailable();
    if (!unavailable.empty()) GTEST_SKIP() << unavailable;
    lib_ = dlopen(SYMMEM_HOOK_SHAPES_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib_, nullptr) << dlerror();
    slow_ = reinterpret_cast<Slow>(dlsym(lib_, "shapeSlow"));
    load_ = reinterpret_cast<Load>(dlsym(lib_, "shapeLoadSecond"));
    ASSERT_TRUE(slow_ && load_);
    gSlowForward = reinterpret_cast<void*>(slow_);
    options_.retarget = &followRetarget;
#endif
  }
  void TearDown() override { symmem::undoCodeHooks(); }

  symmem::CodeHook slowHook() const {
    return {"shapeSlow", reinterpret_cast<void*>(slow_), reinterpret_cast<void*>(&slowReplacement)};
  }

  // Threads calling shapeSlow in a tight loop, each answer the original's or the replacement's.
  struct SlowCallers {
    std::atomic<bool> stop{false};
    std::atomic<int> ready{0};
    std::atomic<long> wrong{0}, calls{0};
    std::vector<std::thread> threads;
    void start(Slow slow, int count, bool blockParkSignal) {
      for (int t = 0; t < count; ++t)
        threads.emplace_back([this, slow, t, blockParkSignal] {
          if (blockParkSignal) {
            sigset_t set;
            sigemptyset(&set);
            sigaddset(&set, SIGURG);
            pthread_sigmask(SIG_BLOCK, &set, nullptr);
          }
          ready.fetch_add(1);
          while (!stop.load(std::memory_order_relaxed)) {
            const long v = slow(t + 7, 1, 0);
            if (v != t + 7 && v != kMark + t + 7) wrong.fetch_add(1);
            calls.fetch_add(1, std::memory_order_relaxed);
          }
        });
      while (ready.load() < count) std::this_thread::yield();
    }
    void finish() {
      stop = true;
      for (std::thread& t : threads) t.join();
    }
  };

  void* lib_ = nullptr;
  Slow slow_ = nullptr;
  Load load_ = nullptr;
  symmem::CodeHookOptions options_;
};

// runForkedCheck with a time limit: a child whose thread resumed into a loop of faults or garbage ends
// (SIGALRM) and fails the test instead of hanging it.
std::string runForkedCheckWithin(unsigned seconds, const std::function<std::string()>& check) {
  return symmem::testing::runForkedCheck([&] {
    alarm(seconds);
    return check();
  });
}

std::string skipReason(const std::string& problems) {
  return problems.rfind(kSkip, 0) == 0 ? problems.substr(std::strlen(kSkip)) : "";
}

// ---- a /proc without the per-thread "syscall" file (gVisor) ----------------------------------------

bool endsWith(const char* s, const char* tail) {
  const size_t n = std::strlen(s), m = std::strlen(tail);
  return n >= m && std::strcmp(s + n - m, tail) == 0;
}

int openWithoutSyscallFile(const char* path) {
  if (endsWith(path, "/syscall")) {
    errno = ENOENT;
    return -1;
  }
  return open(path, O_RDONLY | O_CLOEXEC);
}

// Two threads that block SIGURG never park, and with no "syscall" file nothing shows they are in a
// system call: whether they run the bytes cannot be told, so the set is refused. (Counted as gone,
// they were left running while their code was rewritten.)
TEST_F(CodeHookParking, ThreadsWhoseSystemCallFileCannotBeReadAreNotCountedAsGone) {
  const symmem::CodeHook hook = slowHook();
  const std::string problems = runForkedCheckWithin(30, [&]() -> std::string {
    SlowCallers callers;
    callers.start(slow_, 2, /*blockParkSignal=*/true);
    symmem::setTaskFileOpenForTests(&openWithoutSyscallFile);
    options_.parkTimeout = std::chrono::milliseconds(300);
    const symmem::CodeHookReport r = symmem::installCodeHooks({&hook, 1}, options_);
    symmem::setTaskFileOpenForTests(nullptr);
    symmem::undoCodeHooks();
    callers.finish();
    std::string out;
    if (r.installed) out += "installed while two threads that could not be seen ran the bytes\n";
    if (r.refusal.find("cannot be told") == std::string::npos) out += "refusal: " + r.refusal + "\n";
    if (gSlowForward.load() != reinterpret_cast<void*>(slow_)) out += "forward pointer not restored\n";
    if (callers.wrong.load() != 0) out += std::to_string(callers.wrong.load()) + " wrong answers\n";
    return out;
  });
  EXPECT_EQ(problems, "");
}

// The same /proc does not stop an install where every other thread parks: only a thread that neither
// parks nor can be seen holds it up.
TEST_F(CodeHookParking, ThreadsThatParkNeedNoSystemCallFile) {
  const symmem::CodeHook hook = slowHook();
  const std::string problems = runForkedCheckWithin(30, [&]() -> std::string {
    SlowCallers callers;
    callers.start(slow_, 2, /*blockParkSignal=*/false);
    symmem::setTaskFileOpenForTests(&openWithoutSyscallFile);
    const symmem::CodeHookReport r = symmem::installCodeHooks({&hook, 1}, options_);
    symmem::setTaskFileOpenForTests(nullptr);
    const long answer = slow_(5, 1, 0);
    symmem::undoCodeHooks();
    callers.finish();
    std::string out;
    if (!r.installed) out += "refused: " + r.refusal + "\n";
    if (r.installed && r.threadsParked < 2) out += std::to_string(r.threadsParked) + " threads parked\n";
    if (r.installed && answer != kMark + 5) out += "installed but not reached\n";
    if (callers.wrong.load() != 0) out += std::to_string(callers.wrong.load()) + " wrong answers\n";
    return out;
  });
  EXPECT_EQ(problems, "");
}

// ---- a parking request that arrives looking foreign ---------------------------------------------

// The caller faults inside shapeLoadSecond's first bytes; its SIGSEGV handler blocks SIGURG and
// sleeps through the install (a thread in a system call with SIGURG blocked: counted as outside the
// bytes). A SIGURG someone else sent is pending meanwhile, so the parking request merges into it
// (one pending SIGURG per thread) and arrives as theirs, when the handler returns into the bytes.
std::atomic<int> gSegvStage{0};  // 1: in the handler, 2: may return
std::atomic<pid_t> gFaultingTid{0};
void* gFaultPage = nullptr;
void sleepInsideSegvWithParkSignalBlocked(int, siginfo_t*, void*) {
  if (gSegvStage.load() == 2) {  // a second fault: the caller resumed inside the new jump
    signal(SIGSEGV, SIG_DFL);    // the fault comes again and ends the child
    return;
  }
  gFaultingTid = static_cast<pid_t>(syscall(SYS_gettid));
  gSegvStage = 1;
  while (gSegvStage.load() != 2) usleep(1000);
  mprotect(gFaultPage, 4096, PROT_READ | PROT_WRITE);
}

TEST_F(CodeHookParking, ARequestMergedIntoAForeignSignalStillMovesTheContext) {
  const symmem::CodeHook hook{"shapeLoadSecond", reinterpret_cast<void*>(load_),
                              reinterpret_cast<void*>(&loadReplacement)};
  const std::string problems = runForkedCheckWithin(30, [&]() -> std::string {
    gFaultPage = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct sigaction sa {};
    sa.sa_sigaction = &sleepInsideSegvWithParkSignalBlocked;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGURG);
    sigaction(SIGSEGV, &sa, nullptr);
    std::atomic<long> answer{-2};
    std::thread caller([&] { answer = load_(static_cast<const long*>(gFaultPage)); });  // faults at +1
    while (gSegvStage.load() != 1) usleep(1000);
    // A plain SIGURG, without the cookie (as Go's runtime or TCP urgent data send): pending while the
    // handler blocks it.
    if (syscall(SYS_tgkill, getpid(), gFaultingTid.load(), SIGURG) != 0)
      return std::string("tgkill: ") + std::strerror(errno) + "\n";
    const int movedBefore = symmem::codeHookContextsMoved();
    const symmem::CodeHookReport r = symmem::installCodeHooks({&hook, 1}, options_);
    gSegvStage = 2;
    caller.join();
    const int moved = symmem::codeHookContextsMoved() - movedBefore;
    std::string out;
    if (!r.installed) out += "refused: " + r.refusal + "\n";
    if (r.installed && r.threadsInSystemCall < 1) out += "the caller was not seen in its system call\n";
    if (answer.load() != 0) out += "the caller read " + std::to_string(answer.load()) + ", not the page's 0\n";
    if (moved < 1) out += "the interrupted context was not moved\n";
    return out;
  });
  EXPECT_EQ(problems, "") << "(a caller resuming inside the new jump dies of SIGILL or SIGSEGV)";
}

// ---- the search for signal frames up a parked thread's stack --------------------------------------

// A stack scan that cannot run (a seccomp filter denies process_vm_readv, as container runtimes'
// default profiles do without CAP_SYS_PTRACE) is said in the report, which the plugin logs.
TEST_F(CodeHookParking, AStackScanThatCannotRunIsInTheReport) {
  const symmem::CodeHook hook = slowHook();
  const std::string problems = runForkedCheckWithin(30, [&]() -> std::string {
    SlowCallers callers;
    callers.start(slow_, 1, /*blockParkSignal=*/false);
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) {
      callers.finish();
      return std::string(kSkip) + "no seccomp filters here (" + std::strerror(errno) + ")";
    }
    const symmem::CodeHookReport r = symmem::installCodeHooks({&hook, 1}, options_);
    symmem::undoCodeHooks();
    callers.finish();
    std::string out;
    if (!r.installed) out += "refused: " + r.refusal + "\n";
    if (r.installed && r.threadsParked < 1) out += "the caller did not park, so no scan ran\n";
    bool said = false;
    for (const std::string& note : r.notes)
      said = said || (note.find("could not be searched") != std::string::npos &&
                      note.find(std::strerror(EPERM)) != std::string::npos);
    if (!said) {
      out += "no note says the scan failed; notes:";
      for (const std::string& note : r.notes) out += " [" + note + "]";
      out += "\n";
    }
    return out;
  });
  if (const std::string skip = skipReason(problems); !skip.empty()) GTEST_SKIP() << skip;
  EXPECT_EQ(problems, "");
}

// What the kernel writes for a signal: the handler's return address, then a ucontext_t whose
// fpregs points just past the frame (the kernel's frame: return address, its ucontext, siginfo; then
// the 64-byte aligned register state), 456 bytes past the return address, as Linux puts it. Each fake
// frame gets a 1 KiB slot and starts where the kernel would put one below a 64-byte aligned fpregs.
constexpr size_t kFakeSlotBytes = 1024;
constexpr size_t kKernelFpstateOffset = 456;
constexpr size_t kFakeFrameInSlot = 64 - kKernelFpstateOffset % 64;

void writeFakeFrame(unsigned char* frame, uintptr_t restorer, uintptr_t rip, uintptr_t fpregs) {
  std::memset(frame, 0, kKernelFpstateOffset);  // the return address, the kernel's ucontext, the siginfo
  std::memcpy(frame, &restorer, sizeof(restorer));
  auto* uc = reinterpret_cast<ucontext_t*>(frame + 8);
  uc->uc_flags = 7;
  uc->uc_link = nullptr;
  uc->uc_mcontext.gregs[REG_CSGSFS] = 0x33;
  uc->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(rip);
  uc->uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(reinterpret_cast<uintptr_t>(frame));
  uc->uc_mcontext.fpregs = reinterpret_cast<fpregset_t>(fpregs);
}

uintptr_t savedRip(const unsigned char* frame) {
  const auto* uc = reinterpret_cast<const ucontext_t*>(frame + 8);
  return static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
}

// Three words on a parked thread's stack that look like signal frames interrupted inside shapeSlow's
// moved bytes: one whose fpregs points where the kernel puts it (moved, as a real frame is), and two
// whose fpregs points nowhere near them (left alone: a frame the kernel never wrote may be a stale
// copy in a live buffer, which a move would corrupt).
TEST_F(CodeHookParking, AFrameWhoseFpregsPointsOutsideItIsNotTrusted) {
  const symmem::CodeHook hook = slowHook();
  const std::string problems = runForkedCheckWithin(30, [&]() -> std::string {
    // The park handler's own restorer is glibc's __restore_rt: install once so that it is there.
    if (!symmem::installCodeHooks({&hook, 1}, options_).installed) return "the first install was refused\n";
    symmem::undoCodeHooks();
    struct sigaction current {};
    sigaction(SIGURG, nullptr, &current);
    const auto restorer = reinterpret_cast<uintptr_t>(current.sa_restorer);
    if (restorer == 0) return std::string(kSkip) + "no sa_restorer reported for SIGURG";
    const uintptr_t inside = reinterpret_cast<uintptr_t>(slow_) + 1;  // the first div
    std::atomic<unsigned char*> frames{nullptr};
    std::atomic<bool> stop{false};
    std::thread holder([&] {
      alignas(64) unsigned char area[3 * kFakeSlotBytes];
      unsigned char* kernelLike = area + kFakeFrameInSlot;
      unsigned char* nullFpregs = area + kFakeSlotBytes + kFakeFrameInSlot;
      unsigned char* farFpregs = area + 2 * kFakeSlotBytes + kFakeFrameInSlot;
      writeFakeFrame(kernelLike, restorer, inside, reinterpret_cast<uintptr_t>(kernelLike) + kKernelFpstateOffset);
      writeFakeFrame(nullFpregs, restorer, inside, 0);
      writeFakeFrame(farFpregs, restorer, inside, reinterpret_cast<uintptr_t>(farFpregs) + (1 << 20));
      frames = area + kFakeFrameInSlot;
      while (!stop.load()) asm volatile("" ::: "memory");  // parks here, below `area`
    });
    while (frames.load() == nullptr) std::this_thread::yield();
    const symmem::CodeHookReport r = symmem::installCodeHooks({&hook, 1}, options_);
    unsigned char* first = frames.load();
    const uintptr_t kernelLikeRip = savedRip(first);
    const uintptr_t nullFpregsRip = savedRip(first + kFakeSlotBytes);
    const uintptr_t farFpregsRip = savedRip(first + 2 * kFakeSlotBytes);
    stop = true;
    holder.join();
    std::string out;
    if (!r.installed) return "refused: " + r.refusal + "\n";
    const uintptr_t intoTrampoline = reinterpret_cast<uintptr_t>(r.hooks[0].original) + 4 + 1;  // past its endbr64
    if (kernelLikeRip != intoTrampoline) out += "the frame shaped as the kernel writes it was not moved\n";
    if (nullFpregsRip != inside) out += "a frame with a null fpregs was trusted and rewritten\n";
    if (farFpregsRip != inside) out += "a frame whose fpregs points 1 MiB away was trusted and rewritten\n";
    return out;
  });
  if (const std::string skip = skipReason(problems); !skip.empty()) GTEST_SKIP() << skip;
  EXPECT_EQ(problems, "");
}

}  // namespace

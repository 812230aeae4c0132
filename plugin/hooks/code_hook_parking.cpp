// SPDX-License-Identifier: Apache-2.0
#include "plugin/hooks/code_hook_parking.h"

#if defined(__x86_64__)

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace symmem {

namespace {

constexpr int kParkSignal = SIGURG;
constexpr int kMaxThreads = 8192;
constexpr int kMaxMoves = 256;
constexpr int kMaxRestorers = 8;
constexpr int kMaxListings = 8;                    // thread listings per round: threads started meanwhile get asked too
constexpr size_t kScanBytes = 64 << 10;            // how far up a stack the handler looks for outer signal frames
constexpr int kMaxScanStarts = 4;                  // stacks per handler run (an outer frame may sit on another stack)
constexpr unsigned long kSaRestorer = 0x04000000;  // the kernel's SA_RESTORER (not in glibc's headers)
constexpr uint16_t kUserCodeSegment = 0x33;        // CS of 64-bit user code: a real saved context has it

// Everything the handler reads. Static storage, constant-initialised, trivially destructible: it is
// there before the first request and after every destructor has run.
struct ParkState {
  std::atomic<uint32_t> hold{0};  // the round being held; 0: none
  std::atomic<pid_t> patcher{0};  // the thread writing (never parks)
  std::atomic<int> entered{0};    // ack slots used in this round
  std::atomic<uint64_t> acks[kMaxThreads];
  std::atomic<int> parkedTotal{0}, leftTotal{0};  // handler runs that parked, and that left again with
                                                  // their contexts moved (Parking::release counts them)
  std::atomic<int> moved{0};
  std::atomic<int> moveCount{0};
  struct Move {
    std::atomic<uintptr_t> from{0}, to{0}, into{0};
  } moves[kMaxMoves];
  std::atomic<int> restorerCount{0};
  std::atomic<uintptr_t> restorers[kMaxRestorers];
  std::atomic<int> scanError{0};               // ParkCounts::stackScanError of the round; reset as each round starts
  std::atomic<void (*)()> leaveHook{nullptr};  // setLeaveHookForTests
  struct sigaction previous;                   // the SIGURG action before ours, for signals that are not ours
};
ParkState gPark;
int gCookie;  // its address tells our requests from every other SIGURG

uint64_t packAck(uint32_t round, pid_t tid) {
  return (static_cast<uint64_t>(round) << 32) | static_cast<uint32_t>(tid);
}

pid_t currentTid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void sleepNs(int64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  nanosleep(&ts, nullptr);
}

long futex(std::atomic<uint32_t>* word, int op, uint32_t value) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, nullptr, nullptr, 0);
}

// ---- the handler ----------------------------------------------------------------------------------

uintptr_t movedAddress(uintptr_t rip) {
  const int n = gPark.moveCount.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    const ParkState::Move& m = gPark.moves[i];
    const uintptr_t from = m.from.load(std::memory_order_acquire), to = m.to.load(std::memory_order_acquire);
    if (rip > from && rip < to) return m.into.load(std::memory_order_acquire) + (rip - from);
  }
  return rip;
}

bool isRestorer(uint64_t word) {
  const int n = gPark.restorerCount.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (word != 0 && word == gPark.restorers[i].load(std::memory_order_relaxed)) return true;
  return false;
}

ssize_t readMemory(uintptr_t address, void* out, size_t n) {
  iovec local{out, n};
  iovec remote{reinterpret_cast<void*>(address), n};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
}

ssize_t writeMemory(uintptr_t address, const void* in, size_t n) {
  iovec local{const_cast<void*>(in), n};
  iovec remote{reinterpret_cast<void*>(address), n};
  return process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
}

void noteScanError(int err) {
  int none = 0;
  gPark.scanError.compare_exchange_strong(none, err ? err : EIO, std::memory_order_acq_rel);
}

// The kernel's x86-64 signal frame (struct rt_sigframe): the return address the handler is entered
// with (glibc's __restore_rt), the kernel's ucontext (glibc's ucontext_t up to a sigmask of 8 bytes),
// the siginfo; the register state (fpregs) follows, 64-byte aligned, with the frame placed 16-byte
// aligned (minus the return address) below it: on Linux fpregs is 456 bytes past the return address.
constexpr size_t kReturnAddressBytes = 8;
constexpr size_t kKernelSigmaskBytes = 8;
constexpr size_t kKernelFrameBytes =
    kReturnAddressBytes + offsetof(ucontext_t, uc_sigmask) + kKernelSigmaskBytes + sizeof(siginfo_t);
constexpr size_t kFpstateSlack = 64 + 16;  // the register state's alignment, and the frame's
// Offsets within the saved ucontext_t, which starts right after the return address.
constexpr size_t kGregsOffset = offsetof(ucontext_t, uc_mcontext) + offsetof(mcontext_t, gregs);
constexpr size_t kFpregsOffset = offsetof(ucontext_t, uc_mcontext) + offsetof(mcontext_t, fpregs);
constexpr size_t kContextHead = kFpregsOffset + sizeof(fpregset_t);  // the part the scan checks
constexpr size_t kSavedRipOffset = kReturnAddressBytes + kGregsOffset + static_cast<size_t>(REG_RIP) * sizeof(greg_t);

// The fields of a saved context the scan checks, copied out of the bytes read from a stack.
struct SavedContextHead {
  unsigned long flags = 0;
  uintptr_t link = 0;
  greg_t gregs[NGREG] = {};
  uintptr_t fpregs = 0;
};

bool readSavedContextHead(uintptr_t frame, SavedContextHead& out) {
  unsigned char bytes[kContextHead];
  if (readMemory(frame + kReturnAddressBytes, bytes, sizeof(bytes)) != static_cast<ssize_t>(sizeof(bytes)))
    return false;
  std::memcpy(&out.flags, bytes + offsetof(ucontext_t, uc_flags), sizeof(out.flags));
  std::memcpy(&out.link, bytes + offsetof(ucontext_t, uc_link), sizeof(out.link));
  std::memcpy(out.gregs, bytes + kGregsOffset, sizeof(out.gregs));
  std::memcpy(&out.fpregs, bytes + kFpregsOffset, sizeof(out.fpregs));
  return true;
}

// Whether a context found at `frame` (its return-address word) is one the kernel wrote: the fields it
// always sets as it does, and the register state right past the frame, where only the kernel puts
// it. A stale copy of a frame in a live buffer would otherwise be rewritten too.
bool isKernelSignalFrame(uintptr_t frame, const SavedContextHead& head) {
  const auto codeSegment = static_cast<uint16_t>(head.gregs[REG_CSGSFS] & 0xffff);
  if (head.flags > 0xff || head.link != 0 || codeSegment != kUserCodeSegment) return false;
  const uintptr_t earliest = frame + kKernelFrameBytes;
  return head.fpregs % 16 == 0 && head.fpregs >= earliest && head.fpregs <= earliest + kFpstateSlack;
}

// Rewrites the saved instruction pointer of a found frame through process_vm_writev: the frame was
// found by its looks, and a word that only looked like one must never fault the handler.
bool moveSavedRip(uintptr_t frame, uintptr_t into) {
  const auto rip = static_cast<greg_t>(into);
  if (writeMemory(frame + kSavedRipOffset, &rip, sizeof(rip)) == static_cast<ssize_t>(sizeof(rip))) return true;
  noteScanError(errno);
  return false;
}

// Looks for signal frames in [base, base + kScanBytes) and moves the contexts saved there; stacks
// those contexts ran on are queued for a look too. Reads through readMemory, so a stack that ends
// (or an alternate stack in the heap) never faults.
void scanForFrames(uintptr_t base, uintptr_t* starts, int& count) {
  base &= ~static_cast<uintptr_t>(255);  // chunks never cross a page
  uint64_t chunk[32];
  for (size_t offset = 0; offset < kScanBytes; offset += sizeof(chunk)) {
    const ssize_t got = readMemory(base + offset, chunk, sizeof(chunk));
    if (got <= 0) {
      // Where the first read of a stack is refused (a seccomp filter, a kernel without the call), no
      // stack can be searched; a later one failing is just the end of a mapping.
      if (offset == 0 && got < 0 && (errno == ENOSYS || errno == EPERM)) noteScanError(errno);
      return;
    }
    for (size_t k = 0; k < static_cast<size_t>(got) / 8; ++k) {
      if (!isRestorer(chunk[k])) continue;
      const uintptr_t frame = base + offset + k * 8;
      SavedContextHead head;
      if (!readSavedContextHead(frame, head) || !isKernelSignalFrame(frame, head)) continue;
      const greg_t* g = head.gregs;
      const auto rip = static_cast<uintptr_t>(g[REG_RIP]);
      const uintptr_t into = movedAddress(rip);
      if (into != rip && moveSavedRip(frame, into)) gPark.moved.fetch_add(1, std::memory_order_relaxed);
      const auto sp = static_cast<uintptr_t>(g[REG_RSP]);
      const bool inThisRange = sp >= base && sp < base + kScanBytes;
      if (!inThisRange && count < kMaxScanStarts) starts[count++] = sp;
    }
    if (static_cast<size_t>(got) < sizeof(chunk)) return;
  }
}

// The context this handler run interrupted: the kernel handed us its frame, so a plain store is
// right, and it is what rt_sigreturn resumes.
void moveInterruptedContext(ucontext_t* uc) {
  greg_t& rip = uc->uc_mcontext.gregs[REG_RIP];
  const uintptr_t into = movedAddress(static_cast<uintptr_t>(rip));
  if (into != static_cast<uintptr_t>(rip)) {
    rip = static_cast<greg_t>(into);
    gPark.moved.fetch_add(1, std::memory_order_relaxed);
  }
}

// Contexts saved by other handlers still running further up this thread's stacks.
void moveOuterContexts(const ucontext_t* uc) {
  if (gPark.restorerCount.load(std::memory_order_acquire) == 0) return;
  uintptr_t starts[kMaxScanStarts] = {static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RSP])};
  int count = 1;
  for (int i = 0; i < count; ++i) scanForFrames(starts[i], starts, count);
}

// Waits while a round is held (and through any round that starts before it leaves). True: it parked;
// the caller then counts it as left (leftTotal) once it has moved its contexts.
bool parkWhileHeld() {
  const pid_t self = currentTid();
  if (self == gPark.patcher.load(std::memory_order_acquire)) return false;
  uint32_t acknowledged = 0;
  for (;;) {
    const uint32_t round = gPark.hold.load(std::memory_order_acquire);
    if (round == 0) break;
    if (round != acknowledged) {
      if (acknowledged == 0) gPark.parkedTotal.fetch_add(1, std::memory_order_acq_rel);
      const int slot = gPark.entered.fetch_add(1, std::memory_order_acq_rel);
      if (slot < kMaxThreads) gPark.acks[slot].store(packAck(round, self), std::memory_order_release);
      acknowledged = round;
    }
    futex(&gPark.hold, FUTEX_WAIT_PRIVATE, round);
  }
  return acknowledged != 0;
}

void onParkSignal(int sig, siginfo_t* info, void* context) {
  const int savedErrno = errno;
  const bool ours =
      info && info->si_code == SI_QUEUE && info->si_pid == getpid() && info->si_value.sival_ptr == &gCookie;
  const bool parked = parkWhileHeld();
  if (parked) {
    void (*const leave)() = gPark.leaveHook.load(std::memory_order_acquire);
    if (leave) leave();
  }
  // Every SIGURG moves the context it interrupted, ours or not: Linux keeps one pending SIGURG per
  // thread, so a request merged into a foreign one (Go's preemption, TCP urgent data) arrives without
  // the cookie, maybe after the round, into a context still inside the rewritten bytes. The move is
  // right whenever it happens. Only a request known to be ours pays for the stack search.
  auto* uc = static_cast<ucontext_t*>(context);
  moveInterruptedContext(uc);
  if (ours || parked) moveOuterContexts(uc);
  // Left only now: a thread counted as left before its moves were made let release() report fewer
  // moved contexts than there were (about 1 install in 250 in the test of a context saved under
  // another running handler).
  if (parked) gPark.leftTotal.fetch_add(1, std::memory_order_acq_rel);
  if (!ours) {
    // Not ours: what would have happened without us (SIGURG's default action is to ignore it).
    const struct sigaction& p = gPark.previous;
    if (p.sa_flags & SA_SIGINFO) {
      if (p.sa_sigaction) p.sa_sigaction(sig, info, context);
    } else if (p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN && p.sa_handler) {
      p.sa_handler(sig);
    }
  }
  errno = savedErrno;
}

bool ensureHandler(std::string& why) {
  struct sigaction current {};
  if (sigaction(kParkSignal, nullptr, &current) != 0) {
    why = std::string("cannot read the SIGURG action: ") + std::strerror(errno);
    return false;
  }
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == &onParkSignal) return true;
  gPark.previous = current;  // whoever installed it after us is chained from now on
  struct sigaction sa {};
  sa.sa_sigaction = &onParkSignal;
  // SA_ONSTACK: a thread with an alternate stack (small thread stacks) takes the request there.
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  if (sigaction(kParkSignal, &sa, nullptr) != 0) {
    why = std::string("cannot install the SIGURG handler that parks threads: ") + std::strerror(errno);
    return false;
  }
  return true;
}

// The return addresses signal handlers are entered with (glibc's __restore_rt), to tell a signal frame.
void collectRestorers() {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction a {};
    if (sigaction(sig, nullptr, &a) != 0 || !(static_cast<unsigned long>(a.sa_flags) & kSaRestorer) || !a.sa_restorer)
      continue;
    const auto r = reinterpret_cast<uintptr_t>(a.sa_restorer);
    const int n = gPark.restorerCount.load(std::memory_order_acquire);
    bool known = false;
    for (int i = 0; i < n && !known; ++i) known = gPark.restorers[i].load() == r;
    if (known || n >= kMaxRestorers) continue;
    gPark.restorers[n].store(r, std::memory_order_release);
    gPark.restorerCount.store(n + 1, std::memory_order_release);
  }
}

// ---- reading the thread list and the threads' states (no allocation) ----------------------------

// "/proc/self/task/<tid>/<leaf>" into buf.
void taskPath(char* buf, pid_t tid, const char* leaf) {
  static constexpr char kPrefix[] = "/proc/self/task/";
  char digits[16];
  int n = 0;
  for (unsigned v = static_cast<unsigned>(tid); n == 0 || v != 0; v /= 10)
    digits[n++] = static_cast<char>('0' + v % 10);
  char* p = buf;
  for (const char* c = kPrefix; *c; ++c) *p++ = *c;
  while (n > 0) *p++ = digits[--n];
  *p++ = '/';
  for (const char* c = leaf; *c; ++c) *p++ = *c;
  *p = '\0';
}

std::atomic<int (*)(const char*)> gTaskFileOpenForTests{nullptr};  // setTaskFileOpenForTests

int openTaskFile(const char* path) {
  int (*const openForTests)(const char*) = gTaskFileOpenForTests.load(std::memory_order_acquire);
  return openForTests ? openForTests(path) : open(path, O_RDONLY | O_CLOEXEC);
}

// A small bounded read; the length, or -1 with errno.
ssize_t readTaskFile(pid_t tid, const char* leaf, char* buf, size_t size) {
  char path[64];
  taskPath(path, tid, leaf);
  const int fd = openTaskFile(path);
  if (fd < 0) return -1;
  const ssize_t n = read(fd, buf, size - 1);
  const int err = errno;
  close(fd);
  if (n >= 0) buf[n] = '\0';
  errno = err;
  return n;
}

// Unreadable: running or in a system call, which cannot be told (its "syscall" file cannot be read).
enum class Seen { Running, Unreadable, InSystemCall, Gone };

// Whether the kernel still has thread tid in this process: tgkill with signal 0 checks without sending.
bool threadExists(pid_t tid) { return syscall(SYS_tgkill, getpid(), tid, 0) == 0 || errno != ESRCH; }

// A task's stat line says zombie (Z) or dead (X); the state follows the name, which may hold ')'.
bool isZombie(const char* stat) {
  const char* paren = std::strrchr(stat, ')');
  return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

// Whether the park signal is blocked in thread tid (its /proc status SigBlk mask); unknown: blocked.
bool parkSignalBlocked(pid_t tid) {
  char status[4096];
  const ssize_t n = readTaskFile(tid, "status", status, sizeof(status));
  const char* line = n > 0 ? std::strstr(status, "\nSigBlk:") : nullptr;
  if (line == nullptr) return true;
  char* end = nullptr;
  const unsigned long long mask = std::strtoull(line + 8, &end, 16);
  if (end == line + 8) return true;
  return ((mask >> (kParkSignal - 1)) & 1ull) != 0;
}

// In a system call with the park signal blocked: its user code resumes after a syscall instruction,
// and none is among the moved bytes. With the signal not blocked it is still waited for: the signal
// interrupts the call and the handler parks it, and the thread may be in a system call inside another
// signal's handler whose saved context lies in the moved bytes, which only the park handler sees and
// moves (a thread counted as outside the bytes there would resume inside the new jump). A zombie, or
// a thread the kernel no longer knows, has nothing left to run. A file that cannot be read says
// nothing about the thread: gVisor's /proc has no "syscall", and a thread counted as gone for that
// would be left running while its code is rewritten.
Seen look(pid_t tid, int& unreadable) {
  char buf[256];
  const ssize_t n = readTaskFile(tid, "syscall", buf, sizeof(buf));
  const int syscallError = n < 0 ? errno : 0;
  if (n > 0 && buf[0] >= '0' && buf[0] <= '9' && parkSignalBlocked(tid)) return Seen::InSystemCall;
  char stat[512];
  if (readTaskFile(tid, "stat", stat, sizeof(stat)) > 0 && isZombie(stat)) return Seen::Gone;
  if (!threadExists(tid)) return Seen::Gone;
  if (syscallError != 0) {
    unreadable = syscallError;
    return Seen::Unreadable;
  }
  return Seen::Running;
}

// Calls f(tid) for every thread of the process but the caller; errno-style result (0: listed).
template <typename F>
int forEachOtherThread(F&& f) {
  const int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno ? errno : EACCES;
  const pid_t self = currentTid();
  alignas(8) char buf[4096];
  bool sawSelf = false;
  for (;;) {
    const long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
    if (n < 0) {
      const int err = errno;
      close(fd);
      return err ? err : EIO;
    }
    if (n == 0) break;
    for (long off = 0; off < n;) {
      // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
      unsigned short reclen;
      std::memcpy(&reclen, buf + off + 16, sizeof(reclen));
      const char* name = buf + off + 19;
      long tid = 0;
      for (const char* c = name; *c >= '0' && *c <= '9'; ++c) tid = tid * 10 + (*c - '0');
      if (tid == self) sawSelf = true;
      if (tid > 0 && tid != self) f(static_cast<pid_t>(tid));
      off += reclen ? reclen : 1;
    }
  }
  close(fd);
  // A list without the caller in it is not this process's (a tmpfs over /proc, say).
  return sawSelf ? 0 : ENOENT;
}

enum : uint8_t { kWaiting, kParked, kInSystemCall, kGone };

}  // namespace

bool publishContextMoves(std::span<const ContextMove> moves) {
  int count = gPark.moveCount.load(std::memory_order_acquire);
  int fresh = 0;
  for (const ContextMove& m : moves) {
    bool known = false;
    for (int i = 0; i < count && !known; ++i) known = gPark.moves[i].from.load() == m.from;
    fresh += known ? 0 : 1;
  }
  if (count + fresh > kMaxMoves) return false;
  for (const ContextMove& m : moves) {
    int i = 0;
    while (i < count && gPark.moves[i].from.load() != m.from) ++i;
    ParkState::Move& slot = gPark.moves[i];
    // Either trampoline is right for a reader that sees the old one: both stay mapped.
    slot.into.store(m.into, std::memory_order_release);
    slot.to.store(m.to, std::memory_order_release);
    if (i == count) {
      slot.from.store(m.from, std::memory_order_release);
      gPark.moveCount.store(++count, std::memory_order_release);
    }
  }
  return true;
}

int contextsMovedSoFar() { return gPark.moved.load(std::memory_order_acquire); }

void setLeaveHookForTests(void (*f)()) { gPark.leaveHook.store(f, std::memory_order_release); }

void setTaskFileOpenForTests(int (*openTaskFile)(const char* path)) {
  gTaskFileOpenForTests.store(openTaskFile, std::memory_order_release);
}

ssize_t readOwnMemory(uintptr_t address, void* out, size_t n) { return readMemory(address, out, n); }

bool Parking::prepare(std::string& why) {
  if (!ensureHandler(why)) return false;
  collectRestorers();
  threads_.clear();
  threads_.reserve(kMaxThreads);
  newcomers_.clear();
  newcomers_.reserve(kMaxThreads);
  const int err = forEachOtherThread([&](pid_t tid) {
    if (threads_.size() < static_cast<size_t>(kMaxThreads)) threads_.push_back({tid, kWaiting});
  });
  if (err != 0) {
    why = std::string("cannot list this process's threads (/proc/self/task: ") + std::strerror(err) +
          "), so no thread can be shown to be outside the bytes to rewrite";
    return false;
  }
  if (threads_.size() >= static_cast<size_t>(kMaxThreads)) {
    why = "more than " + std::to_string(kMaxThreads - 1) + " other threads: too many to park";
    return false;
  }
  std::sort(threads_.begin(), threads_.end(), [](const Thread& a, const Thread& b) { return a.tid < b.tid; });
  return true;
}

Parking::Thread* Parking::find(pid_t tid) {
  auto it = std::lower_bound(threads_.begin(), threads_.end(), tid, [](const Thread& t, pid_t v) { return t.tid < v; });
  return it != threads_.end() && it->tid == tid ? &*it : nullptr;
}

bool Parking::send(pid_t tid, int& err) const {
  siginfo_t info{};
  info.si_signo = kParkSignal;
  info.si_code = SI_QUEUE;
  info.si_pid = getpid();
  info.si_uid = getuid();
  info.si_value.sival_ptr = &gCookie;
  if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, kParkSignal, &info) == 0) return true;
  err = errno;
  return false;
}

void Parking::absorbAcks() {
  const int entered = std::min(gPark.entered.load(std::memory_order_acquire), kMaxThreads);
  while (acksSeen_ < entered) {
    const uint64_t ack = gPark.acks[acksSeen_].load(std::memory_order_acquire);
    if (ack == 0) return;  // that slot's store has not landed yet
    ++acksSeen_;
    if (static_cast<uint32_t>(ack >> 32) != round_) continue;
    if (Thread* t = find(static_cast<pid_t>(ack & 0xffffffffu)); t && t->state != kGone) t->state = kParked;
  }
}

// Threads started since the last listing get a request too. False: a request could not be sent.
bool Parking::relist(int& err) {
  newcomers_.clear();
  const int listErr = forEachOtherThread([&](pid_t tid) {
    if (!find(tid) && threads_.size() + newcomers_.size() < static_cast<size_t>(kMaxThreads)) newcomers_.push_back(tid);
  });
  if (listErr != 0) {
    err = listErr;
    return false;
  }
  for (pid_t tid : newcomers_) {
    int sendErr = 0;
    const bool sent = send(tid, sendErr);
    if (!sent && sendErr != ESRCH) {
      err = sendErr;
      return false;
    }
    threads_.push_back({tid, sent ? kWaiting : kGone});  // capacity reserved in prepare()
  }
  std::sort(threads_.begin(), threads_.end(), [](const Thread& a, const Thread& b) { return a.tid < b.tid; });
  return true;
}

// True when every thread is parked, in a system call, or gone. `finalCheck`: a thread counted as in
// a system call that has not parked since must still be in one.
bool Parking::settle(bool finalCheck) {
  absorbAcks();
  bool settled = true;
  for (Thread& t : threads_) {
    if (t.state == kParked || t.state == kGone) continue;
    if (t.state == kInSystemCall && !finalCheck) continue;
    int unreadable = 0;
    switch (look(t.tid, unreadable)) {
      case Seen::Gone:
        t.state = kGone;
        break;
      case Seen::InSystemCall:
        t.state = kInSystemCall;
        break;
      case Seen::Running:
      case Seen::Unreadable:  // waited for until it parks: only the handler shows where it is then
        t.state = kWaiting;
        settled = false;
        break;
    }
    t.unreadable = unreadable;
  }
  return settled;
}

bool Parking::park(std::chrono::milliseconds timeout, std::string& why) {
  gPark.patcher.store(currentTid(), std::memory_order_release);
  round_ = static_cast<uint32_t>(nowNs() / 1000) | 1u;  // never 0, and new in each round
  while (round_ == gPark.hold.load()) ++round_;
  acksSeen_ = 0;
  for (int i = 0; i < kMaxThreads; ++i) gPark.acks[i].store(0, std::memory_order_relaxed);
  gPark.entered.store(0, std::memory_order_release);
  movedAtStart_ = gPark.moved.load();
  gPark.scanError.store(0, std::memory_order_release);
  gPark.hold.store(round_, std::memory_order_release);
  held_ = true;
  int err = 0;
  pid_t failed = 0;
  for (Thread& t : threads_) {
    if (send(t.tid, err)) continue;
    if (err == ESRCH) {
      t.state = kGone;
      continue;
    }
    failed = t.tid;
    break;
  }
  const int64_t deadline = nowNs() + std::chrono::nanoseconds(timeout).count();
  int listings = 1;
  int64_t pause = 20'000;
  bool ok = failed == 0;
  while (ok) {
    if (settle(false)) {
      if (listings < kMaxListings) {
        const size_t before = threads_.size();
        ++listings;
        if (!relist(err)) {
          ok = false;
          break;
        }
        if (threads_.size() != before) continue;
      }
      if (settle(true)) break;
    }
    if (nowNs() > deadline) {
      ok = false;
      break;
    }
    sleepNs(pause);
    pause = std::min<int64_t>(pause * 2, 1'000'000);
  }
  if (ok) return true;
  release();  // before anything allocates below
  if (failed != 0) {
    why = "a parking request to thread " + std::to_string(failed) + " could not be sent (" + std::strerror(err) +
          "), so that thread could be running the bytes to rewrite";
    return false;
  }
  if (err != 0) {
    why = std::string("the thread list could not be read again (") + std::strerror(err) + ")";
    return false;
  }
  why = whyNotParked(timeout);
  if (why.empty())
    why = listings >= kMaxListings ? "threads kept starting while the others were being parked"
                                   : "another thread could not be shown to be outside the bytes to rewrite";
  return false;
}

// Names a thread still waited for, one whose state could not be read first.
std::string Parking::whyNotParked(std::chrono::milliseconds timeout) const {
  const Thread* stuck = nullptr;
  for (const Thread& t : threads_)
    if (t.state == kWaiting && (stuck == nullptr || t.unreadable != 0)) stuck = &t;
  if (stuck == nullptr) return "";
  char name[64] = "?";
  if (readTaskFile(stuck->tid, "comm", name, sizeof(name)) > 0) name[std::strcspn(name, "\n")] = '\0';
  const std::string thread = "thread " + std::to_string(stuck->tid) + " (" + name + ")";
  const std::string ms = std::to_string(timeout.count());
  if (stuck->unreadable != 0)
    return thread + " did not park within " + ms +
           " ms, and whether it is in a system call cannot be told (/proc/self/task/" + std::to_string(stuck->tid) +
           "/syscall cannot be read: " + std::strerror(stuck->unreadable) +
           "; gVisor has no such file), so it could be running the bytes to rewrite";
  return thread + " neither parked within " + ms +
         " ms nor is in a system call (it may block SIGURG, or be starved of CPU), so it could be running the bytes "
         "to rewrite";
}

ParkCounts Parking::release() {
  if (!held_) return counts_;
  held_ = false;
  absorbAcks();
  counts_ = {};
  for (const Thread& t : threads_) {
    counts_.parked += t.state == kParked;
    counts_.inSystemCall += t.state == kInSystemCall;
  }
  gPark.hold.store(0, std::memory_order_release);
  futex(&gPark.hold, FUTEX_WAKE_PRIVATE, INT_MAX);
  gPark.patcher.store(0, std::memory_order_release);
  // Only for the count: the moves are right whenever a thread reads them.
  const int64_t deadline = nowNs() + 50'000'000;
  while (gPark.leftTotal.load(std::memory_order_acquire) < gPark.parkedTotal.load(std::memory_order_acquire) &&
         nowNs() < deadline)
    sleepNs(20'000);
  counts_.moved = gPark.moved.load() - movedAtStart_;
  counts_.stackScanError = gPark.scanError.load(std::memory_order_acquire);
  return counts_;
}

}  // namespace symmem

#endif  // __x86_64__

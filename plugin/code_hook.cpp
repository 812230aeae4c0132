// SPDX-License-Identifier: Apache-2.0
#include "plugin/code_hook.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>

#include "plugin/x86_decoder.h"

namespace symmem {

#if defined(__x86_64__)

namespace {

constexpr size_t kJumpBytes = 5;      // jmp rel32
constexpr size_t kAbsJumpBytes = 14;  // jmp qword [rip+0]; .quad target
constexpr size_t kSlotBytes = 64;     // per hook: a relay to the replacement, then the trampoline
constexpr size_t kRelayOffset = 0;
constexpr size_t kTrampolineOffset = 16;
constexpr uint8_t kEndbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
constexpr size_t kRegionBytes = 4096;
constexpr int kMaxHooks = static_cast<int>(kRegionBytes / kSlotBytes);
constexpr int64_t kReach = INT32_MAX - static_cast<int64_t>(kRegionBytes);

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

// One function's plan: where the jump goes and what moves into the trampoline.
struct Plan {
  const CodeHook* hook = nullptr;
  uint8_t* start = nullptr;
  uint8_t* patchAt = nullptr;  // start, or start + 4 past an endbr64 (kept for indirect calls)
  size_t moved = 0;            // whole instructions, >= kJumpBytes
  std::vector<X86Instruction> instructions;
  std::string movedText;
};

// A hook in place: enough to put the bytes back.
struct Installed {
  InstalledHook hook;
  void* replacement = nullptr;
  uint8_t* patchAt = nullptr;
  uint8_t original[kJumpBytes] = {};  // the bytes the jump replaced
};

std::mutex gMutex;
std::vector<Installed> gInstalled;

int64_t distance(const void* a, const void* b) {
  return static_cast<int64_t>(reinterpret_cast<uintptr_t>(a)) - static_cast<int64_t>(reinterpret_cast<uintptr_t>(b));
}

std::string hex(int64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "+%#llx", static_cast<unsigned long long>(v));
  return buf;
}

// ---- planning ----------------------------------------------------------------------------------

bool planHook(const X86Decoder& decoder, const CodeHook& hook, Plan& plan, std::string& why) {
  const std::string name = hook.name ? hook.name : "?";
  Dl_info info{};
  void* entry = nullptr;
  const bool known = dladdr1(hook.target, &info, &entry, RTLD_DL_SYMENT) != 0;
  const auto* sym = static_cast<const ElfW(Sym)*>(entry);
  if (!known || !sym || info.dli_saddr != hook.target || ELF64_ST_TYPE(sym->st_info) != STT_FUNC) {
    why = name + ": not the start of a function symbol, so its size (and what branches into it) is unknown";
    return false;
  }
  const size_t size = sym->st_size;
  auto* start = static_cast<uint8_t*>(hook.target);
  plan.hook = &hook;
  plan.start = start;
  size_t at = 0;
  auto decodeAt = [&](size_t offset) {
    return decoder.decode(start + offset, size - offset, reinterpret_cast<uint64_t>(start + offset));
  };
  if (size > 4) {
    auto first = decodeAt(0);
    if (first && first->isEndbr64) at = first->length;
  }
  plan.patchAt = start + at;
  std::string kept = at ? ", endbr64 kept" : "";
  if (at + kJumpBytes > size) {
    why = name + ": " + std::to_string(size) + " bytes long, too short for a " + std::to_string(kJumpBytes) +
          "-byte jump" + (at ? " after its endbr64" : "");
    return false;
  }
  while (plan.moved < kJumpBytes) {
    const size_t offset = at + plan.moved;
    if (offset >= size) {
      why = name + ": " + std::to_string(size) + " bytes long, too short for a " + std::to_string(kJumpBytes) +
            "-byte jump" + (at ? " after its endbr64" : "");
      return false;
    }
    auto in = decodeAt(offset);
    if (!in) {
      why = name + ": cannot decode the instruction at " + hex(static_cast<int64_t>(offset));
      return false;
    }
    if (in->changesControlFlow) {
      why = name + ": its first bytes hold a " + in->mnemonic + " at " + hex(static_cast<int64_t>(offset)) +
            ", which cannot be moved";
      return false;
    }
    if (in->ripRelative && in->displacementBytes != 4) {
      why = name + ": an unexpected RIP-relative form (" + in->mnemonic + ") in its first bytes";
      return false;
    }
    plan.movedText += (plan.instructions.empty() ? "" : ", ") + in->mnemonic + (in->ripRelative ? " [rip]" : "");
    plan.instructions.push_back(*in);
    plan.moved += in->length;
  }
  if (at + plan.moved > size) {
    why = name + ": the moved instructions run past the function's end";
    return false;
  }
  // The whole body, for branches that land inside what moves (or on the entry, which would then
  // re-enter the replacement).
  for (size_t offset = 0; offset < size;) {
    auto in = decodeAt(offset);
    if (!in) {
      why = name + ": cannot decode its body at " + hex(static_cast<int64_t>(offset)) +
            " to check what branches into the moved bytes";
      return false;
    }
    if (in->hasRelativeTarget && offset >= at + plan.moved) {
      const auto target = in->relativeTarget;
      const auto lo = reinterpret_cast<uint64_t>(start), hi = reinterpret_cast<uint64_t>(plan.patchAt + plan.moved);
      if (target >= lo && target < hi) {
        why = name + ": the " + in->mnemonic + " at " + hex(static_cast<int64_t>(offset)) + " branches to " +
              hex(static_cast<int64_t>(target - lo)) + ", inside the bytes the hook would move";
        return false;
      }
    }
    offset += in->length;
  }
  plan.movedText += " (" + std::to_string(plan.moved) + " bytes at " + hex(static_cast<int64_t>(at)) + kept + ")";
  return true;
}

// ---- memory near the targets (rel32 reach) ---------------------------------------------------

uint8_t* mapNear(const void* target) {
  const auto base = reinterpret_cast<uintptr_t>(target) & ~static_cast<uintptr_t>(0xffff);
  constexpr uintptr_t kStep = 1u << 20;
  for (uintptr_t i = 1; i < 2000; ++i) {
    for (int sign : {-1, 1}) {
      const uintptr_t hint = sign < 0 ? base - i * kStep : base + i * kStep;
      void* p = mmap(reinterpret_cast<void*>(hint), kRegionBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
      if (p == MAP_FAILED) continue;
      if (std::llabs(distance(p, target)) < kReach / 2) return static_cast<uint8_t*>(p);
      munmap(p, kRegionBytes);  // an old kernel took the flag as a hint and put it elsewhere
    }
  }
  return nullptr;
}

void writeAbsJump(uint8_t* at, const void* to) {
  const uint8_t op[6] = {0xff, 0x25, 0, 0, 0, 0};
  std::memcpy(at, op, sizeof(op));
  const auto target = reinterpret_cast<uint64_t>(to);
  std::memcpy(at + 6, &target, sizeof(target));
}

// Copies the moved instructions to `tramp`, re-aiming RIP-relative displacements.
bool relocate(const Plan& plan, uint8_t* tramp, std::string& why) {
  std::memcpy(tramp, plan.patchAt, plan.moved);
  size_t offset = 0;
  for (const X86Instruction& in : plan.instructions) {
    if (in.ripRelative) {
      int32_t disp = 0;
      std::memcpy(&disp, tramp + offset + in.displacementOffset, 4);
      const int64_t moved = static_cast<int64_t>(disp) + distance(plan.patchAt, tramp);
      if (moved < INT32_MIN || moved > INT32_MAX) {
        why =
            std::string(plan.hook->name) + ": its RIP-relative " + in.mnemonic + " is out of reach from the trampoline";
        return false;
      }
      const auto d = static_cast<int32_t>(moved);
      std::memcpy(tramp + offset + in.displacementOffset, &d, 4);
    }
    offset += in.length;
  }
  writeAbsJump(tramp + plan.moved, plan.patchAt + plan.moved);
  return true;
}

// ---- writing code --------------------------------------------------------------------------------

// Every core drops what it fetched before (Linux 4.16+); without it, x86 still keeps instruction
// fetch coherent with stores, which is what the atomic store relies on.
void syncCores() {
  static const bool registered =
      syscall(SYS_membarrier, 64 /*MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE*/, 0, 0) == 0;
  if (registered) syscall(SYS_membarrier, 32 /*MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE*/, 0, 0);
}

bool store16(uint8_t* window, const uint8_t* expected, const uint8_t* desired) {
  unsigned __int128 want, put;
  std::memcpy(&want, expected, 16);
  std::memcpy(&put, desired, 16);
  bool ok;
  // lock cmpxchg16b: one atomic 16-byte write of an aligned window (no libatomic lock fallback).
  uint64_t lo = static_cast<uint64_t>(want), hi = static_cast<uint64_t>(want >> 64);
  asm volatile("lock cmpxchg16b %1\n\tsete %0"
               : "=q"(ok), "+m"(*reinterpret_cast<volatile unsigned __int128*>(window)), "+a"(lo), "+d"(hi)
               : "b"(static_cast<uint64_t>(put)), "c"(static_cast<uint64_t>(put >> 64))
               : "memory", "cc");
  return ok;
}

struct Protector {
  const CodeHookOptions& options;
  int operator()(void* page, size_t length, int prot) const {
    return options.protect ? options.protect(page, length, prot) : mprotect(page, length, prot);
  }
};

// ---- parking the other threads --------------------------------------------------------------
// Nothing between park() and release() allocates: a parked thread may hold the allocator's lock.

// A parking request is a SIGTRAP queued to one thread with this cookie as its value: the handler
// tells it from every other SIGTRAP (a debugger's, the application's) and chains those.
int gCookie;
std::atomic<bool> gHold{false};
std::atomic<int> gEntered{0};
std::atomic<int> gLeft{0};
constexpr int kMaxThreads = 4096;
std::atomic<pid_t> gAcked[kMaxThreads];
struct Move {
  uintptr_t from, to, into;  // a thread resuming in (from, to) resumes at into + (rip - from)
};
Move gMoves[kMaxHooks];
std::atomic<int> gMoveCount{0};
std::atomic<int> gMoved{0};
struct sigaction gPrevious;

int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void onTrap(int sig, siginfo_t* info, void* context) {
  if (info && info->si_code == SI_QUEUE && info->si_value.sival_ptr == &gCookie) {
    if (!gHold.load(std::memory_order_acquire)) return;  // late: that round is over
    const int slot = gEntered.fetch_add(1, std::memory_order_acq_rel);
    if (slot < kMaxThreads) gAcked[slot].store(static_cast<pid_t>(syscall(SYS_gettid)), std::memory_order_release);
    const int64_t deadline = nowNs() + 5'000'000'000LL;  // never park forever
    while (gHold.load(std::memory_order_acquire) && nowNs() < deadline) asm volatile("pause");
    auto* uc = static_cast<ucontext_t*>(context);
    const auto rip = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
    const int moves = gMoveCount.load(std::memory_order_acquire);
    for (int i = 0; i < moves; ++i) {
      if (rip > gMoves[i].from && rip < gMoves[i].to) {
        uc->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(gMoves[i].into + (rip - gMoves[i].from));
        gMoved.fetch_add(1, std::memory_order_relaxed);
      }
    }
    gLeft.fetch_add(1, std::memory_order_acq_rel);
    return;
  }
  // Not ours: what would have happened without us.
  if (gPrevious.sa_flags & SA_SIGINFO) {
    if (gPrevious.sa_sigaction) gPrevious.sa_sigaction(sig, info, context);
  } else if (gPrevious.sa_handler == SIG_DFL) {
    signal(SIGTRAP, SIG_DFL);
    raise(SIGTRAP);  // delivered as the handler returns: the default action, as before
  } else if (gPrevious.sa_handler != SIG_IGN) {
    gPrevious.sa_handler(sig);
  }
}

// Installed once and kept: a parking signal still queued to a thread that was in the kernel must find
// this handler, not the default action.
bool installTrapHandler(std::string& why) {
  static bool installed = false;
  if (installed) return true;
  struct sigaction sa {};
  sa.sa_sigaction = onTrap;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGTRAP, &sa, &gPrevious) != 0) {
    why = std::string("cannot install the SIGTRAP handler that parks threads: ") + std::strerror(errno);
    return false;
  }
  installed = true;
  return true;
}

// A small bounded read of /proc/self/task/<tid>/<file> into `buf` (no allocation); length or -1.
ssize_t readTaskFile(pid_t tid, const char* file, char* buf, size_t size) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%d/%s", static_cast<int>(tid), file);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n >= 0) buf[n] = '\0';
  return n;
}

// Blocked in a system call: its user code resumes after a syscall instruction, and none is ever among
// the moved bytes. Gone: nothing to wait for.
bool inSystemCallOrGone(pid_t tid) {
  char buf[512];
  const ssize_t n = readTaskFile(tid, "syscall", buf, sizeof(buf));
  if (n < 0) return readTaskFile(tid, "stat", buf, sizeof(buf)) < 0;
  return n > 0 && std::strncmp(buf, "running", 7) != 0 && buf[0] != '-';
}

std::vector<pid_t> otherThreads() {
  std::vector<pid_t> tids;
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return tids;
  while (dirent* e = readdir(dir)) {
    const long tid = std::strtol(e->d_name, nullptr, 10);
    if (tid > 0 && tid != self && tids.size() < kMaxThreads) tids.push_back(static_cast<pid_t>(tid));
  }
  closedir(dir);
  return tids;
}

// Parks every other thread until release(). park() returns 0, or the id of a thread that neither
// stopped nor is in the kernel (then nobody is held).
class Parking {
 public:
  explicit Parking(std::vector<pid_t> threads) : threads_(std::move(threads)) { asked_.reserve(threads_.size()); }
  ~Parking() { release(); }

  pid_t park(std::chrono::milliseconds timeout) {
    gEntered.store(0);
    gLeft.store(0);
    gMoved.store(0);
    gHold.store(true, std::memory_order_release);
    held_ = true;
    const pid_t pid = getpid();
    for (pid_t tid : threads_) {
      siginfo_t info{};
      info.si_signo = SIGTRAP;
      info.si_code = SI_QUEUE;
      info.si_pid = pid;
      info.si_uid = getuid();
      info.si_value.sival_ptr = &gCookie;
      if (syscall(SYS_rt_tgsigqueueinfo, pid, tid, SIGTRAP, &info) == 0) asked_.push_back(tid);
    }
    const int sent = static_cast<int>(asked_.size());
    const int64_t deadline = nowNs() + std::chrono::nanoseconds(timeout).count();
    while (gEntered.load(std::memory_order_acquire) < sent && nowNs() < deadline) sched_yield();
    if (gEntered.load() >= sent) return 0;
    const int acks = std::min(gEntered.load(), kMaxThreads);
    for (pid_t tid : asked_) {
      bool answered = false;
      for (int i = 0; i < acks && !answered; ++i) answered = gAcked[i].load() == tid;
      if (answered || inSystemCallOrGone(tid)) continue;
      release();
      return tid;
    }
    return 0;
  }

  // Lets them go, and waits (bounded) until each has read the move table, which is then cleared.
  void release() {
    if (!held_) return;
    gHold.store(false, std::memory_order_release);
    held_ = false;
    const int64_t deadline = nowNs() + 1'000'000'000LL;
    while (gLeft.load(std::memory_order_acquire) < gEntered.load(std::memory_order_acquire) && nowNs() < deadline)
      sched_yield();
    gMoveCount.store(0, std::memory_order_release);
  }

  int asked() const { return static_cast<int>(asked_.size()); }

 private:
  std::vector<pid_t> threads_;
  std::vector<pid_t> asked_;
  bool held_ = false;
};

// Replaces [at, at + n) of one aligned 16-byte window with one atomic store. False: it changed meanwhile.
bool storeInWindow(uint8_t* at, const uint8_t* bytes, size_t n, uint8_t* before) {
  auto* window = reinterpret_cast<uint8_t*>(reinterpret_cast<uintptr_t>(at) & ~static_cast<uintptr_t>(15));
  uint8_t old[16], next[16];
  std::memcpy(old, window, 16);
  std::memcpy(next, old, 16);
  std::memcpy(next + (at - window), bytes, n);
  if (!store16(window, old, next)) return false;
  if (before) std::memcpy(before, old + (at - window), n);
  return true;
}

// Writes `bytes` over [at, at + n) with the pages writable for the write only; `before` receives what
// was there. Inside one aligned 16-byte window it is one atomic store: a thread that is not parked
// fetches the old bytes or the new ones. Across two windows (a function that does not start 16-byte
// aligned) it is two, the second window first, so the jump's opcode lands last; only a thread that
// neither parks nor sits in the kernel could then see a mix (docs/attach.md). 0, or the errno of the
// refusal (EAGAIN: the bytes changed under us). Allocates nothing.
int writeCode(uint8_t* at, const uint8_t* bytes, size_t n, uint8_t* before, const Protector& protect) {
  const auto first = reinterpret_cast<uintptr_t>(at) & ~(kPage - 1);
  const auto last = (reinterpret_cast<uintptr_t>(at) + n - 1) & ~(kPage - 1);
  const size_t length = last - first + kPage;
  auto* page = reinterpret_cast<void*>(first);
  if (protect(page, length, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return errno ? errno : EACCES;
  const size_t inFirst = std::min(n, 16 - (reinterpret_cast<uintptr_t>(at) & 15));
  bool ok = true;
  if (inFirst < n) ok = storeInWindow(at + inFirst, bytes + inFirst, n - inFirst, before ? before + inFirst : nullptr);
  if (ok) ok = storeInWindow(at, bytes, inFirst, before);
  protect(page, length, PROT_READ | PROT_EXEC);
  __builtin___clear_cache(reinterpret_cast<char*>(at), reinterpret_cast<char*>(at + n));
  syncCores();
  return ok ? 0 : EAGAIN;
}

std::string writeRefusal(int err) {
  if (err == EAGAIN) return "the code changed under the patch (something else rewrote it)";
  return std::string("its code page cannot be made writable (") + std::strerror(err) +
         "): a W^X policy (SELinux execmod, PaX) forbids patching code";
}

}  // namespace

CodeHookReport installCodeHooks(std::span<const CodeHook> hooks, const CodeHookOptions& options) {
  std::lock_guard<std::mutex> lock(gMutex);
  CodeHookReport report;
  auto refuse = [&](std::string why) {
    report.installed = false;
    report.hooks.clear();
    report.refusal = std::move(why);
    return report;
  };
  if (hooks.empty()) return refuse("no functions to hook");
  if (static_cast<int>(hooks.size()) > kMaxHooks) return refuse("too many functions in one set");

  // Already in place (a second tuner init, a preloaded copy asking again)?
  size_t already = 0;
  for (const CodeHook& h : hooks) {
    for (const Installed& i : gInstalled) {
      if (i.hook.target != h.target) continue;
      if (i.replacement != h.replacement)
        return refuse(std::string(h.name) + ": already hooked to another replacement");
      ++already;
    }
  }
  auto reportInstalled = [&] {
    report.installed = true;
    for (const CodeHook& h : hooks)
      for (const Installed& i : gInstalled)
        if (i.hook.target == h.target) report.hooks.push_back(i.hook);
    return report;
  };
  if (already == hooks.size()) return reportInstalled();
  if (already != 0) return refuse("only part of the set is hooked already");

  std::string why;
  const X86Decoder* decoder = X86Decoder::load(options.disassembler, &why);
  if (!decoder) return refuse(why);

  std::vector<Plan> plans(hooks.size());
  for (size_t i = 0; i < hooks.size(); ++i)
    if (!planHook(*decoder, hooks[i], plans[i], why)) return refuse(why);

  uint8_t* region = mapNear(plans[0].patchAt);
  if (!region) return refuse("no memory within reach (2 GiB) of the functions for the trampolines");
  auto unmapAndRefuse = [&](std::string reason) {
    munmap(region, kRegionBytes);
    return refuse(std::move(reason));
  };
  const Protector protect{options};
  // Everything the parked phase needs is built before it: the jumps, the records, the move table.
  std::vector<Installed> done(plans.size());
  std::vector<std::array<uint8_t, kJumpBytes>> jumps(plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    const Plan& plan = plans[i];
    uint8_t* slot = region + i * kSlotBytes;
    if (std::llabs(distance(slot, plan.patchAt)) > kReach)
      return unmapAndRefuse(std::string(plan.hook->name) + ": too far (> 2 GiB) from the other functions' trampolines");
    writeAbsJump(slot + kRelayOffset, plan.hook->replacement);
    uint8_t* tramp = slot + kTrampolineOffset;
    std::memcpy(tramp, kEndbr64, sizeof(kEndbr64));  // reached by indirect calls
    if (!relocate(plan, tramp + sizeof(kEndbr64), why)) return unmapAndRefuse(why);
    jumps[i][0] = 0xe9;
    const auto rel = static_cast<int32_t>(distance(slot + kRelayOffset, plan.patchAt + kJumpBytes));
    std::memcpy(jumps[i].data() + 1, &rel, 4);
    done[i].replacement = plan.hook->replacement;
    done[i].patchAt = plan.patchAt;
    done[i].hook = {plan.hook->name, plan.hook->target, tramp, plan.movedText};
    const auto from = reinterpret_cast<uintptr_t>(plan.patchAt);
    gMoves[i] = {from, from + plan.moved, reinterpret_cast<uintptr_t>(tramp + sizeof(kEndbr64))};
  }
  if (protect(region, kRegionBytes, PROT_READ | PROT_EXEC) != 0)
    return unmapAndRefuse(std::string("the trampoline page cannot be made executable (") + std::strerror(errno) +
                          "): a W^X policy");
  if (!installTrapHandler(why)) return unmapAndRefuse(why);

  auto announce = [&](bool on) {
    if (!options.beforeWrite) return;
    for (const Installed& d : done) options.beforeWrite(d.hook.target, on ? d.hook.original : d.hook.target);
  };
  announce(true);
  gMoveCount.store(static_cast<int>(plans.size()), std::memory_order_release);
  Parking parking(otherThreads());
  if (const pid_t stuck = parking.park(options.parkTimeout)) {
    gMoveCount.store(0);
    announce(false);
    return unmapAndRefuse("thread " + std::to_string(stuck) + " neither stopped within " +
                          std::to_string(options.parkTimeout.count()) +
                          " ms nor is in a system call (it may block SIGTRAP), so it could be running the bytes "
                          "to rewrite");
  }
  size_t failedAt = plans.size();
  int err = 0;
  for (size_t i = 0; i < plans.size() && failedAt == plans.size(); ++i) {
    err = writeCode(plans[i].patchAt, jumps[i].data(), kJumpBytes, done[i].original, protect);
    if (err) failedAt = i;
  }
  if (failedAt != plans.size()) {
    for (size_t i = 0; i < failedAt; ++i) writeCode(done[i].patchAt, done[i].original, kJumpBytes, nullptr, protect);
    parking.release();
    announce(false);
    // The region stays: a parked thread may have been moved into a trampoline before the undo.
    return refuse(std::string(plans[failedAt].hook->name) + ": " + writeRefusal(err));
  }
  parking.release();
  report.threadsParked = parking.asked();
  report.threadsMoved = gMoved.load();
  for (Installed& d : done) gInstalled.push_back(std::move(d));
  return reportInstalled();
}

int undoCodeHooks() {
  std::lock_guard<std::mutex> lock(gMutex);
  // The jump is one instruction: a thread is before it or past it, never inside, and threads already
  // in a trampoline finish there (it stays mapped). Other threads are parked all the same, because a
  // jump across two 16-byte windows is put back with two stores.
  const CodeHookOptions defaults;
  const Protector protect{defaults};
  std::string why;
  const bool canPark = installTrapHandler(why);
  Parking parking(canPark ? otherThreads() : std::vector<pid_t>{});
  if (canPark) parking.park(defaults.parkTimeout);
  int undone = 0;
  for (Installed& i : gInstalled)
    if (writeCode(i.patchAt, i.original, kJumpBytes, nullptr, protect) == 0) ++undone;
  parking.release();
  gInstalled.clear();
  return undone;
}

#else  // not x86-64

CodeHookReport installCodeHooks(std::span<const CodeHook>, const CodeHookOptions&) {
  CodeHookReport report;
  report.refusal = "code hooks are implemented for x86-64 only";
  return report;
}

int undoCodeHooks() { return 0; }

#endif

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#include "plugin/hooks/code_hook.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#include "plugin/hooks/code_hook_parking.h"
#include "plugin/hooks/x86_decoder.h"

namespace symmem {

#if defined(__x86_64__)

namespace {

constexpr size_t kJumpBytes = 5;      // jmp rel32
constexpr size_t kAbsJumpBytes = 14;  // jmp qword [rip+0]; .quad target
constexpr size_t kRegionBytes = 4096;
constexpr size_t kSlotBytes = 64;                // per hook: a relay to the replacement, then the trampoline
constexpr size_t kHeaderBytes = 4 * kSlotBytes;  // the page's owner, for another copy of this code to read
constexpr size_t kTrampolineOffset = 16;         // within a slot; the relay is at 0
constexpr uint8_t kEndbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
constexpr char kRegionMagic[16] = "code-hooks-v1";  // the first bytes of every trampoline page
constexpr int kMaxHooks = static_cast<int>((kRegionBytes - kHeaderBytes) / kSlotBytes);
// The trampolines must be reachable with rel32 from the functions and back: the page is placed within
// half of that reach, so every slot in it is too.
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
  uint8_t jump[kJumpBytes] = {};
};

// Never destroyed: NCCL's and the application's exit handlers still call through the hooks, and a
// thread may still be in a trampoline then.
struct HookState {
  std::mutex mutex;
  std::vector<Installed> installed;
  uint8_t* lastRegion = nullptr;  // where the next trampoline page is tried first
};
HookState& state() {
  static HookState* s = new HookState;
  return *s;
}

int64_t distance(const void* a, const void* b) {
  return static_cast<int64_t>(reinterpret_cast<uintptr_t>(a)) - static_cast<int64_t>(reinterpret_cast<uintptr_t>(b));
}

std::string hex(int64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "+%#llx", static_cast<unsigned long long>(v));
  return buf;
}

// ---- planning ----------------------------------------------------------------------------------

// The owner named in the trampoline page a jump at `entry` leads to, or "" when it leads elsewhere.
std::string ownerOfJumpAt(const X86Instruction& first) {
  if (first.length != kJumpBytes || !first.hasRelativeTarget || first.mnemonic != "jmp") return "";
  const uintptr_t page = first.relativeTarget & ~static_cast<uintptr_t>(kRegionBytes - 1);
  char header[kHeaderBytes] = {};
  if (readOwnMemory(page, header, sizeof(header)) != static_cast<ssize_t>(sizeof(header))) return "";
  if (std::memcmp(header, kRegionMagic, sizeof(kRegionMagic)) != 0) return "";
  header[sizeof(header) - 1] = '\0';
  const char* owner = header + sizeof(kRegionMagic);
  return *owner ? owner : "another copy of the code-hook mechanism";
}

bool planHook(const X86Decoder& decoder, const CodeHook& hook, Plan& plan, std::string& why, std::string& owner) {
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
  const std::string kept = at ? ", endbr64 kept" : "";
  const std::string tooShort = name + ": " + std::to_string(size) + " bytes long, too short for a " +
                               std::to_string(kJumpBytes) + "-byte jump" + (at ? " after its endbr64" : "");
  if (at + kJumpBytes > size) {
    why = tooShort;
    return false;
  }
  while (plan.moved < kJumpBytes) {
    const size_t offset = at + plan.moved;
    if (offset >= size) {
      why = tooShort;
      return false;
    }
    auto in = decodeAt(offset);
    if (!in) {
      why = name + ": cannot decode the instruction at " + hex(static_cast<int64_t>(offset));
      return false;
    }
    if (in->changesControlFlow) {
      if (plan.moved == 0) owner = ownerOfJumpAt(*in);
      why = owner.empty() ? name + ": its first bytes hold a " + in->mnemonic + " at " +
                                hex(static_cast<int64_t>(offset)) + ", which cannot be moved"
                          : name + ": already hooked by " + owner;
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

// ---- the trampoline page -------------------------------------------------------------------------

bool mapAt(uintptr_t hint, const void* target, uint8_t*& out) {
  void* p = mmap(reinterpret_cast<void*>(hint), kRegionBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == MAP_FAILED) return false;
  if (std::llabs(distance(p, target)) < kReach / 2) {
    out = static_cast<uint8_t*>(p);
    return true;
  }
  munmap(p, kRegionBytes);  // an old kernel took the flag as a hint and put it elsewhere
  return false;
}

// A page within half the rel32 reach of `target` (so that every slot in it reaches it both ways):
// right below the last one first (pages are never unmapped, so a process that hooks again and again
// packs them), else searched outwards from the target.
uint8_t* mapNear(const void* target, uint8_t* last) {
  uint8_t* out = nullptr;
  if (last && mapAt(reinterpret_cast<uintptr_t>(last) - kRegionBytes, target, out)) return out;
  const auto base = reinterpret_cast<uintptr_t>(target) & ~static_cast<uintptr_t>(0xffff);
  constexpr uintptr_t kStep = 1u << 20;
  const uintptr_t steps = static_cast<uintptr_t>(kReach / 2) / kStep;
  for (uintptr_t i = 1; i < steps; ++i) {
    for (int sign : {-1, 1}) {
      if (sign < 0 && base < i * kStep) continue;
      if (mapAt(sign < 0 ? base - i * kStep : base + i * kStep, target, out)) return out;
    }
  }
  return nullptr;
}

void writeRelJump(uint8_t* at, const void* to) {
  at[0] = 0xe9;
  const auto rel = static_cast<int32_t>(distance(to, at + kJumpBytes));
  std::memcpy(at + 1, &rel, 4);
}

// The relay: a direct jump where the replacement is in reach (no indirect branch, so nothing for
// user-mode IBT to check), else jmp [rip+0] to the absolute address.
void writeRelay(uint8_t* at, const void* to) {
  if (std::llabs(distance(to, at + kJumpBytes)) < INT32_MAX) {
    writeRelJump(at, to);
    return;
  }
  const uint8_t op[6] = {0xff, 0x25, 0, 0, 0, 0};
  std::memcpy(at, op, sizeof(op));
  const auto target = reinterpret_cast<uint64_t>(to);
  std::memcpy(at + 6, &target, sizeof(target));
  static_assert(kAbsJumpBytes <= kTrampolineOffset);
}

// Copies the moved instructions to `tramp`, re-aiming RIP-relative displacements, then a direct jump
// back (the page is within reach by construction).
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
  writeRelJump(tramp + plan.moved, plan.patchAt + plan.moved);
  return true;
}

// ---- writing code --------------------------------------------------------------------------------

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

// Every core that runs one of our threads executes a serialising instruction before it returns to
// user code (Linux 4.16+): what the Intel SDM asks of cross-modifying code. Registered before any
// thread is parked (registration can wait on the kernel).
bool gSyncCoreRegistered = false;
void registerSyncCore() {
  static const bool registered =
      syscall(SYS_membarrier, 64 /*MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE*/, 0, 0) == 0;
  gSyncCoreRegistered = registered;
}
void syncCores() {
  if (gSyncCoreRegistered) syscall(SYS_membarrier, 32 /*MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE*/, 0, 0);
}

// One store that went in, to be taken back if a later one fails.
struct StoreRecord {
  uint8_t* window = nullptr;
  uint8_t before[16] = {}, after[16] = {};
};

// The stores of one pass (allocated before anything is parked).
struct StoreLog {
  std::vector<StoreRecord> records;
  bool (*store)(uint8_t*, const uint8_t*, const uint8_t*) = store16;

  // Replaces [at, at + n) inside one aligned window with one atomic store. False: it changed meanwhile.
  bool put(uint8_t* at, const uint8_t* bytes, size_t n) {
    StoreRecord r;
    r.window = reinterpret_cast<uint8_t*>(reinterpret_cast<uintptr_t>(at) & ~static_cast<uintptr_t>(15));
    std::memcpy(r.before, r.window, 16);
    std::memcpy(r.after, r.before, 16);
    std::memcpy(r.after + (at - r.window), bytes, n);
    if (!store(r.window, r.before, r.after)) return false;
    records.push_back(r);  // capacity reserved: no allocation
    syncCores();
    return true;
  }
  // Takes back every store since `mark`, newest first, always with the real store (a test's injected
  // one only fails the way forward). False: one of them no longer held what we wrote.
  bool rollBack(size_t mark) {
    bool ok = true;
    while (records.size() > mark) {
      const StoreRecord& r = records.back();
      ok = store16(r.window, r.after, r.before) && ok;
      records.pop_back();
      syncCores();
    }
    return ok;
  }
};

// Writes the 5 bytes `bytes` over [at, at + 5), in an order a thread arriving at `at` never sees half
// of (docs/attach.md): inside one window, one store; across two windows, a two-byte self-loop first
// (an arriving thread spins on it), then the tail in the second window, then the head; where only the
// first byte lies in the first window, the tail first and the head last.
bool writeFive(StoreLog& log, uint8_t* at, const uint8_t* bytes) {
  const size_t inFirst = std::min(kJumpBytes, 16 - (reinterpret_cast<uintptr_t>(at) & 15));
  if (inFirst == kJumpBytes) return log.put(at, bytes, kJumpBytes);
  const size_t mark = log.records.size();
  static constexpr uint8_t kSelfLoop[2] = {0xeb, 0xfe};  // jmp .
  bool ok = inFirst < 2 || log.put(at, kSelfLoop, 2);
  ok = ok && log.put(at + inFirst, bytes + inFirst, kJumpBytes - inFirst);
  ok = ok && log.put(at, bytes, inFirst);
  if (!ok) log.rollBack(mark);
  return ok;
}

// A page's protection as the kernel has it, so it is put back as it was.
struct CodePage {
  uintptr_t start = 0;
  size_t length = 0;
  int protection = PROT_READ | PROT_EXEC;
};

int protectionFromMaps(uintptr_t address) {
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  std::string text;
  char buf[8192];
  ssize_t n;
  while (text.size() < (64u << 20) && (n = read(fd, buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  close(fd);
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    unsigned long long lo = 0, hi = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %4s", &lo, &hi, perms) != 3) continue;
    if (address >= lo && address < hi)
      return (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) | (perms[2] == 'x' ? PROT_EXEC : 0);
  }
  return -1;
}

CodePage pageOf(const uint8_t* at, size_t n) {
  CodePage p;
  p.start = reinterpret_cast<uintptr_t>(at) & ~(kPage - 1);
  const uintptr_t last = (reinterpret_cast<uintptr_t>(at) + n - 1) & ~(kPage - 1);
  p.length = last - p.start + kPage;
  const int prot = protectionFromMaps(p.start);
  const int protLast = last == p.start ? prot : protectionFromMaps(last);
  if (prot >= 0 && prot == protLast) p.protection = prot;
  return p;
}

struct Protector {
  const CodeHookOptions& options;
  int operator()(uintptr_t page, size_t length, int prot) const {
    void* p = reinterpret_cast<void*>(page);
    return options.protect ? options.protect(p, length, prot) : mprotect(p, length, prot);
  }
};

// One function's write, with its page opened for the write only: 0, or the errno of the refusal
// (EAGAIN: the bytes changed under us). A page that cannot be closed again is noted, not undone.
int writeFunction(StoreLog& log, const Protector& protect, const CodePage& page, uint8_t* at, const uint8_t* bytes,
                  bool& leftWritable) {
  if (protect(page.start, page.length, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return errno ? errno : EACCES;
  const bool ok = writeFive(log, at, bytes);
  leftWritable = protect(page.start, page.length, page.protection) != 0;
  return ok ? 0 : EAGAIN;
}

std::string writeRefusal(int err) {
  if (err == EAGAIN) return "the code changed under the patch (something else rewrote it)";
  return std::string("its code page cannot be made writable (") + std::strerror(err) +
         "): a W^X policy (SELinux execmod, PaX) forbids patching code";
}

// The whole write of a set while the others are parked: every function, or (after a failure) none.
struct WriteOutcome {
  size_t failedAt = SIZE_MAX;
  int err = 0;
  bool rolledBack = true;
  std::vector<size_t> leftWritable;
};

// `out.leftWritable` has its capacity reserved: nothing here allocates.
void writeAll(StoreLog& log, const Protector& protect, const std::vector<CodePage>& pages,
              const std::vector<uint8_t*>& at, const std::vector<const uint8_t*>& bytes, WriteOutcome& out) {
  for (size_t i = 0; i < at.size(); ++i) {
    bool leftWritable = false;
    out.err = writeFunction(log, protect, pages[i], at[i], bytes[i], leftWritable);
    if (leftWritable) out.leftWritable.push_back(i);  // capacity reserved
    if (out.err != 0) {
      out.failedAt = i;
      break;
    }
  }
  if (out.failedAt == SIZE_MAX) return;
  // Take back what went in, with each page opened again for it.
  for (size_t i = 0; i < at.size(); ++i) protect(pages[i].start, pages[i].length, PROT_READ | PROT_WRITE | PROT_EXEC);
  out.rolledBack = log.rollBack(0);
  for (size_t i = 0; i < at.size(); ++i) protect(pages[i].start, pages[i].length, pages[i].protection);
}

// ---- fork -------------------------------------------------------------------------------------
// A child forked while another thread installs hooks must not inherit a held mutex.
void lockForFork() { state().mutex.lock(); }
void unlockAfterFork() { state().mutex.unlock(); }
void registerForkHandlers() { registerCodeHookForkHandlers(); }

// Keeps the calling thread from being cancelled while others are parked on its word.
struct NoCancel {
  int previous = 0;
  NoCancel() { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &previous); }
  ~NoCancel() { pthread_setcancelstate(previous, nullptr); }
};

void noteLeftWritable(CodeHookReport& report, const std::vector<Plan>& plans, const std::vector<size_t>& which) {
  for (size_t i : which)
    report.notes.push_back(std::string(plans[i].hook->name) +
                           ": its code page could not be given its protection back and stays writable");
}

// The install stands, but a thread interrupted inside the bytes by another signal handler that is
// still running was not looked for: said, so that the plugin logs it.
void noteStackScanError(CodeHookReport& report, const ParkCounts& counts) {
  if (counts.stackScanError == 0) return;
  report.notes.push_back(std::string("the parked threads' stacks could not be searched for signal frames "
                                     "inside the rewritten bytes (process_vm_readv/writev: ") +
                         std::strerror(counts.stackScanError) +
                         "): a thread stopped there by a signal handler that is still running would resume "
                         "inside the new jump");
}

}  // namespace

CodeHookReport installCodeHooks(std::span<const CodeHook> hooks, const CodeHookOptions& options) {
  registerForkHandlers();
  HookState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  NoCancel noCancel;
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
  std::vector<const CodeHook*> wanted;
  for (const CodeHook& h : hooks) {
    bool already = false;
    for (const Installed& i : s.installed) {
      if (i.hook.target != h.target) continue;
      if (i.replacement != h.replacement)
        return refuse(std::string(h.name) + ": already hooked to another replacement");
      already = true;
    }
    if (!already) wanted.push_back(&h);
  }
  auto reportInstalled = [&] {
    report.installed = true;
    for (const CodeHook& h : hooks)
      for (const Installed& i : s.installed)
        if (i.hook.target == h.target) report.hooks.push_back(i.hook);
    return report;
  };
  if (wanted.empty()) return reportInstalled();

  std::string why;
  const X86Decoder* decoder = X86Decoder::load(options.disassembler, &why);
  if (!decoder) return refuse(why);

  std::vector<Plan> plans;
  for (const CodeHook* h : wanted) {
    Plan plan;
    std::string owner;
    if (planHook(*decoder, *h, plan, why, owner)) {
      plans.push_back(std::move(plan));
      continue;
    }
    if (!h->optional) {
      report.otherOwner = owner;
      return refuse(why);
    }
    report.skipped.push_back(why);
  }
  if (plans.empty()) return reportInstalled();

  uint8_t* region = mapNear(plans[0].patchAt, s.lastRegion);
  if (!region) return refuse("no memory within reach (1 GiB) of the functions for the trampolines");
  s.lastRegion = region;
  auto unmapAndRefuse = [&](std::string reason) {
    munmap(region, kRegionBytes);
    return refuse(std::move(reason));
  };
  std::memcpy(region, kRegionMagic, sizeof(kRegionMagic));
  std::snprintf(reinterpret_cast<char*>(region) + sizeof(kRegionMagic), kHeaderBytes - sizeof(kRegionMagic), "%s",
                options.owner.c_str());
  // Everything the parked phase needs is built before it: the jumps, the records, the pages, the moves.
  std::vector<Installed> done(plans.size());
  std::vector<uint8_t*> at(plans.size());
  std::vector<const uint8_t*> bytes(plans.size());
  std::vector<CodePage> pages(plans.size());
  std::vector<ContextMove> moves(plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    const Plan& plan = plans[i];
    uint8_t* slot = region + kHeaderBytes + i * kSlotBytes;
    if (std::llabs(distance(slot, plan.patchAt)) > kReach / 2)
      return unmapAndRefuse(std::string(plan.hook->name) + ": too far (> 1 GiB) from the other functions' trampolines");
    writeRelay(slot, plan.hook->replacement);
    uint8_t* tramp = slot + kTrampolineOffset;
    std::memcpy(tramp, kEndbr64, sizeof(kEndbr64));  // reached by indirect calls
    if (!relocate(plan, tramp + sizeof(kEndbr64), why)) return unmapAndRefuse(why);
    Installed& d = done[i];
    d.jump[0] = 0xe9;  // jmp rel32 to the relay, relative to where it will sit
    const auto rel = static_cast<int32_t>(distance(slot, plan.patchAt + kJumpBytes));
    std::memcpy(d.jump + 1, &rel, 4);
    std::memcpy(d.original, plan.patchAt, kJumpBytes);
    d.replacement = plan.hook->replacement;
    d.patchAt = plan.patchAt;
    d.hook = {plan.hook->name, plan.hook->target, tramp, plan.movedText};
    at[i] = plan.patchAt;
    bytes[i] = d.jump;
    pages[i] = pageOf(plan.patchAt, kJumpBytes);
    const auto from = reinterpret_cast<uintptr_t>(plan.patchAt);
    moves[i] = {from, from + plan.moved, reinterpret_cast<uintptr_t>(tramp + sizeof(kEndbr64))};
  }
  if (mprotect(region, kRegionBytes, PROT_READ | PROT_EXEC) != 0)
    return unmapAndRefuse(std::string("the trampoline page cannot be made executable (") + std::strerror(errno) +
                          "): a W^X policy");
  registerSyncCore();
  StoreLog log;
  log.records.reserve(plans.size() * 3 + 4);
  if (options.storeWindow) log.store = options.storeWindow;
  WriteOutcome written;
  written.leftWritable.reserve(plans.size());

  Parking parking;
  if (options.parkOtherThreads && !parking.prepare(why)) return unmapAndRefuse(why);
  setLeaveHookForTests(options.beforeContextsMoved);
  if (!publishContextMoves(moves)) return unmapAndRefuse("too many functions hooked in this process");
  // From here the page stays mapped whatever happens: forward pointers and moved contexts lead into it.
  if (options.retarget)
    for (const Installed& d : done) options.retarget(d.hook.target, d.hook.original);
  auto giveUp = [&](std::string reason) {
    if (options.retarget)
      for (const Installed& d : done) options.retarget(d.hook.original, d.hook.target);
    return refuse(std::move(reason));
  };
  // park() lets everyone go again before it says no.
  if (options.parkOtherThreads && !parking.park(options.parkTimeout, why)) return giveUp(why);
  writeAll(log, Protector{options}, pages, at, bytes, written);
  const ParkCounts counts = parking.release();  // nothing allocates before this
  noteLeftWritable(report, plans, written.leftWritable);
  noteStackScanError(report, counts);
  if (written.failedAt != SIZE_MAX) {
    std::string reason = std::string(plans[written.failedAt].hook->name) + ": " + writeRefusal(written.err);
    if (!written.rolledBack) reason += "; and an earlier write could not be taken back";
    return giveUp(reason);
  }
  report.threadsParked = counts.parked;
  report.threadsInSystemCall = counts.inSystemCall;
  report.threadsMoved = counts.moved;
  for (Installed& d : done) s.installed.push_back(std::move(d));
  return reportInstalled();
}

int undoCodeHooks() {
  HookState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.installed.empty()) return 0;
  NoCancel noCancel;
  // Threads already in a trampoline finish there (it stays mapped); a thread inside the jump's bytes
  // cannot exist (it is one instruction); the put-back follows the same order as the write, so a
  // thread arriving at the entry sees one or the other.
  const CodeHookOptions defaults;
  const Protector protect{defaults};
  StoreLog log;
  log.records.reserve(s.installed.size() * 3 + 4);
  std::vector<CodePage> pages;
  std::vector<uint8_t*> at;
  std::vector<const uint8_t*> bytes;
  for (const Installed& i : s.installed) {
    pages.push_back(pageOf(i.patchAt, kJumpBytes));
    at.push_back(i.patchAt);
    bytes.push_back(i.original);
  }
  registerSyncCore();
  std::string why;
  Parking parking;
  setLeaveHookForTests(nullptr);  // an install's test pause does not reach the undo
  if (!parking.prepare(why) || !parking.park(defaults.parkTimeout, why)) return 0;  // stays hooked
  int undone = 0;
  for (size_t k = 0; k < at.size(); ++k) {
    bool leftWritable = false;
    if (writeFunction(log, protect, pages[k], at[k], bytes[k], leftWritable) == 0) ++undone;
  }
  parking.release();
  s.installed.clear();
  return undone;
}

int codeHookContextsMoved() { return contextsMovedSoFar(); }

#else  // not x86-64

CodeHookReport installCodeHooks(std::span<const CodeHook>, const CodeHookOptions&) {
  CodeHookReport report;
  report.refusal = "code hooks are implemented for x86-64 only";
  return report;
}

int undoCodeHooks() { return 0; }
int codeHookContextsMoved() { return 0; }

#endif

void registerCodeHookForkHandlers() {
  static const bool registered = pthread_atfork(&lockForFork, &unlockAfterFork, &unlockAfterFork) == 0;
  (void)registered;
}

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// Code hooks: make every call to a function land on a replacement, whatever pointer the caller holds
// (a GOT slot, a dlsym result cached before the hook, a ctypes function object), by writing a jump
// over the function's first instructions. The instructions moved out of the way run in a trampoline
// that then jumps back, so the replacement can still call the original. This is how the plugin sees
// the ncclAllReduce calls of clients that hold their own pointers into libnccl (vLLM's and SGLang's
// pynccl). The mechanism knows nothing about NCCL: the caller names the functions.
//
// x86-64 only (elsewhere every request is refused with the reason). Instructions are decoded by Zydis
// (plugin/hooks/x86_decoder.h). The promise, on every path: either every required hook of the set is in
// place and forwarding works, or no byte of any function changed and every forward pointer is back
// where it was. A set is refused, with nothing written, when a required function cannot be patched
// safely (the disassembler is missing, the function is too short, its first bytes hold a branch or a
// form that cannot be moved, a branch lands inside the moved bytes, its code pages cannot be made
// writable), when the thread list cannot be read, when a parking request cannot be sent, or when
// another thread cannot be shown to be outside the bytes being rewritten.
//
// The protocol (docs/attach.md, "Code hooks", says why each step is safe): every other thread is
// asked, with a queued SIGURG, to park in a signal handler on a futex until the write is over; a
// thread in a system call counts as outside the bytes (no system call is ever among them) and parks
// on its way out. The jump is written with atomic 16-byte stores in an order that a thread arriving
// at the entry can never see half of (a self-loop first where the jump straddles two 16-byte windows).
// Parked threads, and contexts saved in the signal frames below them, that were inside the moved
// bytes resume at the same instruction inside the trampoline. Trampolines are never unmapped.
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace symmem {

struct CodeHook {
  const char* name;       // for messages ("ncclAllReduce")
  void* target;           // the function's entry: must be the start of a dynamic or static symbol
  void* replacement;      // where calls to `target` go once the hook is in place
  bool optional = false;  // a function that cannot be hooked is left out (and said why), not a refusal
};

struct CodeHookOptions {
  std::string disassembler;  // library to load Zydis from (empty: the plugin's own directory, then the system)
  // Who writes the hooks ("nccl-symmem 0.1.0 (/opt/.../libnccl-tuner-symmem.so)"): kept in the
  // trampoline page, so that another copy of the same code can tell whose jump it finds.
  std::string owner;
  // Changes page protection; mprotect by default. Tests inject a refusal (a W^X policy).
  std::function<int(void* page, size_t length, int prot)> protect;
  // How long to wait for every other thread to park, or to be seen in a system call, before giving up
  // (and patching nothing).
  std::chrono::milliseconds parkTimeout{2000};
  // Called for every hook as (target, trampoline) before any byte is written, so that a call that
  // reaches the replacement right after the write can already forward, and as (trampoline, target)
  // when the set is then given up: a forward pointer never stays on a set that was refused (the
  // trampoline itself stays mapped and correct for a caller that already loaded it). Null: nothing.
  // Runs while other threads are parked: it must not allocate or take locks.
  void (*retarget)(void* from, void* to) = nullptr;

  // For tests only. One atomic store of an aligned 16-byte window (false: the window did not hold
  // `expected`); null: lock cmpxchg16b. And whether other threads are parked at all.
  bool (*storeWindow)(uint8_t* window, const uint8_t* expected, const uint8_t* desired) = nullptr;
  bool parkOtherThreads = true;
  // For tests only: run (async-signal-safe) by each parked thread as it leaves the park handler, before
  // it moves its contexts; a delay there shows whether the report waits for the moves.
  void (*beforeContextsMoved)() = nullptr;
};

struct InstalledHook {
  std::string name;
  void* target = nullptr;
  void* original = nullptr;  // call this to run the original function (the trampoline)
  std::string moved;         // what was moved, for the log: "push, mov (5 bytes at +4, endbr64 kept)"
};

struct CodeHookReport {
  bool installed = false;            // every required hook of the set is in place (now or earlier)
  std::vector<InstalledHook> hooks;  // in the order asked, when installed (optional ones left out are absent)
  std::vector<std::string> skipped;  // optional hooks left out, one line each with the reason
  std::string refusal;               // why nothing was written, when not installed
  std::string otherOwner;            // set when a target already holds another owner's hook
  int threadsParked = 0;             // other threads that parked in the handler while writing
  int threadsInSystemCall = 0;       // other threads counted as outside the bytes, being in a system call
  int threadsMoved = 0;              // contexts moved from the rewritten bytes into a trampoline
  std::vector<std::string> notes;    // what went wrong after the write without undoing it (a page left writable)
};

// Installs every hook of the set in one parking round, or none of the required ones. Idempotent: a
// target already hooked to the same replacement is reported again without writing anything.
// Serialised by a process-wide mutex. Logs nothing: the caller words the outcome.
CodeHookReport installCodeHooks(std::span<const CodeHook> hooks, const CodeHookOptions& options = {});

// Registers (once per loaded object) the fork handlers that keep a child from inheriting the install
// mutex held. installCodeHooks registers them too; a caller with fork handlers of its own whose locks
// are taken around an install calls this first, so that those handlers run before these at a fork
// (glibc runs the prepare handlers in reverse order of registration).
void registerCodeHookForkHandlers();

// Puts back the original bytes of every hooked function (with the same care) and forgets them. The
// trampolines stay mapped: a thread may still be running in one. Meant for tests; returns how many.
int undoCodeHooks();

// Contexts moved out of rewritten bytes since the process started (parked threads and the signal
// frames below them), for tests that must show threads were really caught there.
int codeHookContextsMoved();

}  // namespace symmem

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
// (plugin/x86_decoder.h); a function is refused, and nothing at all is written, when any function of
// the set cannot be patched safely: the disassembler is missing, the function is shorter than the
// jump, its first bytes hold a branch or a form that cannot be moved, a branch elsewhere in it lands
// inside the moved bytes, its code pages cannot be made writable (a W^X policy), or another thread
// cannot be shown to be outside the bytes being rewritten.
//
// Patching order (docs/attach.md, "Code hooks"): every other thread of the process is parked in a
// signal handler for the few microseconds of the write (a thread that is in the middle of the moved
// instructions resumes at the same instruction inside the trampoline, and a thread in the kernel parks
// on its way out); the jump is written with one atomic 16-byte store (two where it straddles a 16-byte
// boundary, the opcode last), so a thread that was not parked fetches the old bytes or the new ones.
#include <chrono>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace symmem {

struct CodeHook {
  const char* name;   // for messages ("ncclAllReduce")
  void* target;       // the function's entry: must be the start of a dynamic or static symbol
  void* replacement;  // where calls to `target` go once the hook is in place
};

struct CodeHookOptions {
  std::string disassembler;  // library to load Zydis from (empty: the soname built against)
  // Changes page protection; mprotect by default. Tests inject a refusal (a W^X policy).
  std::function<int(void* page, size_t length, int prot)> protect;
  // How long to wait for every other thread to park before giving up (and patching nothing).
  std::chrono::milliseconds parkTimeout{1000};
  // Called for every hook with its trampoline before any byte of any function is written, so that a
  // call reaching the replacement right after the write can already forward; called again with
  // (target, target) if the set is then given up. Null: nothing.
  void (*beforeWrite)(void* target, void* original) = nullptr;
};

struct InstalledHook {
  std::string name;
  void* target = nullptr;
  void* original = nullptr;  // call this to run the original function (the trampoline)
  std::string moved;         // what was moved, for the log: "push, mov (5 bytes at +4, endbr64 kept)"
};

struct CodeHookReport {
  bool installed = false;            // every hook of the set is in place (now or from an earlier call)
  std::vector<InstalledHook> hooks;  // in the order asked, when installed
  std::string refusal;               // why nothing was written, when not installed
  int threadsParked = 0;             // other threads parked while writing
  int threadsMoved = 0;              // of those, threads moved from the rewritten bytes into a trampoline
};

// Installs every hook of the set, or none. Idempotent: a target already hooked to the same replacement
// is reported again without writing anything. Serialised by a process-wide mutex. Logs nothing: the
// caller words the outcome.
CodeHookReport installCodeHooks(std::span<const CodeHook> hooks, const CodeHookOptions& options = {});

// Puts back the original bytes of every hooked function (with the same care) and forgets them. The
// trampolines stay mapped: a thread may still be running in one. Meant for tests; returns how many.
int undoCodeHooks();

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// Attach: make the calls that already-loaded objects make to a set of dynamic symbols land on our
// replacement functions, by rewriting the GOT slots those calls go through (JUMP_SLOT for calls
// through the PLT, GLOB_DAT for taken addresses). This is how the plugin sees ncclAllReduce when
// NCCL loaded it only as a tuner (docs/attach.md, "GOT rebinding"). The mechanism knows nothing about NCCL: the
// caller names the symbols, the replacements and the library that defines the real functions.
//
// What it cannot reach is reported, never guessed around: a copy of the symbol defined inside some
// other object (static NCCL), objects loaded after the call (call again; loadedObjectsChangedSinceAttach
// says when), and lookups through dlsym, which never read a GOT.
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace symmem {

struct Rebinding {
  const char* symbol;  // dynamic symbol name, e.g. "ncclAllReduce"
  void* replacement;   // where references to `symbol` should lead from now on
  // Receives the real function the replacement forwards to. Set before any slot is written, so a
  // call that lands on the replacement right after the write can already forward. Never set to a
  // replacement or to anything inside an object that holds one (that would recurse forever); a value
  // already there is kept. May be null when the caller does not forward.
  void** original;
  // The real function, when the caller already knows it (NCCL's pncclX alias, for instance): then no
  // lookup by name is made. Lookups by name can land on the wrong definition when several objects
  // define the symbol (the plugin itself defines ncclAllReduce). Null: looked up as described below.
  void* real = nullptr;
};

struct AttachOptions {
  // The library that defines the real functions ("libnccl.so.2", or a path). When set, the real
  // targets come from it (it must already be loaded) and it is never patched. When empty, the real
  // target is the global definition (dlsym(RTLD_DEFAULT)) or, failing that, what resolved slots hold.
  std::string definingLibrary;
  // Objects left alone, named by any address inside them (the plugin's own .so, for instance).
  // Objects holding a replacement, the defining library, the dynamic linker and the vDSO are always
  // left alone.
  std::vector<const void*> skipObjectsContaining;
  // Objects left alone by file name: "libfoo.so" matches libfoo.so, libfoo.so.2, libfoo.so.2.1.
  std::vector<std::string> skipObjectsNamed;
  // Optional last word per object: false leaves it alone. The path is what the loader reports
  // ("" for the main program). Runs while the loader's object list is locked: it must not dlopen.
  std::function<bool(std::string_view objectPath)> shouldPatch;
};

struct PatchedSlot {
  std::string object;   // path of the object whose GOT holds the slot ("(main program)" for it)
  const char* symbol;   // the Rebinding's symbol
  void** address;       // the slot itself
  bool alreadyPatched;  // it pointed at the replacement before this call
};

struct AttachReport {
  std::vector<std::string> patchedObjects;  // objects with at least one slot on a replacement
  int slotsPatched = 0;                     // slots on a replacement after this call
  int slotsWritten = 0;                     // of those, slots this call changed (0 on a repeat)
  std::vector<PatchedSlot> slots;
  // What stays on the real functions, one readable line each.
  std::vector<std::string> notCovered;
  // Symbols no loaded object imports (nothing to do).
  std::vector<std::string> unreferenced;
};

// Rebinds every loaded object's GOT references to each symbol. Idempotent: a slot that already
// points at its replacement is counted, not wrapped again. Serialised by a process-wide mutex. Logs
// nothing: the caller words the report.
AttachReport attachRebindings(std::span<const Rebinding> rebindings, const AttachOptions& options);

// Runs the last attachRebindings call again (same rebindings, same options), to cover objects loaded
// since. Returns an empty report when attach never ran. The Rebinding array need not outlive the
// first call: it is copied.
AttachReport reattachRebindings();

// True when objects were loaded or unloaded since the last attachRebindings (cheap: two counters the
// dynamic linker keeps). Lets a caller re-run attach at a natural point, e.g. communicator creation.
bool loadedObjectsChangedSinceAttach();

// Points the PLT slots of the object holding `objectAddress` for each rebinding's symbol at its
// `replacement`, ignoring every other rule above: after a code hook on a function an object exports,
// its own calls to it (libnccl calls its ncclCommGetAsyncError through its PLT) can go straight to the
// trampoline and skip the hook. Undone by undoRebindings. Returns the slots that now hold their target.
int rebindOwnCalls(const void* objectAddress, std::span<const Rebinding> rebindings);

// Puts every slot this process rewrote back to the value it held before, in objects still loaded,
// and forgets the last call (reattachRebindings then does nothing). Meant for tests. Returns the
// number of slots restored.
int undoRebindings();

}  // namespace symmem

// SPDX-License-Identifier: Apache-2.0
#pragma once
// Parking the other threads of the process while code hooks are written (plugin/hooks/code_hook.h), and
// moving the contexts that were inside the rewritten bytes. x86-64 Linux.
//
// A parking request is a SIGURG queued to one thread with a cookie (SIGURG, as Go's runtime uses for
// preemption: its default action is to ignore it, so a request that outlives its round does nothing;
// gdb and lldb pass it on silently by default; libc does not use it). The handler parks on a futex
// until the round is released: it never lets itself go. A thread that cannot take the request because
// it is in a system call counts as outside the bytes (no system call is among them) and parks on its
// way out, if it does not block SIGURG. Any SIGURG that arrives while a round is held parks the
// thread (a request whose queue entry was dropped arrives without its cookie); one that is not ours
// is then passed to the handler that was there before.
//
// Moves are permanent: a context inside [from, to) of a hooked function resumes at the same
// instruction inside its trampoline, which is always right (the trampoline runs the same instructions
// and jumps back), before, during and after the write, so no round waits for anyone to read them.
// The handler moves the context it interrupted on every SIGURG, ours or not (a request merged into a
// pending foreign SIGURG arrives looking foreign). For requests known to be ours it also moves the
// contexts saved in signal frames further up that thread's stacks (a thread interrupted inside the
// bytes by another handler that is still running), found by glibc's signal-return address, checked
// field by field (the register-state pointer must lie where the kernel puts it, just past the frame)
// and rewritten through process_vm_writev.
//
// A thread counts as gone only when the kernel says so (tgkill with signal 0: ESRCH) or it is a
// zombie; a thread whose /proc/self/task/<tid>/syscall cannot be read (gVisor has none) is waited for
// until it parks, and the round fails, saying so, when it does not.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace symmem {

struct ContextMove {
  uintptr_t from = 0, to = 0, into = 0;  // a context with from < rip < to resumes at into + (rip - from)
};

// Adds the moves (a move for the same `from` is updated to the new trampoline). False: the table is
// full (then nothing was added).
bool publishContextMoves(std::span<const ContextMove> moves);

// Contexts moved since the process started.
int contextsMovedSoFar();

// For tests only: every parked thread calls f (async-signal-safe) as it leaves the handler, before it
// moves its contexts; null (the default): nothing. Kept until the next call.
void setLeaveHookForTests(void (*f)());

// For tests only: opens the files under /proc/self/task/<tid>/ in place of open(2), to stand for a
// /proc that lacks some of them (gVisor's has no "syscall"). It must not allocate: it runs while other
// threads are parked. Null (the default): open(2).
void setTaskFileOpenForTests(int (*openTaskFile)(const char* path));

// Copies n bytes of this process's memory at `address` without faulting (process_vm_readv): the
// count copied, or -1.
ssize_t readOwnMemory(uintptr_t address, void* out, size_t n);

struct ParkCounts {
  int parked = 0;        // threads that took the request and waited in the handler
  int inSystemCall = 0;  // threads counted as outside the bytes because they sat in a system call
  int moved = 0;         // contexts moved out of rewritten bytes during the round
  // The errno of the first search for signal frames up a parked thread's stacks that could not run
  // (process_vm_readv denied, as by a seccomp filter), or of a found frame that could not be
  // rewritten; 0: none. A context saved there inside the rewritten bytes was then not moved.
  int stackScanError = 0;
};

// One parking round. prepare() allocates (the thread list, the bookkeeping); park() and release()
// do not, so they are safe while another thread may be parked holding the allocator's lock.
class Parking {
 public:
  Parking() = default;
  Parking(const Parking&) = delete;
  Parking& operator=(const Parking&) = delete;
  ~Parking() { release(); }

  // Installs the handler (again, if something replaced it), reads the thread list. False: `why`.
  bool prepare(std::string& why);
  // Sends the requests and waits until every other thread is parked, in a system call, or gone,
  // also threads started meanwhile. False: nobody is held any more, and `why` says which thread
  // could not be shown to be outside the bytes (or why a request could not be sent).
  bool park(std::chrono::milliseconds timeout, std::string& why);
  // Lets everyone go; waits (briefly, bounded) for the parked threads to leave the handler, to count
  // the contexts they moved. Idempotent.
  ParkCounts release();

 private:
  struct Thread {
    pid_t tid;
    uint8_t state;       // Waiting, Parked, InSystemCall, Gone
    int unreadable = 0;  // while Waiting: errno of its "syscall" file, which could not be read; 0: read
  };
  bool send(pid_t tid, int& err) const;
  bool relist(int& err);
  void absorbAcks();
  bool settle(bool finalCheck);
  Thread* find(pid_t tid);
  std::string whyNotParked(std::chrono::milliseconds timeout) const;

  std::vector<Thread> threads_;
  std::vector<pid_t> newcomers_;
  bool held_ = false;
  uint32_t round_ = 0;
  int acksSeen_ = 0;
  int movedAtStart_ = 0;
  ParkCounts counts_;
};

}  // namespace symmem

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A ctypes NCCL client, as vLLM's and SGLang's pynccl wrappers are written, against the stand-in
libnccl.so.2 of tests/hook_fixture: every function is looked up once, before the plugin exists; then
the plugin is loaded and initialised the way NCCL loads its tuner (dlopen RTLD_LOCAL, the
ncclTunerPlugin_v5 object, init). The cached function objects must then reach the plugin (its trace
lines, captured from stderr) and forward to the stand-in with arguments and results intact, also
after NCCL's finalize + dlclose of the tuner.

    python3 ctypes_caller.py STAND_IN_LIBNCCL PLUGIN
"""
import ctypes
import os
import sys
import tempfile

# Read by the plugin at first use, after this. Without a logger from NCCL it writes to stderr.
os.environ["SYMMEM_LOG"] = "trace"
os.environ["NCCL_DEBUG"] = "TRACE"

RTLD_NOLOAD = 4


class Record(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in
                ("allReduces", "groupStartBodies", "groupEnds", "destroys", "aborts", "finalizes", "revokes")] + [
        ("send", ctypes.c_void_p), ("recv", ctypes.c_void_p), ("count", ctypes.c_size_t),
        ("dtype", ctypes.c_int), ("op", ctypes.c_int), ("comm", ctypes.c_void_p), ("stream", ctypes.c_void_p),
        ("lastTeardownComm", ctypes.c_void_p), ("revokeFlags", ctypes.c_int)]


INIT_V5 = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint64, ctypes.c_size_t,
                           ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
FINALIZE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


class TunerV5(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("init", INIT_V5), ("getCollInfo", ctypes.c_void_p),
                ("finalize", FINALIZE)]


class Wrapper:
    """The pynccl scheme: one CDLL, every function object fetched when the wrapper is built."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)  # RTLD_LOCAL, as ctypes does by default
        f = self.lib
        self.allReduce = f.ncclAllReduce
        self.allReduce.restype = ctypes.c_int
        self.allReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                   ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        self.groupStart, self.groupEnd = f.ncclGroupStart, f.ncclGroupEnd
        self.destroy, self.abort = f.ncclCommDestroy, f.ncclCommAbort
        for fn in (self.destroy, self.abort):
            fn.argtypes = [ctypes.c_void_p]
        f.standInRecord.restype = ctypes.POINTER(Record)
        self.record = f.standInRecord().contents


class StderrCapture:
    """The plugin logs to stderr before NCCL hands it a logger: read fd 2 into a file."""

    def __enter__(self):
        sys.stderr.flush()
        self.file = tempfile.TemporaryFile()
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.seek(0)
        self.text = self.file.read().decode(errors="replace")


problems = []


def check(cond, what):
    if not cond:
        problems.append(what)


def call_all(w, when, interposed):
    before = (w.record.allReduces, w.record.groupEnds, w.record.destroys)
    with StderrCapture() as cap:
        rc = w.allReduce(0x1000, 0x2000, 5, 7, 0, 0x3000, None)
        w.groupStart()
        w.groupEnd()
        w.destroy(0x3000)
    check(rc == 6, f"{when}: all-reduce result {rc}, expected the stand-in's 6")
    check(w.record.allReduces == before[0] + 1, f"{when}: all-reduce reached NCCL {w.record.allReduces - before[0]}x")
    check((w.record.send, w.record.recv, w.record.count, w.record.dtype, w.record.op, w.record.comm) ==
          (0x1000, 0x2000, 5, 7, 0, 0x3000), f"{when}: arguments changed on the way")
    check(w.record.groupEnds == before[1] + 1 and w.record.destroys == before[2] + 1, f"{when}: calls lost")
    seen = cap.text.count("allreduce 5 elements on comm 0x3000: NCCL")
    check(seen == (1 if interposed else 0), f"{when}: the plugin saw {seen} all-reduces:\n{cap.text}")
    check(("destroy comm 0x3000" in cap.text) == interposed, f"{when}: destroy {'not ' if interposed else ''}seen")
    return cap.text


def main():
    stand_in, plugin_path = sys.argv[1], sys.argv[2]
    w = Wrapper(stand_in)
    call_all(w, "before the plugin loads", False)

    with StderrCapture() as cap:
        plugin = ctypes.CDLL(plugin_path)
        tuner = TunerV5.in_dll(plugin, "ncclTunerPlugin_v5")
        ctx = ctypes.c_void_p()
        rc = tuner.init(ctypes.byref(ctx), 42, 2, 1, None, None, None)
    check(rc == 0, f"tuner init returned {rc}")
    check("hooked 10 libnccl entry points" in cap.text, "no hook line at tuner init:\n" + cap.text)
    call_all(w, "hooked", True)

    # NCCL's unload after its last communicator: finalize, then dlclose.
    tuner.finalize(ctx)
    ctypes.CDLL("libdl.so.2").dlclose(ctypes.c_void_p(plugin._handle))
    del plugin
    call_all(w, "after NCCL unloaded the tuner", True)

    if problems:
        print("ctypes_caller: FAILED\n  " + "\n  ".join(problems))
        return 1
    print("ctypes_caller: cached ctypes pointers reach the plugin and survive its unload")
    return 0


if __name__ == "__main__":
    sys.exit(main())

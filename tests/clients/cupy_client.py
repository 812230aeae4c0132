#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""CuPy's NCCL binding (cupy.cuda.nccl.NcclCommunicator) as one rank of N, every rank on GPU 0.

CuPy calls ncclCommInitRank / ncclAllReduce of the libnccl it loaded itself; with
NCCL_TUNER_PLUGIN=<path to libnccl-tuner-symmem.so> NCCL loads the plugin as its tuner and the plugin
hooks that libnccl's entry points, so CuPy's calls reach it without any change to the program.

  tests/multiproc/launch_ranks.py --nranks 2 --timeout 240 --logs out/cupy-2 -- \\
      python3 tests/clients/cupy_client.py --launched

Rank and world size come from RANK and WORLD_SIZE; rank 0 makes the unique id with
cupy.cuda.nccl.get_unique_id() and hands it to the others as a file in SYMMEM_TEST_RENDEZVOUS_DIR
(written to a temporary name, then renamed; the others poll for it, bounded by --rendezvous-timeout).
Without --launched it runs as a single rank (world 1) on GPU 0.

What it checks, exactly (integer-valued inputs, so every sum is exact in fp32, fp16 and bf16; rank r
contributes ((i * 7 + r * 3 + salt) % 17) - 8 at element i): comm.allReduce with NCCL_SUM for
NCCL_FLOAT32, NCCL_FLOAT16 and NCCL_BFLOAT16 (when this CuPy has it), counts 1, 7, 1000 and 65537, out
of place (the output starts as NaN, the input must stay as it was) and in place, eagerly, then captured
into a CUDA graph (cupy.cuda.Stream.begin_capture / end_capture, one out-of-place and one in-place call
per graph, replayed --graph-replays times with fresh inputs). When this CuPy cannot capture, it says why
and skips the graphs. Then comm.destroy(). No kernels of CuPy's own run (no NVRTC): buffers are raw
bytes, filled and read back with host copies.

The ranks time-slice one GPU: correctness only, nothing here is a latency figure. Each rank ends with
  cupy_client[rank r]: N checks, W wrong (NCCL x.y.z; shared GPU: correctness only, no latency figures)
Exit status: 0 when every check is right, 1 on a wrong value or an error, 77 (skipped) when cupy, its
NCCL binding or a GPU is missing, 2 on bad arguments. --self-test checks the host-side pieces (values,
encodings, unique-id handling, the rendezvous files, arguments, and the check loop against a stand-in
for CuPy) without cupy or a GPU.
"""
import argparse
import faulthandler
import gc
import importlib
import math
import os
import struct
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
from launched_rank import (EXIT_SKIP, MAX_RANKS, NO_LATENCY, PERIOD,  # noqa: E402
                           FileRendezvous, SelfTest, check_module, contribution_period, finish, int_in, int_list,
                           nccl_libraries, nccl_version_text, note_error, parse_rank_args, pattern_value,
                           positive_number, rank_output, rank_parser, read_maps, rendezvous_dir, repeat_period,
                           run_main, shared_gpu_environment, sum_period)

PROG = "cupy_client"
DEFAULT_COUNTS = (1, 7, 1000, 65537)
UID_BYTES = 128
UID_FILE = "cupy-uid"
# name -> (element size, the NCCL constant's name in cupy.cuda.nccl)
DTYPES: Dict[str, Tuple[int, str]] = {
    "float32": (4, "NCCL_FLOAT32"),
    "float16": (2, "NCCL_FLOAT16"),
    "bfloat16": (2, "NCCL_BFLOAT16"),
}
SENTINEL = 0xFF  # every byte 0xFF: NaN in fp32, fp16 and bf16, equal to no sum


# ==== values ========================================================================================
def bf16_bits(value: float) -> int:
    """The bfloat16 bits of a value bfloat16 holds exactly (the upper half of its float32 bits)."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if bits & 0xFFFF:
        raise ValueError(f"{value!r} is not exact in bfloat16")
    return bits >> 16


def bf16_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]


def encode(values: Sequence[float], dtype: str) -> bytes:
    n = len(values)
    if dtype == "float32":
        return struct.pack(f"<{n}f", *values)
    if dtype == "float16":
        return struct.pack(f"<{n}e", *values)
    if dtype == "bfloat16":
        return struct.pack(f"<{n}H", *(bf16_bits(v) for v in values))
    raise ValueError(f"unknown dtype {dtype!r}")


def decode(data: bytes, dtype: str) -> List[float]:
    size = DTYPES[dtype][0]
    n = len(data) // size
    if dtype == "float32":
        return list(struct.unpack(f"<{n}f", data[: n * size]))
    if dtype == "float16":
        return list(struct.unpack(f"<{n}e", data[: n * size]))
    return [bf16_value(h) for h in struct.unpack(f"<{n}H", data[: n * size])]


def contribution(count: int, dtype: str, rank: int, salt: int) -> bytes:
    """Rank `rank`'s input of `count` elements, encoded."""
    return repeat_period(encode(contribution_period(rank, salt), dtype), count, DTYPES[dtype][0])


def expected_sum(count: int, dtype: str, world: int, salt: int) -> bytes:
    """The exact sum over ranks 0..world-1 of contribution(count, dtype, r, salt), encoded."""
    return repeat_period(encode(sum_period(world, salt), dtype), count, DTYPES[dtype][0])


def sentinel(count: int, dtype: str) -> bytes:
    return bytes([SENTINEL]) * (count * DTYPES[dtype][0])


def compare(got: bytes, want: bytes, dtype: str) -> Tuple[int, int, float, float]:
    """(elements that differ, first such index, its value got, wanted); +0 equals -0, NaN equals nothing."""
    if got == want:
        return 0, -1, 0.0, 0.0
    g, w = decode(got, dtype), decode(want, dtype)
    if len(g) != len(w):
        return max(len(g), len(w)), min(len(g), len(w)), math.nan, math.nan
    bad = [i for i, (a, b) in enumerate(zip(g, w)) if not a == b]
    if not bad:
        return 0, -1, 0.0, 0.0
    return len(bad), bad[0], g[bad[0]], w[bad[0]]


# ==== the unique id =================================================================================
def uid_to_bytes(uid) -> bytes:
    """get_unique_id()'s result as 128 bytes: bytes from CuPy 14 on, a tuple of C chars before."""
    if isinstance(uid, (bytes, bytearray)):
        data = bytes(uid)
    elif isinstance(uid, (tuple, list)):
        if any(not isinstance(v, int) or not -128 <= v <= 255 for v in uid):
            raise ValueError("a unique id tuple holds integers in [-128, 255]")
        data = bytes(v & 0xFF for v in uid)
    else:
        raise TypeError(f"unexpected unique id type {type(uid).__name__}")
    if len(data) != UID_BYTES:
        raise ValueError(f"a unique id is {UID_BYTES} bytes, not {len(data)}")
    return data


def uid_as_tuple(data: bytes) -> tuple:
    """What NcclCommunicator took before CuPy 14: a tuple of signed C chars."""
    return tuple(b - 256 if b > 127 else b for b in data)


def make_communicator(nccl, world: int, data: bytes, rank: int):
    """NcclCommunicator(world, uid, rank); the id as bytes (CuPy 14 on) or, when that type is refused
    before NCCL is called, as a tuple (older CuPy)."""
    try:
        return nccl.NcclCommunicator(world, data, rank)
    except TypeError as first:
        try:
            return nccl.NcclCommunicator(world, uid_as_tuple(data), rank)
        except TypeError:
            raise first from None


# ==== arguments =====================================================================================
def build_parser() -> argparse.ArgumentParser:
    p = rank_parser(PROG, "CuPy's NCCL all-reduce, checked exactly, one rank of N on GPU 0 (" + NO_LATENCY + ").",
                    "rank", "cupy")
    p.add_argument("--counts", type=int_list("counts", 1 << 26), default=list(DEFAULT_COUNTS),
                   help="element counts, comma-separated (default 1,7,1000,65537)")
    p.add_argument("--graph-replays", type=int_in(0, 100), default=3,
                   help="replays of each captured graph, fresh inputs each time (0: no graphs; default 3)")
    p.add_argument("--timeout", type=positive_number, default=240.0,
                   help="seconds for the whole rank; then its stacks are printed and it exits 1 (default 240)")
    p.add_argument("--rendezvous-timeout", type=positive_number, default=120.0,
                   help="seconds the other ranks wait for rank 0's unique id (default 120)")
    p.add_argument("--verbose", "-v", action="store_true", help="print every check")
    return p


def parse_args(argv: Optional[Sequence[str]] = None, environ: Optional[Dict[str, str]] = None) -> argparse.Namespace:
    environ = os.environ if environ is None else environ
    parser = build_parser()
    args = parse_rank_args(parser, argv, environ)
    args.rendezvous = ""
    if args.launched and not args.self_test:
        args.rendezvous = rendezvous_dir(parser, environ, args.world)
    return args


# ==== the checks ====================================================================================
class CupyBuffers:
    """Raw device bytes through CuPy: host copies only, no CuPy kernels."""

    def __init__(self, cupy, numpy):
        self.cupy, self.numpy = cupy, numpy

    def alloc(self, nbytes: int):
        return self.cupy.empty(nbytes, dtype=self.cupy.uint8)

    @staticmethod
    def ptr(buf) -> int:
        return buf.data.ptr

    def upload(self, buf, data: bytes, stream) -> None:
        buf.set(self.numpy.frombuffer(data, dtype=self.numpy.uint8), stream=stream)

    @staticmethod
    def download(buf, stream) -> bytes:
        stream.synchronize()
        return buf.get(stream=stream).tobytes()


class RankRun:
    """One rank's checks over one communicator; every rank makes the same calls in the same order."""

    def __init__(self, rank: int, world: int, nccl, comm, buffers, stream, say, verbose: bool = False):
        self.rank, self.world, self.nccl, self.comm = rank, world, nccl, comm
        self.buffers, self.stream, self.say, self.verbose = buffers, stream, say, verbose
        self.checks = self.wrong = 0
        self.salt = 0

    def dtypes(self) -> List[Tuple[str, int]]:
        out = []
        for name, (_, const) in DTYPES.items():
            value = getattr(self.nccl, const, None)
            if value is None:
                self.say(f"{name} skipped: this CuPy's NCCL binding has no {const}")
                continue
            out.append((name, int(value)))
        return out

    def next_salt(self) -> int:
        self.salt = (self.salt + 1) % PERIOD
        return self.salt

    def check(self, what: str, got: bytes, want: bytes, dtype: str) -> None:
        self.checks += 1
        n, first, g, w = compare(got, want, dtype)
        if n == 0:
            if self.verbose:
                self.say(f"ok: {what}")
            return
        self.wrong += 1
        self.say(f"WRONG: {what}: {n} of {len(want) // DTYPES[dtype][0]} elements differ, first at {first}: "
                 f"got {g!r}, want {w!r}")

    def all_reduce(self, send, recv, count: int, nccl_dtype: int) -> None:
        self.comm.allReduce(self.buffers.ptr(send), self.buffers.ptr(recv), count, nccl_dtype,
                            self.nccl.NCCL_SUM, self.stream.ptr)

    def eager(self, dtypes, counts) -> None:
        b, s = self.buffers, self.stream
        for name, code in dtypes:
            for count in counts:
                nbytes = count * DTYPES[name][0]
                send, recv = b.alloc(nbytes), b.alloc(nbytes)
                salt = self.next_salt()
                mine = contribution(count, name, self.rank, salt)
                b.upload(send, mine, s)
                b.upload(recv, sentinel(count, name), s)
                self.all_reduce(send, recv, count, code)
                self.check(f"eager out of place {name} count {count}", b.download(recv, s),
                           expected_sum(count, name, self.world, salt), name)
                self.check(f"eager out of place {name} count {count}: input unchanged", b.download(send, s),
                           mine, name)
                salt = self.next_salt()
                b.upload(send, contribution(count, name, self.rank, salt), s)
                self.all_reduce(send, send, count, code)
                self.check(f"eager in place {name} count {count}", b.download(send, s),
                           expected_sum(count, name, self.world, salt), name)
                del send, recv

    def capture_unsupported(self, cupy) -> str:
        """Why this CuPy cannot capture a stream into a graph, or '' when it can."""
        if not hasattr(self.stream, "begin_capture") or not hasattr(self.stream, "end_capture"):
            return "cupy.cuda.Stream has no begin_capture/end_capture (CuPy before v10)"
        runtime = getattr(getattr(cupy, "cuda", None), "runtime", None)
        if getattr(runtime, "is_hip", False):
            return "stream capture is not supported by CuPy on HIP"
        return ""

    def graphs(self, dtypes, counts, replays: int, cupy) -> str:
        """Captured all-reduces, replayed with fresh inputs. Returns why the graphs were skipped, or ''."""
        if replays == 0:
            return "--graph-replays 0"
        why = self.capture_unsupported(cupy)
        if why:
            return why
        b, s = self.buffers, self.stream
        for name, code in dtypes:
            for count in counts:
                nbytes = count * DTYPES[name][0]
                send, recv, inplace = b.alloc(nbytes), b.alloc(nbytes), b.alloc(nbytes)
                b.upload(send, contribution(count, name, self.rank, 0), s)
                b.upload(recv, sentinel(count, name), s)
                b.upload(inplace, contribution(count, name, self.rank, 0), s)
                s.synchronize()
                try:
                    s.begin_capture()
                except Exception as e:  # noqa: BLE001 - this CuPy or CUDA cannot capture here
                    return f"stream.begin_capture() raised {type(e).__name__}: {e}"
                failed = None
                try:
                    self.all_reduce(send, recv, count, code)
                    self.all_reduce(inplace, inplace, count, code)
                except Exception as e:  # noqa: BLE001 - raised below, once the capture is ended
                    failed = e
                try:
                    graph = s.end_capture()  # always ended: the stream must not stay in capture mode
                except Exception:  # noqa: BLE001
                    if failed is None:
                        raise
                if failed is not None:
                    raise failed  # the all-reduce's own error, not the invalidated capture's
                try:
                    for rep in range(replays):
                        salt_a, salt_b = self.next_salt(), self.next_salt()
                        mine = contribution(count, name, self.rank, salt_a)
                        b.upload(send, mine, s)
                        b.upload(recv, sentinel(count, name), s)
                        b.upload(inplace, contribution(count, name, self.rank, salt_b), s)
                        graph.launch(stream=s)
                        self.check(f"graph out of place {name} count {count} replay {rep}", b.download(recv, s),
                                   expected_sum(count, name, self.world, salt_a), name)
                        self.check(f"graph in place {name} count {count} replay {rep}", b.download(inplace, s),
                                   expected_sum(count, name, self.world, salt_b), name)
                        self.check(f"graph out of place {name} count {count} replay {rep}: input unchanged",
                                   b.download(send, s), mine, name)
                finally:
                    s.synchronize()
                    del graph  # the graph goes before the communicator does
                    gc.collect()
        return ""


# ==== one launched rank =============================================================================
def load_cupy():
    """(cupy, numpy, nccl module, why not): why is '' when all three are usable."""
    try:
        import cupy
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken install failing otherwise
        return None, None, None, f"cupy is not importable ({type(e).__name__}: {e})"
    try:
        import numpy
    except Exception as e:  # noqa: BLE001
        return None, None, None, f"numpy is not importable ({type(e).__name__}: {e})"
    try:
        nccl = importlib.import_module("cupy.cuda.nccl")
    except Exception as e:  # noqa: BLE001
        return None, None, None, f"cupy {cupy.__version__}: cupy.cuda.nccl is not importable ({type(e).__name__}: {e})"
    if not getattr(nccl, "available", False):
        return None, None, None, (f"cupy {cupy.__version__}: cupy.cuda.nccl.available is False (CuPy found no "
                                  "libnccl it can use; e.g. pip install nvidia-nccl-cu13 for a CUDA 13 CuPy)")
    missing = [n for n in ("NcclCommunicator", "get_unique_id", "get_version", "NCCL_SUM", "NCCL_FLOAT32")
               if not hasattr(nccl, n)]
    if missing:
        return None, None, None, f"cupy {cupy.__version__}: cupy.cuda.nccl lacks {', '.join(missing)}"
    return cupy, numpy, nccl, ""


def run_rank(args) -> int:
    prefix, say = rank_output(PROG, args.rank)
    shared_gpu_environment(os.environ)
    cupy, numpy, nccl, why = load_cupy()
    if why:
        say(f"SKIPPED: {why}")
        return EXIT_SKIP
    try:
        ngpus = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - no driver, no device
        say(f"SKIPPED: no GPU for cupy ({type(e).__name__}: {e})")
        return EXIT_SKIP
    if ngpus < 1:
        say("SKIPPED: cupy sees no GPU")
        return EXIT_SKIP
    try:
        version = nccl_version_text(int(nccl.get_version()))
    except Exception as e:  # noqa: BLE001
        version = f"unknown (get_version() raised {type(e).__name__}: {e})"
    build = getattr(nccl, "get_build_version", None)
    built = nccl_version_text(int(build())) if build else "unknown"
    core, others = nccl_libraries(read_maps())
    say(f"rank {args.rank} of {args.world} on GPU 0, cupy {cupy.__version__}, cupy.cuda.nccl.get_version() "
        f"{version} (built against {built}), libnccl mapped: {', '.join(core) or 'none'}"
        f"{'; also ' + ', '.join(others) if others else ''} ({NO_LATENCY})")

    faulthandler.dump_traceback_later(args.timeout, exit=True)
    errors: List[str] = []
    run: Optional[RankRun] = None
    comm = None
    graph_note = ""
    try:
        cupy.cuda.Device(0).use()
        if args.world > 1:
            rendezvous = FileRendezvous(args.rendezvous, args.rendezvous_timeout)
            if args.rank == 0:
                data = uid_to_bytes(nccl.get_unique_id())
                rendezvous.publish(UID_FILE, data)
            else:
                data = rendezvous.receive(UID_FILE, UID_BYTES)
        else:
            data = uid_to_bytes(nccl.get_unique_id())
        start = time.monotonic()
        comm = make_communicator(nccl, args.world, data, args.rank)
        say(f"communicator of {args.world} ranks made in {time.monotonic() - start:.2f} s")
        core, others = nccl_libraries(read_maps())
        if others:
            say(f"libnccl*-named files mapped after the communicator was made: {', '.join(others)}")
        stream = cupy.cuda.Stream(non_blocking=True)
        run = RankRun(args.rank, args.world, nccl, comm, CupyBuffers(cupy, numpy), stream, say, args.verbose)
        dtypes = run.dtypes()
        run.eager(dtypes, args.counts)
        graph_note = run.graphs(dtypes, args.counts, args.graph_replays, cupy)
        if graph_note:
            say(f"CUDA graphs skipped: {graph_note}")
        stream.synchronize()
        check_async = getattr(comm, "check_async_error", None)
        if check_async is not None:
            check_async()
    except Exception:  # noqa: BLE001 - every failure fails the rank
        note_error(errors, say)
    if comm is not None:
        try:
            if errors and hasattr(comm, "abort"):
                comm.abort()  # a peer may be waiting in a call this rank will never make
            else:
                comm.destroy()
        except Exception:  # noqa: BLE001
            note_error(errors, say, "ERROR while ending the communicator")
    faulthandler.cancel_dump_traceback_later()
    checks, wrong = (run.checks, run.wrong) if run else (0, 0)
    return finish(prefix, say, errors, checks, wrong, f"NCCL {version}")


# ==== --self-test: the host-side pieces, and the check loop against a stand-in for CuPy ==============
class _FakeStream:
    """A stream of the stand-in: runs work at once, or records it while capturing."""
    _next = 0x1000

    def __init__(self, world_sim, capture=True):
        _FakeStream._next += 0x10
        self.ptr = _FakeStream._next
        self.world_sim, self.recording = world_sim, None
        if capture:
            self.begin_capture = self._begin
            self.end_capture = self._end

    def _begin(self):
        if self.recording is not None:
            raise RuntimeError("already capturing")
        self.recording = []

    def _end(self):
        work, self.recording = self.recording, None
        return _FakeGraph(work)

    def synchronize(self):
        pass


class _FakeGraph:
    def __init__(self, work):
        self.work = work

    def launch(self, stream=None):
        for fn in self.work:
            fn()


class _FakeWorld:
    """Buffers and all-reduces of the stand-in. One rank stands for `world`: the other ranks'
    contributions are added as the pattern says (their salt is read back from this rank's input),
    unless `mode` breaks something on purpose: 'corrupt' (one element off), 'stale-graph' (replays do
    nothing), 'clobber-input' (out of place writes its input too)."""

    def __init__(self, rank, world, mode=""):
        self.rank, self.world, self.mode = rank, world, mode
        self.memory: Dict[int, bytearray] = {}
        self.next_ptr = 0x10000
        self.calls = 0

    # buffers
    def alloc(self, nbytes):
        self.next_ptr += (nbytes + 255) // 256 * 256 + 256
        self.memory[self.next_ptr] = bytearray(nbytes)
        return self.next_ptr

    @staticmethod
    def ptr(buf):
        return buf

    def upload(self, buf, data, stream):
        assert len(data) == len(self.memory[buf]), "upload size"
        self.memory[buf][:] = data

    def download(self, buf, stream):
        return bytes(self.memory[buf])

    # the communicator
    def all_reduce(self, send, recv, count, dtype_code, op, stream_ptr, streams):
        name = {7: "float32", 6: "float16", 9: "bfloat16"}[dtype_code]
        size = DTYPES[name][0]
        assert op == 0 and len(self.memory[send]) == count * size and len(self.memory[recv]) == count * size

        def work():
            self.calls += 1
            mine = decode(bytes(self.memory[send]), name)
            # recover the salt from element 0: pattern_value(0, rank, salt) = (rank*3 + salt) % 17 - 8
            salt = (int(mine[0]) + 8 - self.rank * 3) % PERIOD
            out = list(mine)
            for r in range(self.world):
                if r != self.rank:
                    for i in range(count):
                        out[i] += pattern_value(i, r, salt)
            if self.mode == "corrupt" and count > 3:
                out[3] += 1
            if self.mode == "clobber-input" and send != recv:
                self.memory[send][:] = bytes(len(self.memory[send]))
            self.memory[recv][:] = encode(out, name)

        stream = streams[stream_ptr]
        if stream.recording is not None:
            stream.recording.append((lambda: None) if self.mode == "stale-graph" else work)
        else:
            work()


class _FakeComm:
    def __init__(self, world_sim, streams):
        self.world_sim, self.streams = world_sim, streams

    def allReduce(self, send, recv, count, dtype, op, stream):  # noqa: N802 - CuPy's name
        self.world_sim.all_reduce(send, recv, count, dtype, op, stream, self.streams)


class _FakeNccl:
    NCCL_SUM = 0
    NCCL_FLOAT16 = 6
    NCCL_FLOAT32 = 7
    NCCL_BFLOAT16 = 9


def _dry_run(world, rank, mode="", counts=(1, 7, 1000), replays=2, capture=True, bf16=True):
    sim = _FakeWorld(rank, world, mode)
    stream = _FakeStream(sim, capture=capture)
    nccl = _FakeNccl()
    if not bf16:
        nccl = type("NoBf16", (), {"NCCL_SUM": 0, "NCCL_FLOAT16": 6, "NCCL_FLOAT32": 7})()
    lines: List[str] = []
    run = RankRun(rank, world, nccl, _FakeComm(sim, {stream.ptr: stream}), sim, stream, lines.append)
    dtypes = run.dtypes()
    run.eager(dtypes, list(counts))
    note = run.graphs(dtypes, list(counts), replays, cupy=None)
    return run, note, lines, sim


def self_test() -> int:
    t = SelfTest(PROG)
    check = t.check
    check_module(t)  # the pattern, versions, maps, argument types, rank environment, rendezvous files, output

    # values and encodings
    for dtype in DTYPES:
        ints = list(range(-256, 257))
        check(decode(encode(ints, dtype), dtype) == [float(v) for v in ints], f"{dtype}: -256..256 round-trip exactly")
        check(len(encode(ints, dtype)) == len(ints) * DTYPES[dtype][0], f"{dtype}: encoded size")
        check(all(math.isnan(v) for v in decode(sentinel(3, dtype), dtype)), f"{dtype}: the sentinel is NaN")
    check(encode([1.0, -8.0], "bfloat16") == bytes([0x80, 0x3F, 0x00, 0xC1]), "bf16 bits, little-endian")
    check(encode([1.0], "float16") == bytes([0x00, 0x3C]), "fp16 bits, little-endian")
    check(encode([-2.0], "float32") == struct.pack("<f", -2.0), "fp32 bits")
    try:
        bf16_bits(1.0 + 2 ** -10)
        check(False, "bf16 refuses a value it cannot hold exactly")
    except ValueError:
        check(True, "bf16 refuses a value it cannot hold exactly")
    for dtype in DTYPES:
        for count in (1, 7, 16, 17, 18, 1000):
            for world in (1, 2, 4, MAX_RANKS):
                for salt in (0, 5, 16):
                    sums = [sum(pattern_value(i, r, salt) for r in range(world)) for i in range(count)]
                    got = expected_sum(count, dtype, world, salt)
                    check(decode(got, dtype) == [float(v) for v in sums],
                          f"expected {dtype} count {count} world {world} salt {salt}")
            for rank in (0, 3):
                check(decode(contribution(count, dtype, rank, 2), dtype)
                      == [float(pattern_value(i, rank, 2)) for i in range(count)], f"input {dtype} count {count}")
    check(len(expected_sum(65537, "bfloat16", 4, 0)) == 65537 * 2, "65537 bf16 elements")
    worst = max(abs(sum(pattern_value(i, r, s) for r in range(w)))
                for w in range(1, MAX_RANKS + 1) for i in range(PERIOD) for s in range(PERIOD))
    check(worst <= 256, f"every sum is an integer bf16 and fp16 hold exactly (max |sum| {worst})")
    check(expected_sum(3, "float32", 2, 0) == struct.pack("<3f", -13, 1, -2), "two ranks' sums by hand")
    check(compare(b"\x00\x00\x00\x80", b"\x00\x00\x00\x00", "float32")[0] == 0, "-0 equals +0")
    check(compare(sentinel(2, "float16"), sentinel(2, "float16"), "float16")[0] == 0, "identical bytes match")
    n, first, g, w = compare(encode([1, 2, 3, 5], "float32"), encode([1, 2, 4, 4], "float32"), "float32")
    check((n, first, g, w) == (2, 2, 3.0, 4.0), f"mismatch report ({n}, {first}, {g}, {w})")
    check(compare(sentinel(4, "bfloat16"), encode([0, 0, 0, 0], "bfloat16"), "bfloat16")[0] == 4, "NaN is wrong")

    # unique ids
    raw = bytes(range(256))[:UID_BYTES][::-1]
    check(uid_to_bytes(raw) == raw, "bytes id kept")
    signed = uid_as_tuple(bytes(range(128, 256)))
    check(signed[0] == -128 and signed[-1] == -1 and len(signed) == UID_BYTES, "tuple id is signed chars")
    check(uid_to_bytes(signed) == bytes(range(128, 256)), "a signed tuple id round-trips")
    check(uid_to_bytes(list(range(128))) == bytes(range(128)), "an unsigned list id")
    for bad in (b"x" * 127, (300,) * 128, "x" * 128):
        try:
            uid_to_bytes(bad)
            check(False, f"bad id {type(bad).__name__} refused")
        except (ValueError, TypeError):
            check(True, "bad id refused")

    class BytesComm:
        def __init__(self, world, uid, rank):
            if not isinstance(uid, bytes):
                raise TypeError("Argument 'commId' has incorrect type (expected bytes, got tuple)")
            self.uid = uid

    class TupleComm:
        def __init__(self, world, uid, rank):
            if not isinstance(uid, tuple):
                raise TypeError("Argument 'commId' has incorrect type (expected tuple, got bytes)")
            self.uid = uid

    data = bytes(range(200, 256)) + bytes(range(72))
    check(make_communicator(type("N", (), {"NcclCommunicator": BytesComm}), 2, data, 0).uid == data,
          "CuPy 14's bytes id")
    check(make_communicator(type("N", (), {"NcclCommunicator": TupleComm}), 2, data, 1).uid == uid_as_tuple(data),
          "older CuPy's tuple id")

    # arguments
    a = parse_args(["--launched"], environ={"RANK": "1", "WORLD_SIZE": "4", "SYMMEM_TEST_RENDEZVOUS_DIR": "/r"})
    check((a.rank, a.world, a.rendezvous, a.counts, a.graph_replays) == (1, 4, "/r", [1, 7, 1000, 65537], 3),
          "launched rank from the environment, default counts")
    a = parse_args([], environ={})
    check((a.rank, a.world, a.launched) == (0, 1, False), "without --launched: one rank")
    a = parse_args(["--launched", "--counts", "3,5", "--graph-replays", "0", "--timeout", "30"],
                   environ={"RANK": "0", "WORLD_SIZE": "1"})
    check((a.counts, a.graph_replays, a.timeout, a.rendezvous) == ([3, 5], 0, 30.0, ""), "options; 1 rank needs no folder")
    check(parse_args(["--self-test"], environ={}).self_test, "--self-test")
    t.refuses(parse_args, ((["--launched"], {}), (["--launched"], {"RANK": "x", "WORLD_SIZE": "2"}),
                           (["--launched"], {"RANK": "2", "WORLD_SIZE": "2", "SYMMEM_TEST_RENDEZVOUS_DIR": "/r"}),
                           (["--launched"], {"RANK": "0", "WORLD_SIZE": "17", "SYMMEM_TEST_RENDEZVOUS_DIR": "/r"}),
                           (["--launched"], {"RANK": "0", "WORLD_SIZE": "2"}), (["--counts", "0"], {}),
                           (["--counts", "a,b"], {}), (["--timeout", "-1"], {}), (["--graph-replays", "101"], {}),
                           (["--bogus"], {})))

    # the check loop against the stand-in: right answers pass, each planted fault is seen
    for world, rank in ((1, 0), (2, 1), (4, 2)):
        run, note, lines, sim = _dry_run(world, rank)
        per = 3 * 3 * (3 + 2 * 3)  # dtypes x counts x (3 eager checks + 2 replays x 3 checks)
        check((run.checks, run.wrong, note) == (per, 0, ""), f"dry run {world} ranks: {run.checks} checks, "
              f"{run.wrong} wrong, note {note!r}, {lines[:3]}")
        check(sim.calls == 3 * 3 * (2 + 2 * 2), f"dry run {world} ranks: {sim.calls} all-reduces run")
    run, _, lines, _ = _dry_run(2, 0, mode="corrupt")
    check(run.wrong > 0 and any("WRONG" in line and "first at 3" in line for line in lines), "a wrong element is seen")
    run, _, lines, _ = _dry_run(2, 0, mode="stale-graph")
    check(run.wrong >= 3 * 3 * 2 and all("WRONG: graph" in line for line in lines if "WRONG" in line),
          f"graph replays that do nothing are seen ({run.wrong} wrong)")
    run, _, lines, _ = _dry_run(2, 0, mode="clobber-input")
    check(any("input unchanged" in line for line in lines), "an out-of-place call that writes its input is seen")
    run, note, _, _ = _dry_run(2, 0, capture=False)
    check("begin_capture" in note and run.checks == 3 * 3 * 3, f"no capture: graphs skipped with a reason ({note})")
    run, note, _, _ = _dry_run(2, 0, replays=0)
    check(note == "--graph-replays 0", "--graph-replays 0 skips the graphs")
    run, _, lines, _ = _dry_run(2, 0, bf16=False)
    check(run.checks == 2 * 3 * 9 and any("bfloat16 skipped" in line for line in lines), "no NCCL_BFLOAT16: said, skipped")

    return t.done()


def main(argv: Optional[Sequence[str]] = None) -> int:
    return run_main(parse_args, self_test, run_rank, argv)


if __name__ == "__main__":
    sys.exit(main())

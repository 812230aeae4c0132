#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What the one-rank clients here (cupy_client.py, jax_client.py) have in common: a rank started by
tests/multiproc/launch_ranks.py, every rank on GPU 0, checking exact sums.

- the input pattern: rank r's element i is ((i * 7 + r * 3 + salt) % 17) - 8, and its exact sums;
- NCCL version codes in words, the libnccl* files this process has mapped (/proc/self/maps);
- argument types, and RANK / WORLD_SIZE / SYMMEM_TEST_RENDEZVOUS_DIR read as launch_ranks.py sets them
  (a usage error, exit status 2, when they are missing or out of range);
- FileRendezvous: rank 0 hands bytes (a unique id) to the others as a file, written to a temporary name
  and renamed; the others poll for it, bounded in time;
- a rank's output: '<prog>[rank r]: text' lines, the last one
  '<prog>[rank r]: N checks, W wrong (<about>; shared GPU: correctness only, no latency figures)',
  and the exit status: 0 all right, 1 wrong or failed, 2 bad arguments, 77 skipped;
- SelfTest, the counter behind each client's --self-test, and check_module(), this module's own checks.

Standard library only: it imports without cupy, jax or torch. `python3 launched_rank.py --self-test`
runs check_module() alone; each client's --self-test runs it too.
"""
import argparse
import contextlib
import io
import math
import os
import sys
import tempfile
import threading
import time
import traceback
from typing import Callable, Dict, List, MutableMapping, Optional, Sequence, Tuple

NO_LATENCY = "shared GPU: correctness only, no latency figures"
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_SKIP = 0, 1, 2, 77
MAX_RANKS = 16
PERIOD = 17
RENDEZVOUS_ENV = "SYMMEM_TEST_RENDEZVOUS_DIR"
# ranks that share one GPU: no NVLink multicast, whatever the library (set only where not set already)
SHARED_GPU_ENV = (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1"))


# ==== values ========================================================================================
def pattern_value(i: int, rank: int, salt: int) -> int:
    """Rank `rank`'s input at element i: an integer in [-8, 8] with period 17 in i."""
    return ((i * 7 + rank * 3 + salt) % PERIOD) - 8


def contribution_period(rank: int, salt: int) -> List[int]:
    """Rank `rank`'s first PERIOD inputs."""
    return [pattern_value(i, rank, salt) for i in range(PERIOD)]


def sum_period(world: int, salt: int) -> List[int]:
    """The exact sums over ranks 0..world-1 of their first PERIOD inputs."""
    return [sum(pattern_value(i, r, salt) for r in range(world)) for i in range(PERIOD)]


def repeat_period(period, count: int, width: int = 1):
    """`count` elements of a sequence (list or bytes) that holds PERIOD elements of `width` items each."""
    return (period * (count // PERIOD + 1))[: count * width]


def nccl_version_text(code: int) -> str:
    """ncclGetVersion's integer as x.y.z (2.9 on: major*10000 + minor*100 + patch; before: *1000)."""
    if code <= 0:
        return f"unknown ({code})"
    if code >= 20900:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


# ==== which libraries the process has mapped ========================================================
def mapped_libraries(maps_text: str, prefix: str) -> List[str]:
    """Paths of mapped files whose name starts with `prefix`, in first-seen order, once each."""
    seen: List[str] = []
    for line in maps_text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6:
            continue
        path = parts[5].strip()
        if path.endswith(" (deleted)"):
            path = path[: -len(" (deleted)")]
        if os.path.basename(path).startswith(prefix) and path not in seen:
            seen.append(path)
    return seen


def nccl_libraries(maps_text: str) -> Tuple[List[str], List[str]]:
    """(libnccl.so* paths, other libnccl*-named files such as tuner plugins) among the mapped files."""
    every = mapped_libraries(maps_text, "libnccl")
    core = [p for p in every if os.path.basename(p).startswith("libnccl.so")]
    return core, [p for p in every if p not in core]


def read_maps() -> str:
    try:
        with open("/proc/self/maps") as f:
            return f.read()
    except OSError as e:
        return f"(cannot read /proc/self/maps: {e.strerror})"


# ==== arguments =====================================================================================
def positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a positive number: {text!r}")
    return value


def _integer(text: str) -> int:
    try:
        return int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def positive_int(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be positive: {value}")
    return value


def int_in(lo: int, hi: int) -> Callable[[str], int]:
    """An argument type: an integer in [lo, hi]."""
    def parse(text: str) -> int:
        value = _integer(text)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be in [{lo}, {hi}]: {value}")
        return value
    return parse


def int_list(noun: str, limit: int) -> Callable[[str], List[int]]:
    """An argument type: comma-separated integers, each in [1, limit]; `noun` names them in errors."""
    def parse(text: str) -> List[int]:
        try:
            values = [int(t, 10) for t in text.split(",") if t.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
        if not values or any(v < 1 or v > limit for v in values):
            raise argparse.ArgumentTypeError(f"{noun} must be in [1, {limit}]: {text!r}")
        return values
    return parse


def launched_rank(parser: argparse.ArgumentParser, environ: MutableMapping[str, str]) -> Tuple[int, int]:
    """(RANK, WORLD_SIZE) as launch_ranks.py sets them; parser.error (exit 2) when either is not an
    integer, WORLD_SIZE is not in [1, MAX_RANKS] or RANK not in [0, WORLD_SIZE)."""
    values = {}
    for name in ("RANK", "WORLD_SIZE"):
        text = environ.get(name, "")
        try:
            values[name] = int(text, 10)
        except ValueError:
            parser.error(f"--launched needs {name} set to an integer (got {text!r}); start it with "
                         "tests/multiproc/launch_ranks.py")
    rank, world = values["RANK"], values["WORLD_SIZE"]
    if not 1 <= world <= MAX_RANKS:
        parser.error(f"WORLD_SIZE must be in [1, {MAX_RANKS}]: {world}")
    if not 0 <= rank < world:
        parser.error(f"RANK must be in [0, {world - 1}]: {rank}")
    return rank, world


def rank_parser(prog: str, description: str, one: str, needs: str) -> argparse.ArgumentParser:
    """A client's parser with --launched (`one`: 'rank' or 'process') and --self-test (no `needs`, no GPU)."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--launched", action="store_true",
                   help=f"one {one} of $WORLD_SIZE started by tests/multiproc/launch_ranks.py")
    p.add_argument("--self-test", action="store_true", help=f"host-side checks only, no {needs}, no GPU")
    return p


def parse_rank_args(parser: argparse.ArgumentParser, argv: Optional[Sequence[str]],
                    environ: MutableMapping[str, str]) -> argparse.Namespace:
    """parser.parse_args(argv), with args.rank and args.world: 0 and 1, or under --launched (and not
    --self-test) read from `environ` by launched_rank()."""
    args = parser.parse_args(argv)
    args.rank, args.world = 0, 1
    if args.launched and not args.self_test:
        args.rank, args.world = launched_rank(parser, environ)
    return args


def rendezvous_dir(parser: argparse.ArgumentParser, environ: MutableMapping[str, str], world: int) -> str:
    """$SYMMEM_TEST_RENDEZVOUS_DIR ('' when unset); parser.error when more than one rank needs it."""
    directory = environ.get(RENDEZVOUS_ENV, "")
    if world > 1 and not directory:
        parser.error(f"--launched with WORLD_SIZE > 1 needs {RENDEZVOUS_ENV} (a folder every rank sees)")
    return directory


# ==== the hand-over from rank 0 =====================================================================
class FileRendezvous:
    """Rank 0 writes <dir>/<name> (a temporary file, then os.replace, so nobody reads half of it); the
    others poll for it for up to `timeout` seconds."""

    def __init__(self, directory: str, timeout: float):
        self.directory, self.timeout = directory, timeout

    def publish(self, name: str, data: bytes) -> None:
        path = os.path.join(self.directory, name)
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def receive(self, name: str, size: int) -> bytes:
        path = os.path.join(self.directory, name)
        deadline = time.monotonic() + self.timeout
        delay = 0.002
        while True:
            try:
                with open(path, "rb") as f:
                    data = f.read()
                break
            except FileNotFoundError:
                if time.monotonic() >= deadline:
                    raise RuntimeError(f"no unique id from rank 0 in {path} after {self.timeout:g} s "
                                       "(rank 0 failed or is slow: see its log)") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
        if len(data) != size:
            raise RuntimeError(f"{path} holds {len(data)} bytes, not {size}")
        return data


# ==== a rank's output and exit status ===============================================================
def shared_gpu_environment(environ: MutableMapping[str, str]) -> None:
    """SHARED_GPU_ENV into `environ`, each only where it is not set already."""
    for var, value in SHARED_GPU_ENV:
        environ.setdefault(var, value)


def rank_output(prog: str, rank: int) -> Tuple[str, Callable[[str], None]]:
    """('<prog>[rank r]', say): say(text) prints '<prog>[rank r]: text' at once."""
    prefix = f"{prog}[rank {rank}]"

    def say(text: str) -> None:
        print(f"{prefix}: {text}", flush=True)
    return prefix, say


def note_error(errors: List[str], say: Callable[[str], None], label: str = "ERROR") -> None:
    """Inside an except block: the traceback joins `errors` and is said after `label`."""
    errors.append(traceback.format_exc())
    say(f"{label}: {errors[-1].rstrip()}")


def result_line(prefix: str, checks: int, wrong: int, about: str) -> None:
    """The rank's last line."""
    print(f"{prefix}: {checks} checks, {wrong} wrong ({about}; {NO_LATENCY})", flush=True)


def exit_status(errors: Sequence[str], checks: int, wrong: int) -> int:
    """0 only when nothing failed, nothing was wrong and something was checked."""
    return EXIT_OK if not errors and not wrong and checks else EXIT_FAIL


def finish(prefix: str, say: Callable[[str], None], errors: Sequence[str], checks: int, wrong: int,
           about: str) -> int:
    """The rank's closing lines; returns its exit status."""
    if errors:
        say(f"FAILED: {len(errors)} error(s)")
    result_line(prefix, checks, wrong, about)
    return exit_status(errors, checks, wrong)


def run_main(parse_args, self_test, run_rank, argv: Optional[Sequence[str]] = None) -> int:
    """A client's main(): --self-test, else one rank."""
    args = parse_args(argv)
    if args.self_test:
        return self_test()
    return run_rank(args)


# ==== --self-test ===================================================================================
class SelfTest:
    """Counts checks; prints '<prog> self-test: FAILED: what' for each failed one; done() prints the
    total and returns the exit status."""

    def __init__(self, prog: str):
        self.prog, self.total = prog, 0
        self.failures: List[str] = []

    def check(self, ok, what: str) -> None:
        self.total += 1
        if not ok:
            self.failures.append(what)
            print(f"{self.prog} self-test: FAILED: {what}", flush=True)

    def refuses(self, parse_args, cases) -> None:
        """parse_args(argv, environ=env) must exit with status 2 for each (argv, env); stderr is muted."""
        for argv, env in cases:
            stderr, sys.stderr = sys.stderr, open(os.devnull, "w")
            try:
                parse_args(argv, environ=env)
                self.check(False, f"{argv} {env} refused")
            except SystemExit as e:
                self.check(e.code == EXIT_USAGE, f"{argv} {env} refused with status 2")
            finally:
                sys.stderr.close()
                sys.stderr = stderr

    def done(self) -> int:
        print(f"{self.prog} self-test: {self.total} checks, {len(self.failures)} failed", flush=True)
        return EXIT_OK if not self.failures else EXIT_FAIL


def _refused_type(parse, text: str) -> str:
    try:
        parse(text)
    except argparse.ArgumentTypeError as e:
        return str(e)
    return ""


def check_module(t: SelfTest) -> None:
    """This module's own checks, counted in `t`."""
    check = t.check

    # values
    check([pattern_value(i, 0, 0) for i in range(3)] == [-8, -1, 6], "rank 0's first values by hand")
    check([pattern_value(i, 1, 0) for i in range(3)] == [-5, 2, -8], "rank 1's first values by hand")
    check({pattern_value(i, r, s) for i in range(PERIOD) for r in range(3) for s in range(3)} == set(range(-8, 9)),
          "inputs cover -8..8")
    check(contribution_period(3, 5) == [pattern_value(i, 3, 5) for i in range(PERIOD)], "one rank's period")
    check(sum_period(2, 0)[:3] == [-13, 1, -2], "two ranks' sums by hand")
    check(sum_period(1, 4) == contribution_period(0, 4), "one rank's sum is its input")
    worst = max(abs(v) for w in range(1, MAX_RANKS + 1) for s in range(PERIOD) for v in sum_period(w, s))
    check(worst <= 256, f"every sum is an integer fp16 and bf16 hold exactly (max |sum| {worst})")
    for count in (0, 1, 16, 17, 18, 35, 1000):
        got = repeat_period(list(range(PERIOD)), count)
        check(got == [i % PERIOD for i in range(count)], f"repeat {count} elements")
        check(repeat_period(bytes(range(2 * PERIOD)), count, 2) == bytes(i % (2 * PERIOD) for i in range(2 * count)),
              f"repeat {count} two-byte elements")
    for code, text in ((22809, "2.28.9"), (22803, "2.28.3"), (22707, "2.27.7"), (21805, "2.18.5"), (20903, "2.9.3"),
                       (2708, "2.7.8"), (0, "unknown (0)"), (-3, "unknown (-3)")):
        check(nccl_version_text(code) == text, f"version {code} -> {nccl_version_text(code)}")

    # /proc/self/maps
    maps = "\n".join([
        "7f00-7f10 r-xp 00000000 08:01 11 /usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3",
        "7f10-7f20 r--p 00000000 08:01 11 /usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3",
        "7f20-7f30 r-xp 00000000 08:01 12 /w/build/lib/libnccl-tuner-symmem.so",
        "7f30-7f40 r-xp 00000000 08:01 13 /v/site-packages/nvidia/nccl/lib/libnccl.so.2 (deleted)",
        "7f40-7f50 rw-p 00000000 00:00 0 ",
        "7f50-7f60 r-xp 00000000 08:01 14 /opt/my libs/libcudart.so.13",
        "[vdso]",
        "short line",
    ])
    core, others = nccl_libraries(maps)
    check(core == ["/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3", "/v/site-packages/nvidia/nccl/lib/libnccl.so.2"],
          f"libnccl paths from maps: {core}")
    check(others == ["/w/build/lib/libnccl-tuner-symmem.so"], f"the plugin told apart: {others}")
    check(mapped_libraries(maps, "libcudart") == ["/opt/my libs/libcudart.so.13"], "a path with a space")
    check(nccl_libraries("") == ([], []), "nothing mapped")
    check(isinstance(read_maps(), str), "read_maps returns text, also where /proc is missing")

    # argument types
    check(positive_number("2.5") == 2.5 and positive_number("30") == 30.0, "positive numbers")
    for text in ("0", "-1", "nan", "inf", "x", ""):
        check(_refused_type(positive_number, text) != "", f"positive number {text!r} refused")
    check(positive_int("7") == 7, "a positive integer")
    check(_refused_type(positive_int, "0") == "must be positive: 0", "0 is not positive")
    check(_refused_type(positive_int, "1.5") == "not an integer: '1.5'", "1.5 is not an integer")
    replays = int_in(0, 100)
    check(replays("0") == 0 and replays("100") == 100, "int_in's ends")
    check(_refused_type(replays, "101") == "must be in [0, 100]: 101", "int_in above")
    check(_refused_type(replays, "-1") == "must be in [0, 100]: -1", "int_in below")
    check(_refused_type(replays, "x") == "not an integer: 'x'", "int_in: not an integer")
    counts = int_list("counts", 1 << 26)
    check(counts("3,5") == [3, 5] and counts(" 1, 7 ,") == [1, 7], "a list of counts")
    check(counts(str(1 << 26)) == [1 << 26], "the largest count")
    check(_refused_type(counts, "0") == "counts must be in [1, 67108864]: '0'", "count 0 refused")
    check(_refused_type(counts, str((1 << 26) + 1)) != "", "a count above the limit refused")
    check(_refused_type(counts, ",") != "", "an empty list refused")
    check(_refused_type(counts, "a,b") == "not a comma-separated list of integers: 'a,b'", "words refused")

    # the launched rank's environment
    parser = argparse.ArgumentParser(prog="launched_rank")
    check(launched_rank(parser, {"RANK": "1", "WORLD_SIZE": "4"}) == (1, 4), "RANK and WORLD_SIZE")
    check(launched_rank(parser, {"RANK": "0", "WORLD_SIZE": str(MAX_RANKS)}) == (0, MAX_RANKS), "the most ranks")
    check(rendezvous_dir(parser, {RENDEZVOUS_ENV: "/r"}, 2) == "/r", "the rendezvous folder")
    check(rendezvous_dir(parser, {}, 1) == "", "one rank needs no folder")
    parser = rank_parser("client", "about", "process", "thing")
    helps = parser.format_help()
    check("one process of $WORLD_SIZE started by" in helps and "no thing, no GPU" in helps, "the parser's help")
    a = parse_rank_args(parser, ["--launched"], {"RANK": "2", "WORLD_SIZE": "3"})
    check((a.rank, a.world, a.launched, a.self_test) == (2, 3, True, False), "parsed: a launched rank")
    a = parse_rank_args(parser, ["--launched", "--self-test"], {})
    check((a.rank, a.world, a.self_test) == (0, 1, True), "parsed: --self-test reads no environment")
    check(parse_rank_args(parser, [], {"RANK": "1", "WORLD_SIZE": "2"}).rank == 0, "parsed: alone, rank 0")

    def parse_env(argv, environ):
        p = argparse.ArgumentParser(prog="launched_rank")
        _, world = launched_rank(p, environ)
        return rendezvous_dir(p, environ, world)
    t.refuses(parse_env, (([], {}), ([], {"RANK": "x", "WORLD_SIZE": "2"}), ([], {"RANK": "0"}),
                          ([], {"RANK": "2", "WORLD_SIZE": "2", RENDEZVOUS_ENV: "/r"}),
                          ([], {"RANK": "-1", "WORLD_SIZE": "2", RENDEZVOUS_ENV: "/r"}),
                          ([], {"RANK": "0", "WORLD_SIZE": "0"}),
                          ([], {"RANK": "0", "WORLD_SIZE": str(MAX_RANKS + 1), RENDEZVOUS_ENV: "/r"}),
                          ([], {"RANK": "0", "WORLD_SIZE": "2"})))

    # the rendezvous files
    data = bytes(range(200, 256)) + bytes(range(72))
    with tempfile.TemporaryDirectory(prefix="launched-rank-rdv-") as d:
        got: List[bytes] = []
        errs: List[str] = []

        def reader():
            try:
                got.append(FileRendezvous(d, 10).receive("uid", len(data)))
            except Exception as e:  # noqa: BLE001
                errs.append(str(e))
        thread = threading.Thread(target=reader)
        thread.start()
        time.sleep(0.05)
        FileRendezvous(d, 10).publish("uid", data)
        thread.join(15)
        check(got == [data] and not errs, f"the id reaches a waiting rank ({errs})")
        check(sorted(os.listdir(d)) == ["uid"], f"no temporary file left ({os.listdir(d)})")
        FileRendezvous(d, 10).publish("uid", data[::-1])
        check(FileRendezvous(d, 0.1).receive("uid", len(data)) == data[::-1], "a second publish replaces the first")
        start = time.monotonic()
        try:
            FileRendezvous(d, 0.2).receive("absent", len(data))
            check(False, "a missing id times out")
        except RuntimeError as e:
            check("after 0.2 s" in str(e) and time.monotonic() - start < 5, f"a missing id times out: {e}")
        with open(os.path.join(d, "short"), "wb") as f:
            f.write(b"abc")
        try:
            FileRendezvous(d, 1).receive("short", len(data))
            check(False, "a short id file is refused")
        except RuntimeError as e:
            check("holds 3 bytes, not 128" in str(e), f"a short id file is refused: {e}")

    # a rank's output and exit status
    env: Dict[str, str] = {"NCCL_NVLS_ENABLE": "1"}
    shared_gpu_environment(env)
    check(env == {"NCCL_NVLS_ENABLE": "1", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"},
          f"shared-GPU variables, a set one kept: {env}")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        prefix, say = rank_output("client", 3)
        say("hello")
        errors: List[str] = []
        try:
            raise KeyError("boom")
        except KeyError:
            note_error(errors, say, "ERROR in shutdown")
        status = finish(prefix, say, errors, 5, 0, "NCCL 2.28.3")
    lines = out.getvalue().splitlines()
    check(prefix == "client[rank 3]" and lines[0] == "client[rank 3]: hello", f"a rank's line: {lines[:1]}")
    check(lines[1] == "client[rank 3]: ERROR in shutdown: Traceback (most recent call last):" and len(errors) == 1
          and "KeyError: 'boom'" in errors[0], f"an error's traceback: {lines[1:2]}")
    check(lines[-2:] == ["client[rank 3]: FAILED: 1 error(s)",
                         f"client[rank 3]: 5 checks, 0 wrong (NCCL 2.28.3; {NO_LATENCY})"],
          f"closing lines: {lines[-2:]}")
    check(status == EXIT_FAIL, "an error fails the rank")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = finish("p", say, [], 4, 0, "x")
    check(status == EXIT_OK and out.getvalue() == f"p: 4 checks, 0 wrong (x; {NO_LATENCY})\n", "all right: 0")
    check(exit_status([], 4, 1) == EXIT_FAIL and exit_status([], 0, 0) == EXIT_FAIL, "wrong or nothing checked: 1")
    seen = []
    check(run_main(lambda argv: argparse.Namespace(self_test=argv == ["-s"]), lambda: seen.append("s") or 3,
                   lambda args: seen.append("r") or 4, ["-s"]) == 3 and seen == ["s"], "main: --self-test")
    check(run_main(lambda argv: argparse.Namespace(self_test=False), lambda: 3,
                   lambda args: seen.append("r") or 4, []) == 4 and seen == ["s", "r"], "main: one rank")
    inner = SelfTest("inner")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        inner.check(True, "fine")
        inner.check(False, "planted")
        status = inner.done()
    check(status == EXIT_FAIL and out.getvalue() == "inner self-test: FAILED: planted\n"
          "inner self-test: 2 checks, 1 failed\n", f"a failed check is said and counted: {out.getvalue()!r}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--self-test"]:
        print(f"usage: {os.path.basename(sys.argv[0])} --self-test (the module's own checks)", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    _t = SelfTest("launched_rank")
    check_module(_t)
    sys.exit(_t.done())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs one command as N ranks of real NCCL communicators, every process on the same GPU.

NCCL refuses two ranks on one GPU only when their host hashes match; NCCL_HOSTID sets that hash. Each
rank here gets its own NCCL_HOSTID and talks to the others over loopback sockets, so one GPU holds a
2-, 4- or 8-rank communicator. The processes time-slice that GPU: what runs this way shows correctness
only. Nothing measured this way is a latency figure.

  tests/multiproc/launch_ranks.py --nranks 4 --timeout 300 --logs out/4 -- \\
      python3 tests/clients/pynccl_client.py --launched --quick

Every rank gets RANK, WORLD_SIZE, LOCAL_RANK (= RANK), LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1,
MASTER_PORT (a free port), SYMMEM_TEST_RENDEZVOUS_DIR (a folder made for this run), NCCL_HOSTID=
symmem-test-host-<rank>, NCCL_SOCKET_IFNAME=lo, NCCL_IB_DISABLE=1, NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1 and SYMMEM_TEST_SHARED_GPU=1 (not with
--no-shared-gpu-mode); CUDA_VISIBLE_DEVICES is passed on as it is. --env and --rank-env come last.

Exit status: 0 when every rank exited 0 (with --kill-rank: when the killed rank was killed and every
other rank ended by itself in time), 77 when every rank skipped (exit 77), 1 otherwise, 2 on bad
arguments. The last line printed is the verdict.
"""
import argparse
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

PROG = "launch_ranks"
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_SKIP = 0, 1, 2, 77
MAX_RANKS = 16
NO_LATENCY = "shared GPU: correctness only, no latency figures"
HOSTID_PREFIX = "symmem-test-host-"
# Set by the launcher for each rank; --env/--rank-env may not change them.
RESERVED = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "SYMMEM_TEST_RENDEZVOUS_DIR")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class UsageError(ValueError):
    pass


# ==== arguments ====================================================================================
def parse_assignment(text: str, what: str) -> Tuple[str, str]:
    """NAME=VALUE -> (NAME, VALUE); the value may be empty or hold '='."""
    name, sep, value = text.partition("=")
    if not sep:
        raise UsageError(f"{what} {text!r}: expected NAME=VALUE")
    if not _NAME.match(name):
        raise UsageError(f"{what} {text!r}: {name!r} is not a variable name")
    if name in RESERVED:
        raise UsageError(f"{what} {text!r}: {name} is set by the launcher for each rank")
    return name, value


def parse_rank_env(text: str, nranks: int) -> Tuple[int, str, str]:
    """R:NAME=VALUE -> (R, NAME, VALUE), R in [0, nranks)."""
    head, sep, rest = text.partition(":")
    if not sep:
        raise UsageError(f"--rank-env {text!r}: expected R:NAME=VALUE")
    try:
        rank = int(head, 10)
    except ValueError:
        raise UsageError(f"--rank-env {text!r}: rank {head!r} is not an integer") from None
    if not 0 <= rank < nranks:
        raise UsageError(f"--rank-env {text!r}: rank {rank} is not in [0, {nranks - 1}]")
    name, value = parse_assignment(rest, "--rank-env")
    return rank, name, value


def _int_in(lo: int, hi: int):
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be in [{lo}, {hi}]: {value}")
        return value
    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # raise instead of exiting, so that tests see the message
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Run a command as N NCCL ranks, one process each, all on one GPU "
                "(testing only: " + NO_LATENCY + ").",
                usage="%(prog)s --nranks N [options] -- COMMAND [ARG...]")
    p.add_argument("--nranks", type=_int_in(1, MAX_RANKS), required=True, help=f"ranks (1-{MAX_RANKS})")
    p.add_argument("--timeout", type=_seconds, default=600.0,
                   help="seconds for the whole run; then every rank still running is ended (default 600)")
    p.add_argument("--kill-grace", type=_seconds, default=5.0,
                   help="seconds between SIGTERM and SIGKILL when ranks are ended (default 5)")
    p.add_argument("--logs", metavar="DIR", help="folder for rank-<r>.log (default: a new folder under $TMPDIR)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="set for every rank (repeatable)")
    p.add_argument("--rank-env", action="append", default=[], metavar="R:NAME=VALUE",
                   help="set for rank R only, after --env (repeatable), e.g. 1:SYMMEM_HOOKS=0")
    p.add_argument("--no-shared-gpu-mode", action="store_true",
                   help="do not set SYMMEM_TEST_SHARED_GPU (and unset it if inherited)")
    p.add_argument("--kill-rank", type=int, metavar="R", help="SIGKILL rank R after --kill-after seconds")
    p.add_argument("--kill-after", type=_seconds, metavar="S", help="seconds after start for --kill-rank")
    p.add_argument("--tail", type=_int_in(0, 1000), default=20, help="log lines shown per failing rank (default 20)")
    p.add_argument("--self-test", action="store_true", help="run the unit tests (test_launch_ranks.py)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")
    return p


@dataclass
class Config:
    nranks: int
    command: List[str]
    timeout: float = 600.0
    kill_grace: float = 5.0
    logs: Optional[str] = None
    env: List[Tuple[str, str]] = field(default_factory=list)
    rank_env: List[Tuple[int, str, str]] = field(default_factory=list)
    shared_gpu_mode: bool = True
    kill_rank: Optional[int] = None
    kill_after: Optional[float] = None
    tail: int = 20
    self_test: bool = False


def parse_args(argv: Sequence[str]) -> Config:
    argv = list(argv)
    own = argv[: argv.index("--")] if "--" in argv else argv
    if "--self-test" in own:
        return Config(nranks=1, command=[], self_test=True)
    a = build_parser().parse_args(argv)
    command = list(a.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("no command: put it after --")
    env = [parse_assignment(t, "--env") for t in a.env]
    rank_env = [parse_rank_env(t, a.nranks) for t in a.rank_env]
    if (a.kill_rank is None) != (a.kill_after is None):
        raise UsageError("--kill-rank and --kill-after go together")
    if a.kill_rank is not None and not 0 <= a.kill_rank < a.nranks:
        raise UsageError(f"--kill-rank {a.kill_rank} is not in [0, {a.nranks - 1}]")
    if a.kill_after is not None and a.kill_after >= a.timeout:
        raise UsageError(f"--kill-after {a.kill_after:g} must come before --timeout {a.timeout:g}")
    return Config(nranks=a.nranks, command=command, timeout=a.timeout, kill_grace=a.kill_grace, logs=a.logs,
                  env=env, rank_env=rank_env, shared_gpu_mode=not a.no_shared_gpu_mode, kill_rank=a.kill_rank,
                  kill_after=a.kill_after, tail=a.tail)


# ==== each rank's environment ======================================================================
def rank_environment(base: Dict[str, str], cfg: Config, rank: int, port: int, rendezvous: str) -> Dict[str, str]:
    env = dict(base)
    env.update({
        "RANK": str(rank), "WORLD_SIZE": str(cfg.nranks),
        "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": str(cfg.nranks),
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
        "SYMMEM_TEST_RENDEZVOUS_DIR": rendezvous,
        "NCCL_HOSTID": f"{HOSTID_PREFIX}{rank}",
        "NCCL_SOCKET_IFNAME": "lo", "NCCL_IB_DISABLE": "1",
        "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1",
    })
    if cfg.shared_gpu_mode:
        env["SYMMEM_TEST_SHARED_GPU"] = "1"
    else:
        env.pop("SYMMEM_TEST_SHARED_GPU", None)
    for name, value in cfg.env:
        env[name] = value
    for r, name, value in cfg.rank_env:
        if r == rank:
            env[name] = value
    return env


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ==== exit statuses and the verdict ================================================================
def describe_status(code: Optional[int]) -> str:
    """Popen's returncode in words: 0, 1, SIGKILL, ... None (unstarted) is a rank that never started."""
    if code is None:
        return "unstarted"
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return str(code)


def tail_lines(path: str, n: int) -> List[str]:
    if n <= 0:
        return []
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read()
    except OSError as e:
        return [f"(cannot read {path}: {e.strerror})"]
    return data.decode("utf-8", "replace").splitlines()[-n:]


@dataclass
class Outcome:
    codes: List[Optional[int]]         # final exit status per rank (Popen returncode)
    elapsed: float
    timed_out: List[int]               # ranks still running at the deadline (then ended)
    killed_rank: Optional[int] = None  # the rank --kill-rank killed, when it was still running
    kill_missed: str = ""              # why --kill-rank killed nothing
    start_error: str = ""              # a rank that could not be started
    start_rank: int = -1               # which one


def judge(cfg: Config, out: Outcome) -> Tuple[str, int, List[int]]:
    """(verdict word, exit status, ranks whose log tails are shown)."""
    n = cfg.nranks
    if out.start_error:
        return "FAIL", EXIT_FAIL, [r for r in range(n) if out.codes[r] != 0 and (r <= out.start_rank or out.codes[r] is not None)]
    if out.timed_out:
        return "TIMEOUT", EXIT_FAIL, list(out.timed_out)
    if cfg.kill_rank is not None:
        if out.killed_rank is None:
            return "FAIL", EXIT_FAIL, [r for r in range(n) if out.codes[r] != 0]
        # The others only have to end by themselves; an error is what they should see.
        return "PASS", EXIT_OK, [r for r in range(n) if r != cfg.kill_rank and out.codes[r] != 0]
    if all(c == EXIT_SKIP for c in out.codes):
        return "SKIPPED", EXIT_SKIP, [0]
    bad = [r for r in range(n) if out.codes[r] != 0]
    return ("PASS", EXIT_OK, []) if not bad else ("FAIL", EXIT_FAIL, bad)


def what_each_did(cfg: Config, out: Outcome) -> str:
    parts = []
    for r, code in enumerate(out.codes):
        if r == out.killed_rank:
            parts.append(f"rank {r} killed by --kill-rank ({describe_status(code)})")
        elif r in out.timed_out:
            parts.append(f"rank {r} still running at the timeout, ended ({describe_status(code)})")
        elif code == 0:
            parts.append(f"rank {r} exited 0 by itself")
        else:
            parts.append(f"rank {r} ended by itself with {describe_status(code)}")
    return "; ".join(parts)


def verdict_line(cfg: Config, out: Outcome, word: str, logs: str) -> str:
    codes = " ".join(describe_status(c) for c in out.codes)
    text = f"{PROG}: {cfg.nranks} ranks: {word} (exit codes {codes}) in {out.elapsed:.1f} s"
    if out.start_error:
        text += f"; {out.start_error}"
    if out.timed_out:
        text += (f"; timed out after {cfg.timeout:g} s with rank(s) {' '.join(map(str, out.timed_out))} "
                 "still running (ended with SIGTERM, then SIGKILL)")
    if cfg.kill_rank is not None:
        text += f"; {out.kill_missed}" if out.killed_rank is None else ""
        text += f"; {what_each_did(cfg, out)}"
    elif word == "SKIPPED":
        text += "; every rank skipped (exit 77)"
    return f"{text}; logs in {logs}; {NO_LATENCY}"


# ==== processes ====================================================================================
_PR_SET_PDEATHSIG = 1


def _child_setup(parent_pid: int):
    """In the child, before exec (after start_new_session's setsid): die with the launcher."""
    def setup():
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent_pid:  # the launcher died before prctl took effect
            os._exit(EXIT_FAIL)
    return setup


def signal_group(pid: int, sig: int, note: List[str]) -> bool:
    """Sends sig to the process group led by pid (each rank leads its own session). False when it is
    already gone; other failures go into note."""
    try:
        os.killpg(pid, sig)
        return True
    except ProcessLookupError:
        return False
    except OSError as e:
        note.append(f"killpg({pid}, {signal.Signals(sig).name}) failed: {e.strerror}")
        return False


def end_groups(procs: Dict[int, subprocess.Popen], ranks: List[int], grace: float, note: List[str]) -> None:
    """SIGTERM to each rank's whole group, up to `grace` seconds, then SIGKILL; reaps them."""
    for r in ranks:
        signal_group(procs[r].pid, signal.SIGTERM, note)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(procs[r].poll() is None for r in ranks):
        time.sleep(0.05)
    for r in ranks:
        # The leader may be gone while its children live on in the group: SIGKILL the group anyway.
        signal_group(procs[r].pid, signal.SIGKILL, note)
    for r in ranks:
        try:
            procs[r].wait(timeout=30)
        except subprocess.TimeoutExpired:
            note.append(f"rank {r} (pid {procs[r].pid}) did not end after SIGKILL")


class _Interrupted(Exception):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_interrupted(signum, _frame):
    raise _Interrupted(signum)


def launch(cfg: Config, out_stream=None, base_env: Optional[Dict[str, str]] = None) -> int:
    """Runs the ranks and prints the verdict on out_stream (default stdout); returns the exit status."""
    out_stream = out_stream or sys.stdout
    base_env = dict(os.environ if base_env is None else base_env)

    def say(text: str) -> None:
        print(text, file=out_stream, flush=True)

    if cfg.logs:
        logs = os.path.abspath(cfg.logs)
        try:
            os.makedirs(logs, exist_ok=True)
        except OSError as e:
            say(f"{PROG}: cannot make the log folder {logs}: {e.strerror}")
            return EXIT_USAGE
    else:
        logs = tempfile.mkdtemp(prefix=f"{PROG}-logs-")
    rendezvous = tempfile.mkdtemp(prefix=f"{PROG}-rendezvous-")
    port = free_port()
    say(f"{PROG}: {cfg.nranks} ranks of {' '.join(cfg.command)} on one GPU (NCCL_HOSTID per rank, loopback "
        f"sockets, MASTER_PORT {port}{'' if cfg.shared_gpu_mode else ', SYMMEM_TEST_SHARED_GPU unset'}); "
        f"logs in {logs}; {NO_LATENCY}")

    procs: Dict[int, subprocess.Popen] = {}
    files = []
    note: List[str] = []
    start_error = ""
    start_rank = -1
    timed_out: List[int] = []
    killed_rank: Optional[int] = None
    kill_missed = ""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    interrupted = 0
    start = time.monotonic()
    try:
        for s in saved:
            signal.signal(s, _raise_interrupted)
        for rank in range(cfg.nranks):
            path = os.path.join(logs, f"rank-{rank}.log")
            try:
                log = open(path, "wb")
            except OSError as e:
                start_error = f"cannot open {path}: {e.strerror}"
                start_rank = rank
                break
            files.append(log)
            try:
                procs[rank] = subprocess.Popen(
                    cfg.command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    env=rank_environment(base_env, cfg, rank, port, rendezvous), start_new_session=True,
                    preexec_fn=_child_setup(os.getpid()), close_fds=True)
            except (OSError, subprocess.SubprocessError) as e:
                why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
                start_error = f"rank {rank} could not start {cfg.command[0]!r}: {why}"
                start_rank = rank
                log.write(f"{PROG}: {start_error}\n".encode())
                log.flush()
                break
        deadline = start + cfg.timeout
        kill_at = start + cfg.kill_after if cfg.kill_rank is not None else None
        if start_error:
            end_groups(procs, [r for r in procs if procs[r].poll() is None], cfg.kill_grace, note)
        while not start_error:
            running = [r for r in procs if procs[r].poll() is None]
            now = time.monotonic()
            if kill_at is not None and now >= kill_at:
                kill_at = None
                victim = procs[cfg.kill_rank]
                if victim.poll() is None and signal_group(victim.pid, signal.SIGKILL, note):
                    victim.wait()
                    killed_rank = cfg.kill_rank
                    say(f"{PROG}: killed rank {cfg.kill_rank} (SIGKILL to its process group) "
                        f"after {now - start:.1f} s")
                else:
                    kill_missed = (f"rank {cfg.kill_rank} had already ended ({describe_status(victim.poll())}) "
                                   f"before --kill-after {cfg.kill_after:g} s: nothing was killed")
                continue
            if not running:
                if kill_at is not None:  # everyone finished before the kill was due
                    kill_missed = (f"every rank ended before --kill-after {cfg.kill_after:g} s: "
                                   "nothing was killed")
                break
            if now >= deadline:
                timed_out = running
                say(f"{PROG}: timeout after {cfg.timeout:g} s: ending rank(s) {' '.join(map(str, running))}")
                end_groups(procs, running, cfg.kill_grace, note)
                break
            time.sleep(0.05)
    except _Interrupted as e:
        interrupted = e.signum
        end_groups(procs, [r for r in procs if procs[r].poll() is None], cfg.kill_grace, note)
    finally:
        for proc in procs.values():  # what a rank left behind in its group goes too
            if proc.poll() is not None:
                signal_group(proc.pid, signal.SIGKILL, note)
        for s, handler in saved.items():
            signal.signal(s, handler)
        for f in files:
            f.close()
        _remove_tree(rendezvous, note)
    elapsed = time.monotonic() - start
    codes = [procs[r].returncode if r in procs else None for r in range(cfg.nranks)]
    outcome = Outcome(codes=codes, elapsed=elapsed, timed_out=timed_out, killed_rank=killed_rank,
                      kill_missed=kill_missed, start_error=start_error, start_rank=start_rank)
    if interrupted:
        outcome.start_error = f"interrupted by {signal.Signals(interrupted).name}; every rank ended"
    word, status, show = judge(cfg, outcome)
    for n in note:
        say(f"{PROG}: {n}")
    for r in range(cfg.nranks):
        path = os.path.join(logs, f"rank-{r}.log")
        if r in show:
            say(f"---- rank {r} ({describe_status(codes[r])}), last lines of {path}:")
            lines = tail_lines(path, cfg.tail)
            for line in lines:
                say(f"  | {line}")
            if not lines:
                say("  | (empty)")
        elif status == EXIT_OK and cfg.tail:
            last = tail_lines(path, 1)
            if last:
                say(f"  rank {r}: {last[0]}")
    say(verdict_line(cfg, outcome, word, logs))
    return status


def _remove_tree(path: str, note: List[str]) -> None:
    for root, dirs, names in os.walk(path, topdown=False):
        for name in names:
            try:
                os.unlink(os.path.join(root, name))
            except OSError as e:
                note.append(f"cannot remove {os.path.join(root, name)}: {e.strerror}")
        for name in dirs:
            try:
                os.rmdir(os.path.join(root, name))
            except OSError as e:
                note.append(f"cannot remove {os.path.join(root, name)}: {e.strerror}")
    try:
        os.rmdir(path)
    except OSError as e:
        note.append(f"cannot remove {path}: {e.strerror}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        cfg = parse_args(argv)
    except UsageError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        print(build_parser().format_usage().rstrip(), file=sys.stderr)
        return EXIT_USAGE
    if cfg.self_test:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.call([sys.executable, os.path.join(here, "test_launch_ranks.py")])
    return launch(cfg)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""JAX multi-process psum as one process of N, every process on GPU 0.

XLA runs a psum across processes as an NCCL all-reduce of the libnccl its CUDA plugin loads; with
NCCL_TUNER_PLUGIN=<path to libnccl-tuner-symmem.so> NCCL loads the plugin as its tuner. Whether XLA's
calls reach the plugin's path (XLA may group calls, or bring its own NCCL) is what a run shows: this
client prints which libnccl the process has mapped and its version.

  tests/multiproc/launch_ranks.py --nranks 2 --timeout 300 --logs out/jax-2 -- \\
      python3 tests/clients/jax_client.py --launched

Process id and count come from RANK and WORLD_SIZE; the coordinator listens on 127.0.0.1 at
MASTER_PORT + 1 (MASTER_PORT itself is left to other users; --port sets it). Before jax is imported:
XLA_PYTHON_CLIENT_PREALLOCATE=false and XLA_PYTHON_CLIENT_MEM_FRACTION=0.1 (N processes share one
GPU), proxy variables removed (gRPC would send the 127.0.0.1 connection through a proxy); the NCCL
variables are left as they are. Then

  jax.distributed.initialize(coordinator_address="127.0.0.1:PORT", num_processes=N, process_id=r,
                             local_device_ids=[0], initialization_timeout=--init-timeout,
                             coordinator_bind_address="127.0.0.1:PORT", ...)

(each keyword only where the installed JAX has it). When that fails, the rank prints what it called,
how long it took, the error, whether anything listens on the port, and exits 1.

What it checks, exactly: a global float32 array of shape (N, n) built with
jax.make_array_from_single_device_arrays over a mesh of jax.devices() (one device per process),
process r's row holding ((i * 7 + r * 3 + salt) % 17) - 8; jax.jit(jax.shard_map(jax.lax.psum over
the mesh axis)); every process's row of the result must equal the exact sum. n = 1, 1000, 65537, two
salts each. The processes time-slice one GPU: correctness only, nothing here is a latency figure.
Each rank ends with
  jax_client[rank r]: N checks, W wrong (jax x, jaxlib y, NCCL z; shared GPU: correctness only, no latency figures)
Exit status: 0 when every check is right, 1 on a wrong value or an error, 77 (skipped) when jax is
missing or has no GPU backend, 2 on bad arguments. --self-test checks the host-side pieces without jax.
"""
import argparse
import ctypes
import faulthandler
import importlib
import importlib.util
import inspect
import math
import os
import pkgutil
import re
import socket
import sys
import time
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
from launched_rank import (EXIT_FAIL, EXIT_SKIP, MAX_RANKS, NO_LATENCY, PERIOD,  # noqa: E402
                           SelfTest, check_module, contribution_period, finish, int_list, nccl_libraries,
                           nccl_version_text, note_error, parse_rank_args, pattern_value, positive_int, rank_output,
                           rank_parser, read_maps, repeat_period, result_line, run_main, shared_gpu_environment,
                           sum_period)

PROG = "jax_client"
DEFAULT_SIZES = (1, 1000, 65537)
SALTS = (0, 5)
AXIS = "ranks"
XLA_ENV = (("XLA_PYTHON_CLIENT_PREALLOCATE", "false"), ("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.1"))
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "grpc_proxy")


# ==== values ========================================================================================
def contribution_values(n: int, rank: int, salt: int) -> List[int]:
    return repeat_period(contribution_period(rank, salt), n)


def expected_values(n: int, world: int, salt: int) -> List[int]:
    return repeat_period(sum_period(world, salt), n)


def first_mismatch(got: Sequence[float], want: Sequence[float]) -> Tuple[int, int]:
    """(elements that differ, first such index); NaN equals nothing."""
    if len(got) != len(want):
        return max(len(got), len(want)), min(len(got), len(want))
    bad = [i for i, (a, b) in enumerate(zip(got, want)) if not a == b]
    return len(bad), (bad[0] if bad else -1)


# ==== ports, environment, initialize's keywords =====================================================
def coordinator_port(master_port: str, override: Optional[int]) -> int:
    """The coordinator's port: --port, else MASTER_PORT + 1 (MASTER_PORT - 1 when that is 65535)."""
    if override is not None:
        return override
    try:
        port = int(master_port, 10)
    except (TypeError, ValueError):
        raise ValueError(f"MASTER_PORT is not a port number: {master_port!r}") from None
    if not 1 <= port <= 65535:
        raise ValueError(f"MASTER_PORT is not a port number: {port}")
    return port + 1 if port < 65535 else port - 1


def prepare_environment(environ: Dict[str, str]) -> Tuple[List[str], List[str]]:
    """Sets XLA's memory variables and removes proxy variables, in `environ`. Returns (what was set,
    what was removed). NCCL_* stays as it is."""
    set_now = []
    for name, value in XLA_ENV:
        environ[name] = value
        set_now.append(f"{name}={value}")
    removed = []
    for name in list(environ):
        if name.lower() in PROXY_VARS:
            del environ[name]
            removed.append(name)
    return set_now, sorted(removed)


def initialize_kwargs(params: Iterable[str], port: int, world: int, rank: int, init_timeout: int,
                      shutdown_timeout: int) -> Dict[str, object]:
    """jax.distributed.initialize's keywords, each optional one only where this JAX has it."""
    names = set(params)
    address = f"127.0.0.1:{port}"
    kwargs: Dict[str, object] = {"coordinator_address": address, "num_processes": world, "process_id": rank,
                                 "local_device_ids": [0]}
    if "initialization_timeout" in names:
        kwargs["initialization_timeout"] = init_timeout
    if "coordinator_bind_address" in names:
        kwargs["coordinator_bind_address"] = address  # the default, [::]:PORT, needs IPv6
    if "shutdown_timeout_seconds" in names:
        kwargs["shutdown_timeout_seconds"] = shutdown_timeout
    return kwargs


def call_text(kwargs: Dict[str, object]) -> str:
    return "jax.distributed.initialize(" + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")"


def port_state(port: int, timeout: float = 1.0) -> str:
    """Whether something accepts TCP connections on 127.0.0.1:port, in words."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(("127.0.0.1", port))
            return f"something accepts connections on 127.0.0.1:{port}"
        except ConnectionRefusedError:
            return f"nothing listens on 127.0.0.1:{port} (connection refused)"
        except OSError as e:
            return f"connecting to 127.0.0.1:{port} failed: {e.strerror or e}"


def port_free(port: int) -> str:
    """'' when 127.0.0.1:port can be bound now, else why not."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
            return ""
        except OSError as e:
            return e.strerror or str(e)


# ==== which GPU plugin, which NCCL ==================================================================
_CUDA_DIST = re.compile(r"jax[-_]cuda\d+[-_](plugin|pjrt)\Z", re.IGNORECASE)


def cuda_plugin_evidence(dist_names: Iterable[str], plugin_modules: Iterable[str],
                         entry_points: Iterable[str], jaxlib_version: str) -> List[str]:
    """What says a CUDA backend is installed: jax-cudaNN-plugin / -pjrt distributions, jax_plugins
    modules or entry points naming cuda, or a jaxlib built with CUDA."""
    found = sorted({d for d in dist_names if _CUDA_DIST.match(d or "")})
    found += sorted({f"jax_plugins module {m}" for m in plugin_modules if "cuda" in m.lower()})
    found += sorted({f"jax_plugins entry point {e}" for e in entry_points if "cuda" in e.lower()})
    if "cuda" in (jaxlib_version or "").lower():
        found.append(f"jaxlib {jaxlib_version}")
    return found


def installed_cuda_plugins(jaxlib_version: str) -> List[str]:
    dists, modules, entries = [], [], []
    try:
        from importlib import metadata
        dists = [d.metadata["Name"] or "" for d in metadata.distributions()]
        try:
            entries = [e.value for e in metadata.entry_points(group="jax_plugins")]
        except TypeError:  # Python before 3.10
            entries = [e.value for e in metadata.entry_points().get("jax_plugins", [])]
    except Exception:  # noqa: BLE001 - evidence is only gathered, never required from one source
        pass
    try:
        spec = importlib.util.find_spec("jax_plugins")
        if spec is not None and spec.submodule_search_locations:
            modules = [name for _, name, _ in pkgutil.iter_modules(list(spec.submodule_search_locations))]
    except Exception:  # noqa: BLE001
        pass
    return cuda_plugin_evidence(dists, modules, entries, jaxlib_version)


def loaded_nccl_version(path: str) -> str:
    """ncclGetVersion of a libnccl this process has already mapped (never loads one)."""
    try:
        lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 4) | getattr(os, "RTLD_LAZY", 1))
        code = ctypes.c_int(0)
        status = lib.ncclGetVersion(ctypes.byref(code))
        if status != 0:
            return f"unknown (ncclGetVersion returned {status})"
        return nccl_version_text(code.value)
    except (OSError, AttributeError) as e:
        return f"unknown ({e})"


def nccl_report() -> Tuple[str, str]:
    """(versions of the mapped libnccl copies, one line on every libnccl*-named file mapped)."""
    core, others = nccl_libraries(read_maps())
    versions = [loaded_nccl_version(p) for p in core]
    short = ", ".join(versions) if versions else "none loaded"
    line = ("libnccl mapped: " + (", ".join(f"{p} ({v})" for p, v in zip(core, versions)) or "none") +
            ("; also " + ", ".join(others) if others else ""))
    return short, line


# ==== arguments =====================================================================================
def _port(text: str) -> int:
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"not a port number: {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = rank_parser(PROG, "A JAX psum across processes, checked exactly, one process of N on GPU 0 (" + NO_LATENCY +
                    ").", "process", "jax")
    p.add_argument("--sizes", type=int_list("sizes", 1 << 24), default=list(DEFAULT_SIZES),
                   help="float32 elements per process, comma-separated (default 1,1000,65537)")
    p.add_argument("--port", type=_port, help="the coordinator's port (default MASTER_PORT + 1)")
    p.add_argument("--init-timeout", type=positive_int, default=60,
                   help="jax.distributed.initialize's initialization_timeout, seconds (default 60)")
    p.add_argument("--shutdown-timeout", type=positive_int, default=30,
                   help="jax.distributed.initialize's shutdown_timeout_seconds (default 30)")
    p.add_argument("--timeout", type=positive_int, default=270,
                   help="seconds for the whole process; then its stacks are printed and it exits 1 (default 270)")
    p.add_argument("--verbose", "-v", action="store_true", help="print every check")
    return p


def parse_args(argv: Optional[Sequence[str]] = None, environ: Optional[Dict[str, str]] = None) -> argparse.Namespace:
    environ = os.environ if environ is None else environ
    parser = build_parser()
    args = parse_rank_args(parser, argv, environ)
    if args.self_test:
        return args
    if args.port is None and "MASTER_PORT" not in environ and args.launched:
        parser.error("--launched needs MASTER_PORT (or --port)")
    if args.port is None and "MASTER_PORT" not in environ:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # one process alone: any free port
            s.bind(("127.0.0.1", 0))
            args.port = s.getsockname()[1]
    try:
        args.port = coordinator_port(environ.get("MASTER_PORT", ""), args.port)
    except ValueError as e:
        parser.error(str(e))
    if args.init_timeout >= args.timeout:
        parser.error(f"--init-timeout {args.init_timeout} must be shorter than --timeout {args.timeout}")
    return args


# ==== one launched process ==========================================================================
def versions(jax) -> Tuple[str, str]:
    jaxlib_version = "unknown"
    try:
        jaxlib_version = importlib.import_module("jaxlib.version").__version__
    except Exception:  # noqa: BLE001
        try:
            jaxlib_version = importlib.import_module("jaxlib").__version__
        except Exception:  # noqa: BLE001
            pass
    return getattr(jax, "__version__", "unknown"), jaxlib_version


def get_shard_map(jax):
    fn = getattr(jax, "shard_map", None)
    if fn is not None:
        return fn, "jax.shard_map"
    from jax.experimental.shard_map import shard_map  # older JAX
    return shard_map, "jax.experimental.shard_map.shard_map"


def run_rank(args) -> int:
    prefix, say = rank_output(PROG, args.rank)
    set_now, removed = prepare_environment(os.environ)
    shared_gpu_environment(os.environ)
    try:
        import jax
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken install failing otherwise
        say(f"SKIPPED: jax is not importable ({type(e).__name__}: {e})")
        return EXIT_SKIP
    jax_version, jaxlib_version = versions(jax)
    plugins = installed_cuda_plugins(jaxlib_version)
    nccl_env = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("NCCL_")) or "none"
    say(f"process {args.rank} of {args.world}, jax {jax_version}, jaxlib {jaxlib_version}, CUDA backend: "
        f"{', '.join(plugins) or 'none found'}; set {' '.join(set_now)}"
        f"{'; removed ' + ' '.join(removed) if removed else ''}; NCCL environment: {nccl_env} ({NO_LATENCY})")
    if not plugins:
        say("SKIPPED: jax has no GPU backend installed (no jax-cudaNN-plugin/-pjrt, no cuda module under "
            "jax_plugins)")
        return EXIT_SKIP

    faulthandler.dump_traceback_later(args.timeout, exit=True)
    params = inspect.signature(jax.distributed.initialize).parameters
    kwargs = initialize_kwargs(params, args.port, args.world, args.rank, args.init_timeout, args.shutdown_timeout)
    if "initialization_timeout" not in kwargs:
        say(f"this JAX has no initialization_timeout: the watchdog (--timeout {args.timeout} s) bounds it")
    if args.rank == 0:
        busy = port_free(args.port)
        if busy:
            say(f"WARNING: 127.0.0.1:{args.port} cannot be bound now ({busy}): the coordinator may not start")
    say(f"calling {call_text(kwargs)}")
    start = time.monotonic()
    try:
        jax.distributed.initialize(**kwargs)
    except Exception as e:  # noqa: BLE001 - the failure is the finding: say exactly what failed
        elapsed = time.monotonic() - start
        faulthandler.cancel_dump_traceback_later()
        say(f"FAILED: {call_text(kwargs)} raised {type(e).__name__} after {elapsed:.1f} s: {e}")
        if args.rank == 0:
            service = None
            try:
                service = importlib.import_module("jax._src.distributed").global_state.service
            except Exception:  # noqa: BLE001
                pass
            say(f"rank 0: coordination service {'started' if service is not None else 'not started'} "
                f"(bind {kwargs.get('coordinator_bind_address', 'default [::]:' + str(args.port))})")
        say(f"now: {port_state(args.port)}; proxy variables removed: {' '.join(removed) or 'none'}")
        result_line(prefix, 0, 0, f"jax {jax_version}, jaxlib {jaxlib_version}, NCCL not loaded")
        return EXIT_FAIL
    say(f"jax.distributed.initialize returned in {time.monotonic() - start:.1f} s")

    checks = wrong = 0
    errors: List[str] = []
    nccl_short = "not loaded"
    try:
        backend = jax.default_backend()
        if backend != "gpu":
            faulthandler.cancel_dump_traceback_later()
            say(f"SKIPPED: jax's backend is {backend!r}, not 'gpu' (devices: {jax.devices()})")
            try:
                jax.distributed.shutdown()
            except Exception:  # noqa: BLE001
                pass
            return EXIT_SKIP
        import numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        devices, local = jax.devices(), jax.local_devices()
        say(f"process_index {jax.process_index()} of {jax.process_count()}; devices {devices}; local {local}")
        if jax.process_index() != args.rank or jax.process_count() != args.world:
            raise RuntimeError(f"jax says process {jax.process_index()} of {jax.process_count()}, "
                               f"not {args.rank} of {args.world}")
        if len(devices) != args.world or len(local) != 1:
            raise RuntimeError(f"expected {args.world} devices, one per process; got {len(devices)} devices, "
                               f"{len(local)} local")
        shard_map, shard_map_name = get_shard_map(jax)
        mesh = Mesh(np.array(devices), (AXIS,))
        spec = PartitionSpec(AXIS)
        sharding = NamedSharding(mesh, spec)
        psum = jax.jit(shard_map(lambda x: jax.lax.psum(x, AXIS), mesh=mesh, in_specs=spec, out_specs=spec))
        say(f"psum over mesh axis {AXIS!r} of {len(devices)} devices through {shard_map_name}")
        for n in args.sizes:
            for salt in SALTS:
                mine = np.asarray(contribution_values(n, args.rank, salt), dtype=np.float32).reshape(1, n)
                pieces = [jax.device_put(mine, d) for d in local]
                x = jax.make_array_from_single_device_arrays((args.world, n), sharding, pieces)
                y = psum(x)
                shards = y.addressable_shards
                got = np.asarray(shards[0].data).reshape(-1)
                want = np.asarray(expected_values(n, args.world, salt), dtype=np.float32)
                checks += 1
                if got.shape == want.shape and np.array_equal(got, want):
                    if args.verbose:
                        say(f"ok: psum float32 n={n} salt={salt}")
                    continue
                wrong += 1
                bad, first = first_mismatch(got.tolist(), want.tolist())
                detail = (f"got {got[first]!r}, want {want[first]!r}" if 0 <= first < min(got.size, want.size)
                          else f"shapes {got.shape} and {want.shape}")
                say(f"WRONG: psum float32 n={n} salt={salt}: {bad} of {n} elements differ, first at {first}: {detail}")
        nccl_short, nccl_line = nccl_report()
        say(nccl_line)
    except Exception:  # noqa: BLE001 - every failure fails the process
        note_error(errors, say)
        nccl_short, nccl_line = nccl_report()
        say(nccl_line)
    try:
        jax.distributed.shutdown()
    except Exception:  # noqa: BLE001
        note_error(errors, say, "ERROR in jax.distributed.shutdown()")
    faulthandler.cancel_dump_traceback_later()
    return finish(prefix, say, errors, checks, wrong, f"jax {jax_version}, jaxlib {jaxlib_version}, NCCL {nccl_short}")


# ==== --self-test ===================================================================================
def self_test() -> int:
    t = SelfTest(PROG)
    check = t.check
    check_module(t)  # the pattern, versions, maps, argument types, rank environment, rendezvous files, output

    # values
    check(contribution_values(3, 0, 0) == [-8, -1, 6] and contribution_values(3, 1, 0) == [-5, 2, -8],
          "inputs by hand")
    check(expected_values(3, 2, 0) == [-13, 1, -2], "two processes' sums by hand")
    for n in (1, 16, 17, 18, 1000, 65537):
        for world in (1, 2, 4, MAX_RANKS):
            for salt in SALTS:
                want = [sum(pattern_value(i, r, salt) for r in range(world)) for i in range(min(n, 200))]
                check(expected_values(n, world, salt)[:200] == want, f"expected n={n} world={world} salt={salt}")
                check(len(expected_values(n, world, salt)) == n, f"expected length n={n}")
        check(contribution_values(n, 3, 5)[: min(n, 40)] == [pattern_value(i, 3, 5) for i in range(min(n, 40))],
              f"inputs n={n}")
    check(max(abs(v) for w in range(1, MAX_RANKS + 1) for s in range(PERIOD) for v in expected_values(PERIOD, w, s))
          < 2 ** 24, "every sum is exact in float32")
    check(expected_values(50, 2, 0) != expected_values(50, 2, 5), "the second salt changes the values")
    check(first_mismatch([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) == (0, -1), "no mismatch")
    check(first_mismatch([1.0, 5.0, 3.0, 0.0], [1.0, 2.0, 3.0, 1.0]) == (2, 1), "mismatch count and first index")
    check(first_mismatch([math.nan], [math.nan]) == (1, 0), "NaN equals nothing")
    check(first_mismatch([-0.0], [0.0]) == (0, -1), "-0 equals +0")
    check(first_mismatch([1.0], [1.0, 2.0]) == (2, 1), "different lengths")

    # ports and environment
    check(coordinator_port("29500", None) == 29501, "MASTER_PORT + 1")
    check(coordinator_port("65535", None) == 65534, "MASTER_PORT 65535 -> 65534")
    check(coordinator_port("", 4242) == 4242, "--port wins")
    for bad in ("", "x", "0", "70000"):
        try:
            coordinator_port(bad, None)
            check(False, f"MASTER_PORT {bad!r} refused")
        except ValueError:
            check(True, "bad MASTER_PORT refused")
    env = {"http_proxy": "h", "HTTPS_PROXY": "s", "no_proxy": "n", "GRPC_PROXY": "g", "NCCL_SOCKET_IFNAME": "lo",
           "XLA_PYTHON_CLIENT_PREALLOCATE": "true", "ALL_PROXY": "a"}
    set_now, removed = prepare_environment(env)
    check(removed == ["ALL_PROXY", "GRPC_PROXY", "HTTPS_PROXY", "http_proxy"], f"proxies removed: {removed}")
    check(env == {"no_proxy": "n", "NCCL_SOCKET_IFNAME": "lo", "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                  "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.1"}, f"environment after: {env}")
    check(set_now == ["XLA_PYTHON_CLIENT_PREALLOCATE=false", "XLA_PYTHON_CLIENT_MEM_FRACTION=0.1"], "what was set")
    new_jax = ["coordinator_address", "num_processes", "process_id", "local_device_ids", "cluster_detection_method",
               "initialization_timeout", "heartbeat_timeout_seconds", "shutdown_timeout_seconds",
               "coordinator_bind_address", "slice_index", "partition_index"]
    k = initialize_kwargs(new_jax, 29501, 4, 2, 60, 30)
    check(k == {"coordinator_address": "127.0.0.1:29501", "num_processes": 4, "process_id": 2, "local_device_ids": [0],
                "initialization_timeout": 60, "coordinator_bind_address": "127.0.0.1:29501",
                "shutdown_timeout_seconds": 30}, f"keywords for this JAX: {k}")
    old = initialize_kwargs(["coordinator_address", "num_processes", "process_id", "local_device_ids"], 7, 2, 0, 60, 30)
    check(set(old) == {"coordinator_address", "num_processes", "process_id", "local_device_ids"},
          "only the keywords an old JAX has")

    def fake_initialize(coordinator_address=None, num_processes=None, process_id=None, local_device_ids=None,
                        cluster_detection_method=None, initialization_timeout=300, coordinator_bind_address=None,
                        heartbeat_timeout_seconds=100, shutdown_timeout_seconds=300, partition_index=None):
        return None
    k = initialize_kwargs(inspect.signature(fake_initialize).parameters, 5, 2, 1, 9, 8)
    check(k["initialization_timeout"] == 9 and fake_initialize(**k) is None, "keywords from a signature bind")
    check(call_text({"a": "x", "b": [0]}) == "jax.distributed.initialize(a='x', b=[0])", "the call in words")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        check(port_state(port).startswith("something accepts"), f"a listening port: {port_state(port)}")
        check(port_free(port) != "", "a bound port is not free")
    check("refused" in port_state(port) or "failed" in port_state(port), f"a closed port: {port_state(port)}")

    # plugin evidence
    ev = cuda_plugin_evidence(["jax", "jaxlib", "jax-cuda13-plugin", "jax-cuda13-pjrt", "numpy"], ["xla_cuda13"],
                              ["jax_plugins.xla_cuda13"], "0.11.2")
    check(ev == ["jax-cuda13-pjrt", "jax-cuda13-plugin", "jax_plugins module xla_cuda13",
                 "jax_plugins entry point jax_plugins.xla_cuda13"], f"CUDA 13 plugin found: {ev}")
    check(cuda_plugin_evidence(["jax_cuda12_plugin"], [], [], "") == ["jax_cuda12_plugin"], "underscore spelling")
    check(cuda_plugin_evidence(["jax", "jaxlib"], ["xla_rocm7"], [], "0.11.2") == [], "no CUDA backend: none")
    check(cuda_plugin_evidence([], [], [], "0.4.1+cuda11.cudnn86") == ["jaxlib 0.4.1+cuda11.cudnn86"], "jaxlib+cuda")
    check(isinstance(installed_cuda_plugins("0.0"), list), "looking here finds a list")

    # the NCCL this process has mapped
    check(loaded_nccl_version("/nonexistent/libnccl.so.2").startswith("unknown"), "an unmapped library is not loaded")
    short, line = nccl_report()
    check(isinstance(short, str) and line.startswith("libnccl mapped: "), f"the report here: {line}")

    # arguments
    a = parse_args(["--launched"], environ={"RANK": "1", "WORLD_SIZE": "2", "MASTER_PORT": "29500"})
    check((a.rank, a.world, a.port, a.sizes, a.init_timeout) == (1, 2, 29501, [1, 1000, 65537], 60),
          "launched: rank, world, port, defaults")
    a = parse_args(["--launched", "--port", "4000", "--sizes", "3,5", "--init-timeout", "10", "--timeout", "20"],
                   environ={"RANK": "0", "WORLD_SIZE": "1"})
    check((a.port, a.sizes, a.init_timeout, a.timeout) == (4000, [3, 5], 10, 20), "options")
    a = parse_args([], environ={})
    check((a.rank, a.world) == (0, 1) and 1 <= a.port <= 65535, "alone: one process, a free port")
    check(parse_args(["--self-test"], environ={}).self_test, "--self-test")
    t.refuses(parse_args, ((["--launched"], {"WORLD_SIZE": "2", "MASTER_PORT": "1"}),
                           (["--launched"], {"RANK": "2", "WORLD_SIZE": "2", "MASTER_PORT": "1"}),
                           (["--launched"], {"RANK": "0", "WORLD_SIZE": "0", "MASTER_PORT": "1"}),
                           (["--launched"], {"RANK": "0", "WORLD_SIZE": "2"}),
                           (["--launched"], {"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "x"}),
                           (["--sizes", "0"], {}), (["--port", "70000"], {}), (["--init-timeout", "0"], {}),
                           (["--init-timeout", "300", "--timeout", "200"], {}), (["--bogus"], {})))

    return t.done()


def main(argv: Optional[Sequence[str]] = None) -> int:
    return run_main(parse_args, self_test, run_rank, argv)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A standalone NCCL client that reaches NCCL the way vLLM's and SGLang's PyNcclCommunicator do.

What it models: the pynccl wrappers load NCCL with ctypes.CDLL(VLLM_NCCL_SO_PATH / SGLANG_NCCL_SO_PATH
or "libnccl.so.2"), RTLD_LOCAL, and look every function pointer up with getattr once, when the first
wrapper object for that path is built - before ncclGetUniqueId, before any communicator exists - and
cache them per path. Later calls go through those cached pointers, never through a GOT, so only the
plugin's code hooks on libnccl's entry points (docs/attach.md) put it on their path when NCCL loads it
as its tuner; with SYMMEM_HOOKS=0 they reach it only through a library path that names the plugin.
vLLM runs every tensor-parallel all-reduce through this wrapper, eagerly and inside CUDA graphs; SGLang
uses it inside CUDA graphs. No torch here: CUDA is driven through ctypes on libcudart.

What it checks: exact sums (integer-valued data, host-generated, uploaded with cudaMemcpy) of
ncclAllReduce for float32/float16/bfloat16, counts from 1 element through odd counts to a few MiB, in
place and out of place, eagerly and captured into a CUDA graph (several calls per graph, replayed
with fresh inputs). Then it destroys the communicator and goes on through the cached pointers:
ncclGetVersion, an empty ncclGroupStart/End, ncclGetUniqueId, a second communicator (a checked
all-reduce, a grouped one, destroy) and a third one ended with ncclCommAbort. Prints one line
`pynccl_client: N checks, W wrong`; exits 0 when all is right, 1 on a wrong value or an NCCL/CUDA
error, 77 when there is no GPU to run on (skipped), 2 on bad arguments.

How to run it (one process, one rank, GPU 0; NCCL refuses two ranks on one GPU):

  # stock NCCL, as vLLM would load it
  python3 tests/clients/pynccl_client.py
  # the tuner plugin set the usual way: NCCL loads it and hooks libnccl, so the cached pointers reach it
  NCCL_TUNER_PLUGIN=$PWD/build/lib/libnccl-tuner-symmem.so NCCL_DEBUG=INFO python3 tests/clients/pynccl_client.py
  # the plugin in place of libnccl, as VLLM_NCCL_SO_PATH=<plugin> would put it (same as --nccl)
  NCCL_TUNER_PLUGIN=$PWD/build/lib/libnccl-tuner-symmem.so NCCL_DEBUG=INFO \
      python3 tests/clients/pynccl_client.py --nccl $PWD/build/lib/libnccl-tuner-symmem.so
  # N ranks, one process and one GPU each (forked before any CUDA call)
  python3 tests/clients/pynccl_client.py --nranks 2
  # the host-side pieces only (no CUDA, no NCCL): conversions, expected values, argument parsing
  python3 tests/clients/pynccl_client.py --self-test
  # one rank of N started by the launcher, every rank on GPU 0 (testing only: the ranks time-slice the
  # GPU, so nothing here is a latency figure; the plugin needs SYMMEM_TEST_SHARED_GPU=1, set by it)
  tests/multiproc/launch_ranks.py --nranks 4 --timeout 600 --logs out/4 -- \
      python3 tests/clients/pynccl_client.py --launched --quick --expect-path symmetric

With --launched the rank and world size come from RANK and WORLD_SIZE; rank 0 hands each unique id to
the others as a file in SYMMEM_TEST_RENDEZVOUS_DIR; each rank polls its stream and
ncclCommGetAsyncError instead of blocking, so a dead or aborted peer ends the wait with an error.
--expect-path is only printed: the caller checks each rank's NCCL_DEBUG=INFO log for the plugin's
`symmetric path on` or `all-reduces stay on NCCL` line. --abort-after-first, --keep-calling and
--wait-async-error drive the failure scenarios (tests/multiproc/CMakeLists.txt).

--scenario NAME (launched ranks only) runs one reliability scenario instead, each result checked exactly,
and ends with one line `pynccl_client[rank r]: scenario NAME: ... PASS|FAIL (...)` (exit 0 on PASS):
  many-comms           --comms N (default 200) communicators in a loop, each from its own unique id, one
                       checked all-reduce each; every 4th split (ncclCommSplit, color rank % 2, key rank)
                       and the child used once and destroyed; every 5th ended by ncclCommAbort
  nonblocking          ncclCommInitRankConfig with blocking = 0, polled until ready; eager and graph
                       all-reduces, each polled until no longer in progress; destroy
  two-comms-one-group  two communicators, one all-reduce on each inside one ncclGroupStart/End, 20 times
  mixed-eager-graph    eager all-reduces between replays of a graph of 4 all-reduces, 20 rounds
  timeout              the last rank stops after --stall-after K all-reduces and sleeps; the others must see
                       an error (from a call or ncclCommGetAsyncError) within --stall-timeout +
                       --wait-async-error (default 30) seconds; then every rank aborts (the symmetric path's
                       SYMMEM_TIMEOUT_MS, set small by the caller, is what ends their wait)

Keep NCCL_NVLS_ENABLE=0 on shared machines (set here by default when unset).
"""
import argparse
import ctypes
import ctypes.util
import faulthandler
import glob
import json
import math
import os
import select
import signal
import site
import subprocess
import struct
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

PROG = "pynccl_client"
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_SKIP = 0, 1, 2, 77
MAX_RANKS = 32  # |sum| <= 8 * 32 = 256: every partial sum is an integer bf16 holds exactly
EXPECT_PATHS = ("symmetric", "nccl", "any")
NO_LATENCY = "shared GPU: correctness only, no latency figures"
ABORT_DELAY_S = 2.0  # rank 0 waits this long before aborting, so that the others are inside the all-reduce
# --scenario: reliability scenarios of one launched rank (docs/validation.md, "Many ranks on one GPU")
SCENARIOS = ("many-comms", "nonblocking", "two-comms-one-group", "mixed-eager-graph", "timeout")
DEFAULT_COMMS, DEFAULT_STALL_AFTER = 200, 3
PROGRESS_EVERY = 50       # many-comms: a progress line every this many communicators
ROUNDS = 20               # two-comms-one-group and mixed-eager-graph
STALL_ASYNC_WAIT_S = 30   # timeout: how long the others poll ncclCommGetAsyncError once their stream stops
STALL_MARGIN_S = 15       # timeout: how long the staller sleeps beyond the others' bound
ncclInProgress = 7

# ==== NCCL types, as nccl.h defines them =============================================================
ncclResult_t = ctypes.c_int
ncclComm_t = ctypes.c_void_p
ncclDataType_t = ctypes.c_int
ncclRedOp_t = ctypes.c_int
cudaStream_t = ctypes.c_void_p
buffer_type = ctypes.c_void_p
NCCL_UNIQUE_ID_BYTES = 128


class ncclUniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * NCCL_UNIQUE_ID_BYTES)]


# ncclConfig_t as nccl.h 2.28 lays it out (struct ncclConfig_v22800; the same in 2.28.3 and 2.28.9). NCCL
# copies min(size, its own sizeof) bytes and resets the fields newer than `version`, so an older or a
# newer libnccl reads this one correctly too.
NCCL_CONFIG_MAGIC = 0xCAFEBEEF
NCCL_CONFIG_UNDEF_INT = -2 ** 31  # INT_MIN
NCCL_SPLIT_NOCOLOR = -1


class ncclConfig_t(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("blocking", ctypes.c_int), ("cgaClusterSize", ctypes.c_int), ("minCTAs", ctypes.c_int),
                ("maxCTAs", ctypes.c_int), ("netName", ctypes.c_char_p), ("splitShare", ctypes.c_int),
                ("trafficClass", ctypes.c_int), ("commName", ctypes.c_char_p), ("collnetEnable", ctypes.c_int),
                ("CTAPolicy", ctypes.c_int), ("shrinkShare", ctypes.c_int), ("nvlsCTAs", ctypes.c_int),
                ("nChannelsPerNetPeer", ctypes.c_int), ("nvlinkCentricSched", ctypes.c_int)]


def make_config(version: int, **fields) -> ncclConfig_t:
    """What NCCL_CONFIG_INITIALIZER makes (size, magic, version, every other int INT_MIN and every pointer
    NULL), with `version` the loaded library's ncclGetVersion (= NCCL_VERSION(major, minor, patch)) and
    `fields` set on top, e.g. blocking=0."""
    config = ncclConfig_t()
    config.size = ctypes.sizeof(ncclConfig_t)
    config.magic = NCCL_CONFIG_MAGIC
    config.version = version
    for name, ctype in ncclConfig_t._fields_[3:]:
        if ctype is ctypes.c_int:
            setattr(config, name, NCCL_CONFIG_UNDEF_INT)
        else:
            setattr(config, name, None)
    for name, value in fields.items():
        if name not in {n for n, _ in ncclConfig_t._fields_[3:]}:
            raise ValueError(f"ncclConfig_t has no settable field {name!r}")
        setattr(config, name, value)
    return config


NCCL_SUM = 0
# name: (ncclDataType_t, element size)
DTYPES = {"float32": (7, 4), "float16": (6, 2), "bfloat16": (9, 2)}


@dataclass
class Function:
    name: str
    restype: Any
    argtypes: List[Any]


class NcclError(RuntimeError):
    pass


class NcclLoadError(NcclError):
    pass


class CudaError(RuntimeError):
    pass


def nccl_error_message(function: str, code: int, text: str, last_error: str = "") -> str:
    msg = f"{function} failed: {text} (ncclResult_t {code})"
    if last_error:
        msg += f"; ncclGetLastError: {last_error}"
    return msg


def cuda_error_message(function: str, code: int, text: str) -> str:
    return f"{function} failed: {text} (cudaError_t {code})"


def decode_nccl_version(code: int) -> str:
    # NCCL_VERSION(X,Y,Z): X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9.
    if code >= 10000:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


class NCCLLibrary:
    """The pynccl scheme: one CDLL per path, every pointer fetched by getattr when built, cached per path."""

    exported_functions = [
        Function("ncclGetErrorString", ctypes.c_char_p, [ncclResult_t]),
        Function("ncclGetLastError", ctypes.c_char_p, [ncclComm_t]),
        Function("ncclGetVersion", ncclResult_t, [ctypes.POINTER(ctypes.c_int)]),
        Function("ncclGetUniqueId", ncclResult_t, [ctypes.POINTER(ncclUniqueId)]),
        # ncclComm_t is a pointer, so ncclCommInitRank takes a pointer to a pointer; the id by value.
        Function("ncclCommInitRank", ncclResult_t,
                 [ctypes.POINTER(ncclComm_t), ctypes.c_int, ncclUniqueId, ctypes.c_int]),
        Function("ncclCommCount", ncclResult_t, [ncclComm_t, ctypes.POINTER(ctypes.c_int)]),
        Function("ncclCommUserRank", ncclResult_t, [ncclComm_t, ctypes.POINTER(ctypes.c_int)]),
        Function("ncclCommCuDevice", ncclResult_t, [ncclComm_t, ctypes.POINTER(ctypes.c_int)]),
        Function("ncclAllReduce", ncclResult_t,
                 [buffer_type, buffer_type, ctypes.c_size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                  cudaStream_t]),
        Function("ncclGroupStart", ncclResult_t, []),
        Function("ncclGroupEnd", ncclResult_t, []),
        Function("ncclCommDestroy", ncclResult_t, [ncclComm_t]),
        Function("ncclCommAbort", ncclResult_t, [ncclComm_t]),
        Function("ncclCommGetAsyncError", ncclResult_t, [ncclComm_t, ctypes.POINTER(ncclResult_t)]),
        Function("ncclCommInitRankConfig", ncclResult_t,
                 [ctypes.POINTER(ncclComm_t), ctypes.c_int, ncclUniqueId, ctypes.c_int, ctypes.POINTER(ncclConfig_t)]),
        Function("ncclCommSplit", ncclResult_t,
                 [ncclComm_t, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ncclComm_t), ctypes.POINTER(ncclConfig_t)]),
    ]
    # 2.13+ (last error, async error), 2.14+ (config), 2.18+ (split): only the launched mode's scenarios use them
    optional_functions = {"ncclGetLastError", "ncclCommGetAsyncError", "ncclCommInitRankConfig", "ncclCommSplit"}

    path_to_library_cache: Dict[str, Any] = {}
    path_to_dict_mapping: Dict[str, Dict[str, Any]] = {}

    def __init__(self, so_file: str):
        self.so_file = so_file
        if so_file not in NCCLLibrary.path_to_library_cache:
            try:
                NCCLLibrary.path_to_library_cache[so_file] = ctypes.CDLL(so_file, mode=os.RTLD_LOCAL)
            except OSError as e:
                raise NcclLoadError(f"cannot load the NCCL library {so_file!r}: {e} (set --nccl, "
                                    "SGLANG_NCCL_SO_PATH or VLLM_NCCL_SO_PATH to its path)") from e
        self.lib = NCCLLibrary.path_to_library_cache[so_file]
        if so_file not in NCCLLibrary.path_to_dict_mapping:
            funcs: Dict[str, Any] = {}
            for func in NCCLLibrary.exported_functions:
                try:
                    f = getattr(self.lib, func.name)
                except AttributeError as e:
                    if func.name in NCCLLibrary.optional_functions:
                        continue
                    raise NcclLoadError(f"{so_file!r} does not define {func.name}") from e
                f.restype = func.restype
                f.argtypes = func.argtypes
                funcs[func.name] = f
            NCCLLibrary.path_to_dict_mapping[so_file] = funcs
        self._funcs = NCCLLibrary.path_to_dict_mapping[so_file]

    def ncclGetErrorString(self, result: int) -> str:
        text = self._funcs["ncclGetErrorString"](result)
        return text.decode("utf-8", "replace") if text else "(null)"

    def _last_error(self, comm=None) -> str:
        f = self._funcs.get("ncclGetLastError")
        if f is None:
            return ""
        text = f(comm)
        return text.decode("utf-8", "replace").strip() if text else ""

    def _check(self, name: str, result: int, comm=None) -> None:
        if result != 0:
            raise NcclError(nccl_error_message(name, result, self.ncclGetErrorString(result),
                                               self._last_error(comm)))

    def ncclGetVersion(self) -> int:
        version = ctypes.c_int()
        self._check("ncclGetVersion", self._funcs["ncclGetVersion"](ctypes.byref(version)))
        return version.value

    def ncclGetUniqueId(self) -> ncclUniqueId:
        unique_id = ncclUniqueId()
        self._check("ncclGetUniqueId", self._funcs["ncclGetUniqueId"](ctypes.byref(unique_id)))
        return unique_id

    def ncclCommInitRank(self, world_size: int, unique_id: ncclUniqueId, rank: int) -> ncclComm_t:
        comm = ncclComm_t()
        self._check("ncclCommInitRank",
                    self._funcs["ncclCommInitRank"](ctypes.byref(comm), world_size, unique_id, rank))
        return comm

    def _comm_int(self, name: str, comm) -> int:
        value = ctypes.c_int()
        self._check(name, self._funcs[name](comm, ctypes.byref(value)), comm)
        return value.value

    def ncclCommCount(self, comm) -> int:
        return self._comm_int("ncclCommCount", comm)

    def ncclCommUserRank(self, comm) -> int:
        return self._comm_int("ncclCommUserRank", comm)

    def ncclCommCuDevice(self, comm) -> int:
        return self._comm_int("ncclCommCuDevice", comm)

    def ncclAllReduce(self, sendbuff, recvbuff, count: int, datatype: int, op: int, comm, stream) -> None:
        self._check("ncclAllReduce",
                    self._funcs["ncclAllReduce"](sendbuff, recvbuff, count, datatype, op, comm, stream), comm)

    def ncclGroupStart(self) -> None:
        self._check("ncclGroupStart", self._funcs["ncclGroupStart"]())

    def ncclGroupEnd(self) -> None:
        self._check("ncclGroupEnd", self._funcs["ncclGroupEnd"]())

    def ncclCommDestroy(self, comm) -> None:
        self._check("ncclCommDestroy", self._funcs["ncclCommDestroy"](comm))

    def ncclCommAbort(self, comm) -> None:
        self._check("ncclCommAbort", self._funcs["ncclCommAbort"](comm))

    def ncclCommDestroyNonBlocking(self, comm) -> int:
        """ncclCommDestroy of a non-blocking communicator: ncclSuccess or ncclInProgress."""
        return self._check_nb("ncclCommDestroy", self._funcs["ncclCommDestroy"](comm))

    def _optional(self, name: str):
        f = self._funcs.get(name)
        if f is None:
            raise NcclError(f"{self.so_file!r} does not define {name}")
        return f

    def _check_nb(self, name: str, result: int, comm=None) -> int:
        """A call on a non-blocking communicator: ncclSuccess or ncclInProgress come back, the rest raises."""
        if result not in (0, ncclInProgress):
            self._check(name, result, comm)
        return result

    def ncclCommInitRankConfig(self, world_size: int, unique_id: ncclUniqueId, rank: int, config: ncclConfig_t):
        """(communicator, ncclSuccess or ncclInProgress); other results raise."""
        comm = ncclComm_t()
        code = self._optional("ncclCommInitRankConfig")(ctypes.byref(comm), world_size, unique_id, rank,
                                                         ctypes.byref(config))
        return comm, self._check_nb("ncclCommInitRankConfig", code)

    def ncclCommSplit(self, comm, color: int, key: int, config: Optional[ncclConfig_t] = None):
        """The child communicator (None for NCCL_SPLIT_NOCOLOR); config None: the parent's."""
        child = ncclComm_t()
        self._check("ncclCommSplit", self._optional("ncclCommSplit")(
            comm, color, key, ctypes.byref(child), ctypes.byref(config) if config is not None else None), comm)
        return child

    def ncclAllReduceNonBlocking(self, sendbuff, recvbuff, count: int, datatype: int, op: int, comm, stream) -> int:
        """ncclAllReduce on a non-blocking communicator: returns ncclSuccess or ncclInProgress."""
        return self._check_nb("ncclAllReduce",
                              self._funcs["ncclAllReduce"](sendbuff, recvbuff, count, datatype, op, comm, stream), comm)

    def ncclCommGetAsyncError(self, comm) -> int:
        """The communicator's asynchronous error (ncclResult_t); the call's own failure raises."""
        f = self._funcs.get("ncclCommGetAsyncError")
        if f is None:
            raise NcclError(f"{self.so_file!r} does not define ncclCommGetAsyncError")
        value = ncclResult_t()
        self._check("ncclCommGetAsyncError", f(comm, ctypes.byref(value)), comm)
        return value.value


# ==== where a pointer leads (diagnostics) ===========================================================
class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def defining_file(func_ptr) -> str:
    """The file a function pointer lies in (dladdr), e.g. libnccl.so.2 or the plugin's .so."""
    try:
        try:
            dladdr = ctypes.CDLL(None).dladdr
        except AttributeError:
            dladdr = ctypes.CDLL("libdl.so.2").dladdr
        dladdr.restype = ctypes.c_int
        dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        info = _DlInfo()
        addr = ctypes.cast(func_ptr, ctypes.c_void_p).value
        if not addr or not dladdr(addr, ctypes.byref(info)) or not info.dli_fname:
            return "?"
        return os.path.realpath(info.dli_fname.decode())
    except Exception:  # noqa: BLE001 - diagnostics only
        return "?"


# ==== CUDA runtime through ctypes ===================================================================
CUDA_MEMCPY_H2D, CUDA_MEMCPY_D2H = 1, 2
CUDA_STREAM_NON_BLOCKING = 1
CUDA_ERROR_NOT_READY = 600
CAPTURE_MODES = {"global": 0, "thread_local": 1, "relaxed": 2}


def cudart_candidates(explicit: Optional[str] = None, environ=None) -> List[str]:
    """Names and paths to try for libcudart, in order."""
    if explicit:
        return [explicit]
    environ = os.environ if environ is None else environ
    names = ["libcudart.so.13", "libcudart.so.12", "libcudart.so"]
    dirs = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if environ.get(var):
            dirs += [os.path.join(environ[var], "lib64"), os.path.join(environ[var], "lib")]
    dirs += ["/usr/local/cuda/lib64", "/usr/local/cuda/lib"] + sorted(glob.glob("/usr/local/cuda/targets/*/lib"))
    site_dirs = [p for p in sys.path if p and os.path.isdir(p)]
    try:
        site_dirs += site.getsitepackages() + [site.getusersitepackages()]
    except Exception:  # noqa: BLE001 - virtualenvs without the site helpers
        pass
    for d in dict.fromkeys(site_dirs):
        # torch's CUDA runtime wheels: nvidia/cuda_runtime/lib (CUDA 12) or nvidia/cu13/lib (CUDA 13).
        dirs += [os.path.join(d, "nvidia", "cuda_runtime", "lib")] + sorted(glob.glob(os.path.join(d, "nvidia", "cu1*", "lib")))
    paths = []
    for d in dict.fromkeys(dirs):
        paths += sorted(glob.glob(os.path.join(d, "libcudart.so*")), reverse=True)
    return list(dict.fromkeys(names + paths))


class CudaRuntime:
    functions = [
        Function("cudaGetErrorString", ctypes.c_char_p, [ctypes.c_int]),
        Function("cudaGetDeviceCount", ctypes.c_int, [ctypes.POINTER(ctypes.c_int)]),
        Function("cudaRuntimeGetVersion", ctypes.c_int, [ctypes.POINTER(ctypes.c_int)]),
        Function("cudaDriverGetVersion", ctypes.c_int, [ctypes.POINTER(ctypes.c_int)]),
        Function("cudaSetDevice", ctypes.c_int, [ctypes.c_int]),
        Function("cudaDeviceSynchronize", ctypes.c_int, []),
        Function("cudaMalloc", ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]),
        Function("cudaFree", ctypes.c_int, [ctypes.c_void_p]),
        Function("cudaMemcpy", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]),
        Function("cudaMemset", ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]),
        Function("cudaStreamCreateWithFlags", ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]),
        Function("cudaStreamDestroy", ctypes.c_int, [ctypes.c_void_p]),
        Function("cudaStreamSynchronize", ctypes.c_int, [ctypes.c_void_p]),
        Function("cudaStreamQuery", ctypes.c_int, [ctypes.c_void_p]),
        Function("cudaStreamBeginCapture", ctypes.c_int, [ctypes.c_void_p, ctypes.c_int]),
        Function("cudaStreamEndCapture", ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]),
        Function("cudaGraphInstantiateWithFlags", ctypes.c_int,
                 [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_ulonglong]),
        Function("cudaGraphLaunch", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
        Function("cudaGraphExecDestroy", ctypes.c_int, [ctypes.c_void_p]),
        Function("cudaGraphDestroy", ctypes.c_int, [ctypes.c_void_p]),
    ]

    def __init__(self, explicit: Optional[str] = None):
        tried = []
        self.lib = None
        for candidate in cudart_candidates(explicit):
            try:
                self.lib = ctypes.CDLL(candidate, mode=os.RTLD_LOCAL)
                self.path = candidate
                break
            except OSError as e:
                tried.append(f"{candidate}: {e}")
        if self.lib is None:
            raise CudaError("no CUDA runtime library found (use --cudart PATH); tried: " + "; ".join(tried))
        self._f = {}
        for func in CudaRuntime.functions:
            try:
                f = getattr(self.lib, func.name)
            except AttributeError as e:
                raise CudaError(f"{self.path} does not define {func.name}") from e
            f.restype, f.argtypes = func.restype, func.argtypes
            self._f[func.name] = f
        self.loaded_from = defining_file(self._f["cudaMalloc"])

    def error_string(self, code: int) -> str:
        text = self._f["cudaGetErrorString"](code)
        return text.decode("utf-8", "replace") if text else "(null)"

    def _call(self, name: str, *args) -> None:
        code = self._f[name](*args)
        if code != 0:
            raise CudaError(cuda_error_message(name, code, self.error_string(code)))

    def _int(self, name: str) -> int:
        value = ctypes.c_int()
        self._call(name, ctypes.byref(value))
        return value.value

    def device_count(self) -> int:
        return self._int("cudaGetDeviceCount")

    def versions(self):
        return self._int("cudaRuntimeGetVersion"), self._int("cudaDriverGetVersion")

    def set_device(self, device: int) -> None:
        self._call("cudaSetDevice", device)

    def synchronize(self) -> None:
        self._call("cudaDeviceSynchronize")

    def malloc(self, nbytes: int) -> int:
        ptr = ctypes.c_void_p()
        self._call("cudaMalloc", ctypes.byref(ptr), max(nbytes, 1))
        return ptr.value

    def free(self, ptr: int) -> None:
        self._call("cudaFree", ptr)

    def upload(self, dst: int, data: bytes) -> None:
        src = (ctypes.c_char * len(data)).from_buffer_copy(data)
        self._call("cudaMemcpy", dst, src, len(data), CUDA_MEMCPY_H2D)

    def download(self, src: int, nbytes: int) -> bytes:
        dst = (ctypes.c_char * nbytes)()
        self._call("cudaMemcpy", dst, src, nbytes, CUDA_MEMCPY_D2H)
        return dst.raw

    def memset(self, ptr: int, value: int, nbytes: int) -> None:
        self._call("cudaMemset", ptr, value, nbytes)

    def stream_create(self) -> int:
        stream = ctypes.c_void_p()
        self._call("cudaStreamCreateWithFlags", ctypes.byref(stream), CUDA_STREAM_NON_BLOCKING)
        return stream.value

    def stream_destroy(self, stream: int) -> None:
        self._call("cudaStreamDestroy", stream)

    def stream_synchronize(self, stream) -> None:
        self._call("cudaStreamSynchronize", stream)

    def stream_query(self, stream) -> bool:
        """True when all the stream's work is done, False while some is pending."""
        code = self._f["cudaStreamQuery"](stream)
        if code == CUDA_ERROR_NOT_READY:
            return False
        if code != 0:
            raise CudaError(cuda_error_message("cudaStreamQuery", code, self.error_string(code)))
        return True

    def begin_capture(self, stream: int, mode: int) -> None:
        self._call("cudaStreamBeginCapture", stream, mode)

    def end_capture(self, stream: int) -> int:
        graph = ctypes.c_void_p()
        self._call("cudaStreamEndCapture", stream, ctypes.byref(graph))
        return graph.value

    def graph_instantiate(self, graph: int) -> int:
        exec_ = ctypes.c_void_p()
        self._call("cudaGraphInstantiateWithFlags", ctypes.byref(exec_), graph, 0)
        return exec_.value

    def graph_launch(self, exec_: int, stream: int) -> None:
        self._call("cudaGraphLaunch", exec_, stream)

    def graph_exec_destroy(self, exec_: int) -> None:
        self._call("cudaGraphExecDestroy", exec_)

    def graph_destroy(self, graph: int) -> None:
        self._call("cudaGraphDestroy", graph)


# ==== host-side values: bf16/fp16 conversions and the expected sums =================================
def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def float_to_bf16_bits(x: float) -> int:
    """float -> bfloat16 bits, round to nearest even (via float32; exact for the values used here)."""
    bits = f32_bits(x)
    if (bits & 0x7F800000) == 0x7F800000 and (bits & 0x007FFFFF):
        return ((bits >> 16) | 0x0040) & 0xFFFF  # quiet NaN, sign kept
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def bf16_bits_to_float(h: int) -> float:
    return struct.unpack("<f", struct.pack("<I", (h & 0xFFFF) << 16))[0]


def float_to_fp16_bits(x: float) -> int:
    return struct.unpack("<H", struct.pack("<e", x))[0]


def fp16_bits_to_float(h: int) -> float:
    return struct.unpack("<e", struct.pack("<H", h & 0xFFFF))[0]


def encode(values, dtype: str) -> bytes:
    values = list(values)
    n = len(values)
    if dtype == "float32":
        return struct.pack(f"<{n}f", *values)
    if dtype == "float16":
        return struct.pack(f"<{n}e", *values)
    if dtype == "bfloat16":
        return struct.pack(f"<{n}H", *(float_to_bf16_bits(v) for v in values))
    raise ValueError(f"unknown dtype {dtype}")


def decode(data: bytes, dtype: str) -> List[float]:
    esize = DTYPES[dtype][1]
    n = len(data) // esize
    if dtype == "float32":
        return list(struct.unpack(f"<{n}f", data))
    if dtype == "float16":
        return list(struct.unpack(f"<{n}e", data))
    return [bf16_bits_to_float(h) for h in struct.unpack(f"<{n}H", data)]


PERIOD = 17


def pattern_value(i: int, rank: int, salt: int) -> int:
    """What rank `rank` contributes at element i: an integer in [-8, 8], periodic in i (period 17)."""
    return ((i * 7 + rank * 3 + salt) % PERIOD) - 8


def _tile(period: bytes, count: int, esize: int) -> bytes:
    return (period * (count // PERIOD + 1))[: count * esize]


def contribution_bytes(count: int, dtype: str, rank: int, salt: int) -> bytes:
    return _tile(encode((pattern_value(i, rank, salt) for i in range(PERIOD)), dtype), count, DTYPES[dtype][1])


def expected_sum_values(nranks: int, salt: int) -> List[int]:
    return [sum(pattern_value(i, r, salt) for r in range(nranks)) for i in range(PERIOD)]


def expected_bytes(count: int, dtype: str, nranks: int, salt: int) -> bytes:
    return _tile(encode(expected_sum_values(nranks, salt), dtype), count, DTYPES[dtype][1])


KIB, MIB = 1024, 1024 * 1024
ODD_COUNTS = [1, 3, 17, 1001, 4097, 65537]
BYTE_SIZES = [1 * KIB, 64 * KIB, 256 * KIB, 1 * MIB, 4 * MIB, 8 * MIB]
QUICK_ODD_COUNTS = [1, 3, 17, 1001, 4097]
QUICK_BYTE_SIZES = [64 * KIB, 1 * MIB]


def counts_for(dtype: str, quick: bool, max_bytes: int = 0) -> List[int]:
    esize = DTYPES[dtype][1]
    odd, sizes = (QUICK_ODD_COUNTS, QUICK_BYTE_SIZES) if quick else (ODD_COUNTS, BYTE_SIZES)
    counts = sorted(set(odd) | {b // esize for b in sizes})
    return [c for c in counts if c == 1 or not max_bytes or c * esize <= max_bytes]


def graph_counts_for(dtype: str, quick: bool, max_bytes: int = 0) -> List[int]:
    counts = counts_for(dtype, quick, max_bytes)
    return counts if not quick else sorted({c for c in counts if c in (1, 1001, 4097)} | {max(counts)})


def mismatch_report(got: bytes, want: bytes, dtype: str):
    """(number of elements whose values differ, first such index, got value, want value).
    +0 and -0 count as equal; NaN (the unwritten-output sentinel) equals nothing."""
    g, w = decode(got, dtype), decode(want, dtype)
    if len(g) != len(w):
        return max(len(g), len(w)), min(len(g), len(w)), None, None
    bad = [i for i in range(len(w)) if not (g[i] == w[i])]
    if not bad:
        return 0, None, None, None
    return len(bad), bad[0], g[bad[0]], w[bad[0]]


def summary_line(checks: int, wrong: int) -> str:
    return f"{PROG}: {checks} checks, {wrong} wrong"


# ==== arguments =====================================================================================
def _positive(minimum: int, maximum: Optional[int] = None):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            bounds = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
            raise argparse.ArgumentTypeError(f"must be {bounds}: {value}")
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="pynccl-style (ctypes, cached pointers) NCCL all-reduce client")
    p.add_argument("--nccl", metavar="PATH", help="NCCL library to load (like VLLM_NCCL_SO_PATH; default: "
                   "$SGLANG_NCCL_SO_PATH, $VLLM_NCCL_SO_PATH, libnccl.so.2)")
    p.add_argument("--cudart", metavar="PATH", help="CUDA runtime library (default: searched)")
    p.add_argument("--nranks", type=_positive(1, MAX_RANKS), default=1,
                   help="ranks, one forked process and one GPU each (default 1, GPU 0)")
    p.add_argument("--graph-replays", type=_positive(0), default=5, help="replays per CUDA graph (0: no graphs; default 5)")
    p.add_argument("--graph-calls", type=_positive(1), default=4, help="all-reduces captured per graph (default 4)")
    p.add_argument("--capture-mode", choices=sorted(CAPTURE_MODES), default="thread_local",
                   help="cudaStreamBeginCapture mode (default thread_local)")
    p.add_argument("--quick", action="store_true", help="fewer sizes")
    p.add_argument("--max-bytes", type=_positive(0), default=0, metavar="N",
                   help="leave out messages larger than N bytes (0: no limit; 1 element always runs)")
    p.add_argument("--timeout", type=_positive(1), default=900, help="seconds before a hung run is ended (default 900)")
    p.add_argument("--verbose", "-v", action="store_true", help="print every check")
    p.add_argument("--self-test", action="store_true", help="host-side checks only, no CUDA or NCCL")
    # One rank of N started by a launcher (tests/multiproc/launch_ranks.py): every rank may share one GPU.
    g = p.add_argument_group("one rank of N under a launcher (RANK, WORLD_SIZE, SYMMEM_TEST_RENDEZVOUS_DIR)")
    g.add_argument("--launched", action="store_true",
                   help="run as rank $RANK of $WORLD_SIZE; rank 0's unique ids reach the others through files in "
                        "$SYMMEM_TEST_RENDEZVOUS_DIR")
    g.add_argument("--device", type=_positive(0), metavar="N",
                   help="the GPU to use (default 0: with --launched every rank on GPU 0)")
    g.add_argument("--rendezvous-timeout", type=_positive(1), default=300, metavar="S",
                   help="seconds a rank waits for rank 0's unique id (default 300)")
    g.add_argument("--expect-path", choices=EXPECT_PATHS, default="any",
                   help="the path the caller expects; only printed: the caller checks it in each rank's log "
                        "(NCCL_DEBUG=INFO: 'symmetric path on' / 'all-reduces stay on NCCL')")
    g.add_argument("--abort-after-first", action="store_true",
                   help="after one checked all-reduce, rank 0 calls ncclCommAbort while the other ranks wait in "
                        "an all-reduce, and exits 0; the others must see an error or finish")
    g.add_argument("--wait-async-error", type=_positive(0), default=0, metavar="S",
                   help="after a failure, poll ncclCommGetAsyncError up to S seconds and print what it returns "
                        "(0: not at all; with --abort-after-first: how long the others wait, default 120)")
    g.add_argument("--world-comm", action="store_true",
                   help="first make a communicator that issues no all-reduce (an inference server's world "
                        "group), then run the checks on a second one")
    g.add_argument("--stall-timeout", type=_positive(1), default=300, metavar="S",
                   help="with --launched: an all-reduce not finished after S seconds is an error (default 300)")
    g.add_argument("--stats-check", metavar="SYMMEM_STAT",
                   help="after the calls, rank 0 reads every rank's live statistics with this symmem-stat (in "
                        "$SYMMEM_STATS_DIR) and checks each rank's counts and GPU executions exactly")
    g.add_argument("--check-captured", metavar="SYMMEM_STAT",
                   help="after the calls, rank 0 runs this symmem-stat --check (in $SYMMEM_STATS_DIR) and expects "
                        "exit 0 (every captured all-reduce on the symmetric path), or 3 with --capture-first")
    g.add_argument("--capture-first", action="store_true",
                   help="capture and replay one graph of all-reduces before the communicator's first eager one "
                        "(its captured calls stay on NCCL: the communicator is not set up yet)")
    g.add_argument("--keep-calling", type=_positive(0), default=0, metavar="S",
                   help="with --launched: after the first communicator is up, keep making checked all-reduces "
                        "for about S seconds (rank 0's clock, agreed through an all-reduce)")
    g.add_argument("--delay-first", type=_rank_seconds, metavar="RANK:S",
                   help="with --launched: rank RANK sleeps S seconds once its first communicator is up, before "
                        "its first all-reduce (its peers meanwhile wait in the plugin's agreement)")
    g.add_argument("--scenario", choices=SCENARIOS, metavar="NAME",
                   help="with --launched: run one reliability scenario instead of the checks above: "
                        + ", ".join(SCENARIOS) + "; prints 'scenario NAME: ... PASS|FAIL (...)'")
    g.add_argument("--comms", type=_positive(1), metavar="N",
                   help=f"--scenario many-comms: communicators made one after the other (default {DEFAULT_COMMS})")
    g.add_argument("--stall-after", type=_positive(1), metavar="K",
                   help="--scenario timeout: the last rank stops calling after K checked all-reduces and sleeps "
                        f"past the others' bound (default {DEFAULT_STALL_AFTER})")
    return p


def _rank_seconds(text: str):
    """'R:S' -> (R, S), both non-negative integers."""
    rank, sep, seconds = text.partition(":")
    if not sep or not rank.isdigit() or not seconds.isdigit():
        raise argparse.ArgumentTypeError(f"expected RANK:SECONDS (non-negative integers), got {text!r}")
    return int(rank), int(seconds)


def _env_int(parser, environ, name: str) -> int:
    text = environ.get(name, "")
    try:
        return int(text, 10)
    except ValueError:
        parser.error(f"--launched needs {name} set to an integer (got {text!r}); start it with "
                     "tests/multiproc/launch_ranks.py")
        raise  # not reached: parser.error exits


def parse_args(argv=None, environ=None) -> argparse.Namespace:
    environ = os.environ if environ is None else environ
    parser = build_parser()
    args = parser.parse_args(argv)
    args.rank, args.world, args.rendezvous = 0, args.nranks, ""
    if args.launched and not args.self_test:
        if args.nranks != 1:
            parser.error("--launched and --nranks do not go together: the launcher starts the ranks")
        args.rank, args.world = _env_int(parser, environ, "RANK"), _env_int(parser, environ, "WORLD_SIZE")
        if not 1 <= args.world <= MAX_RANKS:
            parser.error(f"WORLD_SIZE must be in [1, {MAX_RANKS}]: {args.world}")
        if not 0 <= args.rank < args.world:
            parser.error(f"RANK must be in [0, {args.world - 1}]: {args.rank}")
        args.rendezvous = environ.get("SYMMEM_TEST_RENDEZVOUS_DIR", "")
        if args.world > 1 and not args.rendezvous:
            parser.error("--launched with WORLD_SIZE > 1 needs SYMMEM_TEST_RENDEZVOUS_DIR (a folder every rank sees)")
        if args.device is None:
            args.device = 0
    else:
        for flag, given in (("--abort-after-first", args.abort_after_first), ("--keep-calling", args.keep_calling),
                            ("--delay-first", args.delay_first)):
            if given:
                parser.error(f"{flag} needs --launched")
        if args.device is not None and args.nranks > 1:
            parser.error("--device picks the GPU of one rank: not with --nranks > 1 (rank r uses GPU r)")
    if args.abort_after_first and args.world < 2:
        parser.error("--abort-after-first needs WORLD_SIZE >= 2")
    if args.world_comm and not args.launched and not args.self_test:
        parser.error("--world-comm needs --launched (start the ranks with tests/multiproc/launch_ranks.py)")
    if args.scenario and not args.self_test:
        if not args.launched:
            parser.error("--scenario needs --launched (start the ranks with tests/multiproc/launch_ranks.py)")
        if args.abort_after_first or args.keep_calling:
            parser.error("--scenario does not go with --abort-after-first or --keep-calling")
        if args.scenario == "timeout" and args.world < 2:
            parser.error("--scenario timeout needs WORLD_SIZE >= 2 (the last rank stalls, the others must notice)")
    for flag, value, scenario in (("--comms", args.comms, "many-comms"), ("--stall-after", args.stall_after, "timeout")):
        if value is not None and args.scenario != scenario and not args.self_test:
            parser.error(f"{flag} goes with --scenario {scenario}")
    if args.scenario == "timeout" and not args.self_test:
        bound = args.stall_timeout + (args.wait_async_error or STALL_ASYNC_WAIT_S)
        need = bound + min(STALL_MARGIN_S, bound) + 30
        if args.timeout < need:
            parser.error(f"--scenario timeout: --timeout {args.timeout} must be at least {need} (the last rank sleeps "
                         f"past the others' bound of --stall-timeout + --wait-async-error (or {STALL_ASYNC_WAIT_S}) = "
                         f"{bound} s)")
    if args.comms is None:
        args.comms = DEFAULT_COMMS
    if args.stall_after is None:
        args.stall_after = DEFAULT_STALL_AFTER
    if args.nccl:
        args.nccl_path, args.nccl_source = args.nccl, "--nccl"
    elif environ.get("SGLANG_NCCL_SO_PATH"):
        args.nccl_path, args.nccl_source = environ["SGLANG_NCCL_SO_PATH"], "SGLANG_NCCL_SO_PATH"
    elif environ.get("VLLM_NCCL_SO_PATH"):
        args.nccl_path, args.nccl_source = environ["VLLM_NCCL_SO_PATH"], "VLLM_NCCL_SO_PATH"
    else:
        args.nccl_path, args.nccl_source = "libnccl.so.2", "default"
    return args


# ==== the parent/child pipes (unique ids down, results up) ==========================================
_FRAME = struct.Struct("<cI")


def write_frame(fd: int, tag: bytes, payload: bytes) -> None:
    data = _FRAME.pack(tag, len(payload)) + payload
    while data:
        data = data[os.write(fd, data):]


def read_exact(fd: int, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = os.read(fd, n - len(out))
        if not chunk:
            raise EOFError("pipe closed")
        out += chunk
    return out


def read_frame(fd: int):
    tag, length = _FRAME.unpack(read_exact(fd, _FRAME.size))
    return tag, read_exact(fd, length)


class FrameBuffer:
    """Parent side: complete frames out of what non-blocking reads have delivered so far."""

    def __init__(self):
        self.data = b""

    def feed(self, chunk: bytes):
        self.data += chunk
        frames = []
        while len(self.data) >= _FRAME.size:
            tag, length = _FRAME.unpack(self.data[: _FRAME.size])
            if len(self.data) < _FRAME.size + length:
                break
            frames.append((tag, self.data[_FRAME.size: _FRAME.size + length]))
            self.data = self.data[_FRAME.size + length:]
        return frames


class Channel:
    """A rank's end: ids from rank 0 go up and come back down to the other ranks."""

    def __init__(self, up_fd: int, down_fd: int):
        self.up_fd, self.down_fd = up_fd, down_fd

    def publish_id(self, uid: ncclUniqueId) -> None:
        write_frame(self.up_fd, b"I", bytes(uid))

    def receive_id(self) -> ncclUniqueId:
        tag, payload = read_frame(self.down_fd)
        if tag != b"I" or len(payload) != NCCL_UNIQUE_ID_BYTES:
            raise RuntimeError(f"unexpected message {tag!r} ({len(payload)} bytes) instead of a unique id")
        return ncclUniqueId.from_buffer_copy(payload)

    def send_result(self, result: dict) -> None:
        write_frame(self.up_fd, b"R", json.dumps(result).encode())


class FileChannel:
    """Launched ranks: rank 0 writes each unique id to <dir>/uid-<k> (a temporary file, then a rename, so
    that no rank reads half an id); the others poll for it, up to `timeout` seconds. k counts the ids."""

    def __init__(self, directory: str, rank: int, timeout: float):
        self.directory, self.rank, self.timeout = directory, rank, timeout
        self.seq = 0

    def _path(self, name: Optional[str] = None) -> str:
        if name is not None:  # a name of the caller's (one per communicator of a loop), not counted
            return os.path.join(self.directory, f"uid-{name}")
        self.seq += 1
        return os.path.join(self.directory, f"uid-{self.seq}")

    def publish_id(self, uid: ncclUniqueId, name: Optional[str] = None) -> None:
        path = self._path(name)
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(bytes(uid))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def receive_id(self, name: Optional[str] = None) -> ncclUniqueId:
        path = self._path(name)
        deadline = time.monotonic() + self.timeout
        delay = 0.001
        while True:
            try:
                with open(path, "rb") as f:
                    data = f.read()
                break
            except FileNotFoundError:
                if time.monotonic() >= deadline:
                    raise RuntimeError(f"no unique id from rank 0 in {path} after {self.timeout:g} s "
                                       "(rank 0 failed or is slow; see its log)") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        if len(data) != NCCL_UNIQUE_ID_BYTES:
            raise RuntimeError(f"{path} holds {len(data)} bytes, not a {NCCL_UNIQUE_ID_BYTES}-byte unique id")
        return ncclUniqueId.from_buffer_copy(data)

    def send_result(self, result: dict) -> None:
        pass  # each launched rank prints its own result


# What builds the wrappers; the self-test's dry run puts host-only stand-ins here.
HOOKS = {"nccl": NCCLLibrary, "cuda": CudaRuntime}


# ==== one rank ======================================================================================
class Rank:
    def __init__(self, rank: int, nranks: int, args, channel, cuda: Optional[CudaRuntime],
                 device: Optional[int] = None, launched: bool = False):
        self.rank, self.nranks, self.args, self.channel = rank, nranks, args, channel
        self.cuda = cuda
        self.device = rank if device is None else device
        self.launched = launched
        self.checks = 0
        self.wrong = 0
        self.errors: List[str] = []
        self.wrong_lines = 0
        self.lib: Optional[NCCLLibrary] = None
        self.stream = None
        self.prefix = f"{PROG}[rank {rank}]" if nranks > 1 else PROG

    def say(self, text: str) -> None:
        print(f"{self.prefix}: {text}", flush=True)

    def expect(self, ok: bool, what: str) -> bool:
        self.checks += 1
        if not ok:
            self.wrong += 1
            self.say(f"WRONG: {what}")
        elif self.args.verbose:
            self.say(f"ok: {what}")
        return ok

    def compare(self, what: str, got: bytes, want: bytes, dtype: str) -> bool:
        self.checks += 1
        if got == want:
            if self.args.verbose:
                self.say(f"ok: {what}")
            return True
        nbad, index, got_v, want_v = mismatch_report(got, want, dtype)
        if nbad == 0:  # only the sign of a zero differs
            if self.args.verbose:
                self.say(f"ok: {what} (a zero's sign differs)")
            return True
        self.wrong += 1
        self.wrong_lines += 1
        if self.wrong_lines <= 20:
            n = len(want) // DTYPES[dtype][1]
            self.say(f"WRONG: {what}: {nbad} of {n} elements differ, first at {index}: got {got_v!r}, want {want_v!r}")
        return False

    # -- ids and communicators --
    def exchange_id(self, lib: NCCLLibrary, name: Optional[str] = None) -> ncclUniqueId:
        """Rank 0 makes a unique id and hands it to the others; `name` (launched ranks only) names its file."""
        if self.rank == 0:
            uid = lib.ncclGetUniqueId()
            if self.channel:
                if name is None:
                    self.channel.publish_id(uid)
                else:
                    self.channel.publish_id(uid, name)
            return uid
        return self.channel.receive_id() if name is None else self.channel.receive_id(name)

    def new_comm(self, lib: NCCLLibrary, what: str, uid: Optional[ncclUniqueId] = None):
        if uid is None:
            uid = self.exchange_id(lib)
        comm = lib.ncclCommInitRank(self.nranks, uid, self.rank)
        self.expect(bool(comm.value), f"{what}: ncclCommInitRank returned a communicator")
        self.expect(lib.ncclCommCount(comm) == self.nranks, f"{what}: ncclCommCount == {self.nranks}")
        self.expect(lib.ncclCommUserRank(comm) == self.rank, f"{what}: ncclCommUserRank == {self.rank}")
        self.expect(lib.ncclCommCuDevice(comm) == self.device, f"{what}: ncclCommCuDevice == {self.device}")
        return comm

    # -- waiting for a stream --
    def wait(self, lib, comm, stream, what: str) -> None:
        """Forked and single ranks: cudaStreamSynchronize. Launched ranks poll the stream and the
        communicator's asynchronous error instead, so that a peer that died or aborted ends the wait
        (an error) rather than hanging it; so does --stall-timeout."""
        if not self.launched:
            self.cuda.stream_synchronize(stream)
            return
        deadline = time.monotonic() + self.args.stall_timeout
        delay = 0.0001
        while True:
            done = self.cuda.stream_query(stream)
            code = lib.ncclCommGetAsyncError(comm)
            if code not in (0, ncclInProgress):
                raise NcclError(nccl_error_message(f"{what}: ncclCommGetAsyncError", code, lib.ncclGetErrorString(code),
                                                   lib._last_error(comm)))
            if done:
                return
            if time.monotonic() >= deadline:
                raise NcclError(f"{what}: not finished after {self.args.stall_timeout} s (--stall-timeout)")
            time.sleep(delay)
            delay = min(delay * 2, 0.01)

    def report_async_error(self, lib, comm, seconds: float) -> int:
        """Polls ncclCommGetAsyncError up to `seconds` and prints what it returns; returns the last code."""
        deadline = time.monotonic() + seconds
        code = 0
        while True:
            try:
                code = lib.ncclCommGetAsyncError(comm)
            except NcclError as e:
                self.say(f"ncclCommGetAsyncError itself failed: {e}")
                return -1
            if code not in (0, ncclInProgress) or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        self.say(f"ncclCommGetAsyncError returned {code} ({lib.ncclGetErrorString(code)})"
                 + ("" if code not in (0, ncclInProgress) else f" for {seconds:g} s"))
        return code

    # -- one checked all-reduce, eager --
    def eager(self, lib, comm, dtype: str, count: int, inplace: bool, salt: int, stream, label: str,
              grouped: bool = False, member=None, nonblocking: bool = False) -> None:
        """member: (rank, ranks) in `comm` when it is not (self.rank, self.nranks), e.g. a split child.
        nonblocking: `comm` is non-blocking: the call may return ncclInProgress, then it is polled."""
        cuda = self.cuda
        me, ranks = member if member is not None else (self.rank, self.nranks)
        esize = DTYPES[dtype][1]
        nbytes = count * esize
        send = cuda.malloc(nbytes)
        recv = send if inplace else cuda.malloc(nbytes)
        try:
            mine = contribution_bytes(count, dtype, me, salt)
            cuda.upload(send, mine)
            if not inplace:
                cuda.memset(recv, 0xFF, nbytes)  # NaN in every float type: an unwritten output fails
            cuda.synchronize()
            if grouped:
                lib.ncclGroupStart()
                try:
                    lib.ncclAllReduce(send, recv, count, DTYPES[dtype][0], NCCL_SUM, comm, stream)
                finally:
                    lib.ncclGroupEnd()
            elif nonblocking:
                lib.ncclAllReduceNonBlocking(send, recv, count, DTYPES[dtype][0], NCCL_SUM, comm, stream)
                self.settle(lib, comm, f"{label} {dtype} count {count}: ncclAllReduce")
            else:
                lib.ncclAllReduce(send, recv, count, DTYPES[dtype][0], NCCL_SUM, comm, stream)
            self.wait(lib, comm, stream, f"{label} {dtype} count {count}")
            where = "in place" if inplace else "out of place"
            self.compare(f"{label} {dtype} count {count} {where}", cuda.download(recv, nbytes),
                         expected_bytes(count, dtype, ranks, salt), dtype)
            if not inplace:
                self.compare(f"{label} {dtype} count {count} out of place: input unchanged",
                             cuda.download(send, nbytes), mine, dtype)
        finally:
            cuda.free(send)
            if not inplace:
                cuda.free(recv)

    # -- graph_calls all-reduces captured in one graph, replayed with fresh inputs --
    def check_live_stats(self, lib, comm) -> None:
        """What symmem-stat shows of every rank while the job runs (docs/live-stats.md): each rank's
        process, its communicator, its calls by route, and its kernels' executions, which must equal
        its eager symmetric calls plus its captured ones times the replays (the host never sees a
        replay; the GPU counts each)."""
        args = self.args
        # A barrier: once this call completes on rank 0, every rank has issued (and counted) every
        # earlier call. Its own count and execution may still be on their way on the other ranks.
        self.eager(lib, comm, "float32", 1001, True, 3, self.stream, "before the statistics check")
        if self.rank == 0:
            try:
                self.read_live_stats(args)
            except Exception as e:  # noqa: BLE001 - a failed read fails the check, never the peers' wait
                self.expect(False, f"reading the live statistics: {e}")
        # Nobody ends its communicator before rank 0 has read.
        self.eager(lib, comm, "float32", 1001, True, 4, self.stream, "after the statistics check")

    def check_captured(self, lib, comm) -> None:
        """symmem-stat --check on the running job (docs/live-stats.md, "Checking a server"): exit 0 when
        every captured all-reduce took the symmetric path; with --capture-first, exit 3 and the graph
        captured before the communicator was set up named as the cause."""
        args = self.args
        self.eager(lib, comm, "float32", 1001, True, 3, self.stream, "before symmem-stat --check")
        if self.rank == 0:
            folder = os.environ.get("SYMMEM_STATS_DIR", "")
            want = 3 if args.capture_first else 0
            try:
                time.sleep(0.3)  # three of the plugin's copy periods
                run = subprocess.run([args.check_captured, "--check"] + (["--dir", folder] if folder else []),
                                     capture_output=True, text=True, timeout=60)
                for line in run.stdout.splitlines():
                    self.say(f"symmem-stat --check: {line}")
                self.expect(run.returncode == want,
                            f"symmem-stat --check exited {run.returncode}, expected {want}: {run.stderr.strip()}")
                if args.capture_first:
                    self.expect("captured before the communicator was set up" in run.stdout,
                                "symmem-stat --check does not name the graph captured before set-up")
            except Exception as e:  # noqa: BLE001 - a failed run fails the check, never the peers' wait
                self.expect(False, f"running symmem-stat --check: {e}")
        self.eager(lib, comm, "float32", 1001, True, 4, self.stream, "after symmem-stat --check")

    def read_live_stats(self, args) -> None:
        """Rank 0's part of check_live_stats: symmem-stat --once --json, every rank checked."""
        folder = os.environ.get("SYMMEM_STATS_DIR", "")
        # The plugin copies the kernels' counts into the file every 0.1 s: three periods, and every
        # rank's copy holds what its GPU has run.
        time.sleep(0.3)
        run = subprocess.run([args.stats_check, "--once", "--json"] + (["--dir", folder] if folder else []),
                             capture_output=True, text=True, timeout=60)
        if run.returncode != 0:
            raise RuntimeError(f"symmem-stat exited {run.returncode}: {run.stderr.strip()}")
        data = json.loads(run.stdout)
        symmetric_keys = ("one_shot_push", "one_shot_pull", "one_shot_staged", "one_shot_halves",
                          "two_shot_push", "two_shot_pull", "two_shot_staged", "two_shot_halves")
        seen = {}
        for process in data["processes"]:
            for c in process["communicators"]:
                if c["state"] != "live" or c["nranks"] != self.nranks:
                    continue
                routes, kernels = c.get("routes", {}), c.get("kernels", {})
                eager = sum(routes.get(k, {}).get("eager", 0) for k in symmetric_keys)
                captured = sum(routes.get(k, {}).get("captured", 0) for k in symmetric_keys)
                runs = sum(c.get("gpu_runs", {}).values())
                timed = sum(kernels.get(k, {}).get("timed", 0) for k in symmetric_keys)
                seen[c["rank"]] = (process["pid"], c["symmetric"], c["gpu_sampling"], c["calls"], eager, captured,
                                   runs, timed)
        self.expect(sorted(seen) == list(range(self.nranks)),
                    f"live statistics show ranks {sorted(seen)} of {self.nranks}")
        for rank, (pid, symmetric, sampling, calls, eager, captured, runs, timed) in sorted(seen.items()):
            want = eager + captured * args.graph_replays
            self.expect(symmetric, f"rank {rank} (pid {pid}): symmetric {symmetric}")
            self.expect(sampling > 0, f"rank {rank}: the kernels keep no counts (gpu_sampling {sampling})")
            self.expect(eager > 0 and (captured > 0 or not args.graph_replays),
                        f"rank {rank}: {eager} eager and {captured} captured symmetric calls counted")
            # The plugin copies the GPU's counts every 0.1 s (the wait above lets every rank's copy
            # catch up), and a peer's last calls may be counted by its host and not yet run to their
            # end (the call after this check waits for rank 0).
            self.expect(want - 3 <= runs <= want + 1,
                        f"rank {rank}: {runs} kernel executions, expected {want} ({eager} eager + {captured} "
                        f"captured x {args.graph_replays} replays)")
            # The first execution of each algorithm is always sampled.
            self.expect(0 < timed <= runs, f"rank {rank}: {timed} executions timed of {runs}")
            self.say(f"live statistics: rank {rank} pid {pid}: {calls} calls, {eager} eager + {captured} "
                     f"captured symmetric, {runs} GPU executions, {timed} timed (one in about {sampling})")

    def graph(self, lib, comm, dtype: str, count: int) -> None:
        cuda, args = self.cuda, self.args
        esize = DTYPES[dtype][1]
        nbytes = count * esize
        calls = args.graph_calls
        bufs = []
        graph = exec_ = None
        try:
            for k in range(calls):
                inplace = k % 2 == 0
                send = cuda.malloc(nbytes)
                bufs.append((send, send if inplace else cuda.malloc(nbytes), inplace))
            cuda.synchronize()
            cuda.begin_capture(self.stream, CAPTURE_MODES[args.capture_mode])
            try:
                for send, recv, _ in bufs:
                    lib.ncclAllReduce(send, recv, count, DTYPES[dtype][0], NCCL_SUM, comm, self.stream)
            except BaseException:
                try:
                    broken = cuda.end_capture(self.stream)
                    if broken:
                        cuda.graph_destroy(broken)
                except CudaError:
                    pass
                raise
            graph = cuda.end_capture(self.stream)
            exec_ = cuda.graph_instantiate(graph)
            for rep in range(args.graph_replays):
                for k, (send, recv, inplace) in enumerate(bufs):
                    cuda.upload(send, contribution_bytes(count, dtype, self.rank, 100 + rep * calls + k))
                    if not inplace:
                        cuda.memset(recv, 0xFF, nbytes)
                cuda.synchronize()
                cuda.graph_launch(exec_, self.stream)
                self.wait(lib, comm, self.stream, f"graph {dtype} count {count} replay {rep}")
                for k, (send, recv, inplace) in enumerate(bufs):
                    where = "in place" if inplace else "out of place"
                    self.compare(f"graph {dtype} count {count} replay {rep} call {k} {where}",
                                 cuda.download(recv, nbytes),
                                 expected_bytes(count, dtype, self.nranks, 100 + rep * calls + k), dtype)
        finally:
            # Graph execs go before anything else (NCCL 2.28.3 hung in ncclCommDestroy with live ones).
            if exec_:
                cuda.graph_exec_destroy(exec_)
            if graph:
                cuda.graph_destroy(graph)
            for send, recv, inplace in bufs:
                cuda.free(send)
                if not inplace:
                    cuda.free(recv)

    def run(self) -> None:
        args = self.args
        # The pynccl scheme: the library and every pointer, before any unique id or communicator.
        self.lib = lib = HOOKS["nccl"](args.nccl_path)
        version = lib.ncclGetVersion()
        if self.rank == 0:
            self.say(f"NCCL {decode_nccl_version(version)} from {args.nccl_path} ({args.nccl_source}); "
                     f"ncclAllReduce pointer (cached before any communicator) lies in "
                     f"{defining_file(lib._funcs['ncclAllReduce'])}")
        # Rank 0 makes the id; the other ranks wait for it on their pipe before any CUDA call.
        uid = self.exchange_id(lib)
        if self.cuda is None:
            self.cuda = HOOKS["cuda"](args.cudart)
        cuda = self.cuda
        uid_comm = None
        comm = None
        world = None
        try:
            cuda.set_device(self.device)
            if self.rank == 0:
                rt, drv = cuda.versions()
                self.say(f"cudart {cuda.loaded_from} (runtime {rt}, driver {drv}); {self.nranks} rank(s); "
                         f"graphs: {args.graph_calls} calls x {args.graph_replays} replays, {args.capture_mode} capture")
            self.stream = cuda.stream_create()
            if args.world_comm:
                # As an inference server's workers do: the world group's communicator (made by its
                # warm-up all-reduce) before the tensor-parallel pynccl one the checks run on.
                world = self.new_comm(lib, "world communicator", uid)
                uid = self.exchange_id(lib, "tensor-parallel")
            comm = uid_comm = self.new_comm(lib, "first communicator", uid)
            if self.rank == 0:
                fresh = lib.lib["ncclAllReduce"]  # a new dlsym on the same handle, now that NCCL is up
                self.say(f"after ncclCommInitRank a fresh dlsym of ncclAllReduce lies in {defining_file(fresh)}")
            if args.delay_first and args.delay_first[0] == self.rank:
                self.say(f"sleeping {args.delay_first[1]} s before the first all-reduce (--delay-first)")
                time.sleep(args.delay_first[1])
            if args.abort_after_first:
                self.eager(lib, comm, "float32", 1001, True, 3, self.stream, "first")
                comm = None
                self.abort_while_others_wait(lib, uid_comm)
                return
            if args.keep_calling:
                self.keep_calling(lib, comm, args.keep_calling)
            if args.capture_first:
                # Before any eager call: what a server that captures without a warm-up all-reduce does.
                self.graph(lib, comm, "float32", 1001)
            for dtype in DTYPES:
                for count in counts_for(dtype, args.quick, args.max_bytes):
                    for inplace in (True, False):
                        self.eager(lib, comm, dtype, count, inplace, count % 13, self.stream, "eager")
                for inplace in (True, False):
                    self.eager(lib, comm, dtype, 4097, inplace, 5, None, "eager (legacy default stream)")
                if args.graph_replays:
                    for count in graph_counts_for(dtype, args.quick, args.max_bytes):
                        self.graph(lib, comm, dtype, count)
            if args.stats_check:
                self.check_live_stats(lib, comm)
            if args.check_captured:
                self.check_captured(lib, comm)
            comm = None
            lib.ncclCommDestroy(uid_comm)
            if world is not None:
                lib.ncclCommDestroy(world)
                world = None
            # no communicator is left
            self.lifecycle(version)
        except Exception as e:  # noqa: BLE001 - every failure is reported and fails the run
            self.errors.append(str(e) if isinstance(e, (NcclError, CudaError)) else traceback.format_exc())
            self.say(f"ERROR: {self.errors[-1]}")
            if comm is not None and args.wait_async_error and lib is not None:
                self.report_async_error(lib, comm, args.wait_async_error)
            for c in (comm, world):
                if c is None:
                    continue
                try:
                    lib.ncclCommAbort(c)  # never waits for a peer
                except NcclError as abort_error:
                    self.say(f"ERROR: {abort_error}")
        finally:
            if self.stream:
                try:
                    cuda.stream_destroy(self.stream)
                except CudaError:
                    pass

    def keep_calling(self, lib, comm, seconds: int) -> None:
        """Checked all-reduces for about `seconds`; after each, a one-element all-reduce carries rank 0's
        'go on' (1) or 'stop' (0), so that every rank makes the same number of calls."""
        start = time.monotonic()
        calls = 0
        while True:
            wrong = self.wrong
            self.eager(lib, comm, "float32", 1001, calls % 2 == 0, calls % PERIOD, self.stream, "keep calling")
            calls += 1
            if self.wrong != wrong:  # a peer is gone or broken: stop here rather than call on
                raise NcclError(f"wrong values after {calls} calls while calling on (a peer may be gone)")
            go_on = 1.0 if self.rank == 0 and time.monotonic() - start < seconds else 0.0
            if self.allreduce_value(lib, comm, go_on) == 0.0:
                break
        self.say(f"kept calling: {calls} checked all-reduces in {time.monotonic() - start:.1f} s")

    def allreduce_value(self, lib, comm, value: float) -> float:
        cuda = self.cuda
        buf = cuda.malloc(4)
        try:
            cuda.upload(buf, struct.pack("<f", value))
            lib.ncclAllReduce(buf, buf, 1, DTYPES["float32"][0], NCCL_SUM, comm, self.stream)
            self.wait(lib, comm, self.stream, "go-on flag")
            return struct.unpack("<f", cuda.download(buf, 4))[0]
        finally:
            cuda.free(buf)

    def abort_while_others_wait(self, lib, comm) -> None:
        """--abort-after-first: rank 0 aborts its communicator while the others wait in an all-reduce it
        never joins; they must see an error or see the all-reduce end. No result is checked after that."""
        args = self.args
        if self.rank == 0:
            time.sleep(ABORT_DELAY_S)
            lib.ncclCommAbort(comm)
            self.expect(True, "ncclCommAbort on the first communicator while the other ranks wait in an all-reduce")
            self.say("aborted the first communicator; exiting without another call")
            return
        cuda = self.cuda
        count = 1001
        nbytes = count * DTYPES["float32"][1]
        send, recv = cuda.malloc(nbytes), cuda.malloc(nbytes)
        seconds = args.wait_async_error or 120
        outcome = ""
        try:
            cuda.upload(send, contribution_bytes(count, "float32", self.rank, 4))
            cuda.synchronize()
            lib.ncclAllReduce(send, recv, count, DTYPES["float32"][0], NCCL_SUM, comm, self.stream)
            deadline = time.monotonic() + seconds
            while not outcome:
                done = cuda.stream_query(self.stream)
                code = lib.ncclCommGetAsyncError(comm)
                if code not in (0, ncclInProgress):
                    outcome = f"saw an error: ncclCommGetAsyncError returned {code} ({lib.ncclGetErrorString(code)})"
                elif done:
                    outcome = f"the all-reduce ended; ncclCommGetAsyncError returned {code} ({lib.ncclGetErrorString(code)})"
                elif time.monotonic() >= deadline:
                    break
                else:
                    time.sleep(0.01)
        except (NcclError, CudaError) as e:
            outcome = f"saw an error: {e}"
        finally:
            try:
                lib.ncclCommAbort(comm)  # ends a kernel still waiting for rank 0
            except NcclError as e:
                self.say(f"ncclCommAbort after rank 0's abort: {e}")
            for ptr in (send, recv):
                try:
                    cuda.free(ptr)
                except CudaError:
                    pass  # a sticky error after the peer went away: already reported
        if outcome:
            self.expect(True, f"while rank 0 aborted: {outcome}")
            self.say(f"while rank 0 aborted: {outcome}")
        else:
            self.expect(False, f"while rank 0 aborted: neither an error nor the end of the all-reduce in {seconds} s")

    def lifecycle(self, version: int) -> None:
        """No communicator left: go on through the cached pointers, as a long-lived vLLM process does."""
        first = self.lib
        # A new PyNcclCommunicator builds a new wrapper object; it is served from the per-path cache.
        lib = HOOKS["nccl"](self.args.nccl_path)
        self.expect(lib._funcs is first._funcs, "a second wrapper object reuses the cached pointers")
        self.expect(lib.ncclGetVersion() == version, "ncclGetVersion after the last ncclCommDestroy")
        lib.ncclGroupStart()
        lib.ncclGroupEnd()
        self.expect(True, "empty ncclGroupStart/ncclGroupEnd with no communicator")
        comm = self.new_comm(lib, "second communicator")
        try:
            self.eager(lib, comm, "float32", 1001, True, 7, self.stream, "second communicator")
            self.eager(lib, comm, "bfloat16", 4097, False, 8, self.stream, "second communicator, grouped",
                       grouped=True)
        except Exception:
            lib.ncclCommAbort(comm)
            raise
        lib.ncclCommDestroy(comm)
        comm = self.new_comm(lib, "third communicator")
        try:
            self.eager(lib, comm, "float16", 65537, False, 9, self.stream, "third communicator")
        finally:
            lib.ncclCommAbort(comm)
        self.expect(lib.ncclGetVersion() == version, "ncclGetVersion after ncclCommAbort")

    # ==== --scenario: reliability scenarios, one launched rank each =================================
    def settle(self, lib, comm, what: str) -> None:
        """A non-blocking communicator's call returned: poll ncclCommGetAsyncError until it leaves
        ncclInProgress (at most --stall-timeout seconds); an error, or still in progress then, raises."""
        deadline = time.monotonic() + self.args.stall_timeout
        delay = 0.0001
        while True:
            code = lib.ncclCommGetAsyncError(comm)
            if code == 0:
                return
            if code != ncclInProgress:
                raise NcclError(nccl_error_message(f"{what}: ncclCommGetAsyncError", code, lib.ncclGetErrorString(code),
                                                   lib._last_error(comm)))
            if time.monotonic() >= deadline:
                raise NcclError(f"{what}: still ncclInProgress after {self.args.stall_timeout} s (--stall-timeout)")
            time.sleep(delay)
            delay = min(delay * 2, 0.01)

    def check_comm(self, lib, comm, what: str, ranks: int, me: int) -> None:
        self.expect(bool(comm.value), f"{what}: a communicator came back")
        self.expect(lib.ncclCommCount(comm) == ranks, f"{what}: ncclCommCount == {ranks}")
        self.expect(lib.ncclCommUserRank(comm) == me, f"{what}: ncclCommUserRank == {me}")
        self.expect(lib.ncclCommCuDevice(comm) == self.device, f"{what}: ncclCommCuDevice == {self.device}")

    def track(self, comm):
        """A communicator this scenario holds: aborted (never waits for a peer) if the scenario fails."""
        self.live.append(comm)
        return comm

    def end_comm(self, lib, comm, abort: bool = False) -> None:
        self.live = [c for c in self.live if c.value != comm.value]
        (lib.ncclCommAbort if abort else lib.ncclCommDestroy)(comm)

    def run_scenario(self) -> str:
        """Runs --scenario; returns what was done, in a few words. A failure raises or counts as wrong."""
        args = self.args
        self.live = []
        self.lib = lib = HOOKS["nccl"](args.nccl_path)
        version = lib.ncclGetVersion()
        if self.cuda is None:
            self.cuda = HOOKS["cuda"](args.cudart)
        cuda = self.cuda
        cuda.set_device(self.device)
        if self.rank == 0:
            self.say(f"scenario {args.scenario}: NCCL {decode_nccl_version(version)} from {args.nccl_path} "
                     f"({args.nccl_source}); {self.nranks} rank(s) on GPU {self.device}")
        self.stream = cuda.stream_create()
        run = {"many-comms": self.scenario_many_comms, "nonblocking": self.scenario_nonblocking,
               "two-comms-one-group": self.scenario_two_comms, "mixed-eager-graph": self.scenario_mixed,
               "timeout": self.scenario_timeout}[args.scenario]
        try:
            return run(lib, version)
        except BaseException:
            for comm in reversed(self.live):  # children before their parents
                try:
                    lib.ncclCommAbort(comm)
                except NcclError as e:
                    self.say(f"ERROR: {e}")
            self.live = []
            raise
        finally:
            try:
                cuda.stream_destroy(self.stream)  # does not wait for work still on it
            except CudaError:
                pass
            self.stream = None

    def scenario_many_comms(self, lib, version) -> str:
        """--comms communicators one after the other, each with one checked all-reduce; every 4th split
        (color rank % 2, key rank) with a checked all-reduce on the child; every 5th ended by an abort."""
        n = self.args.comms
        start = time.monotonic()
        splits = aborts = 0
        color = self.rank % 2
        members = [r for r in range(self.nranks) if r % 2 == color]
        for i in range(1, n + 1):
            what = f"communicator {i}"
            uid = self.exchange_id(lib, name=f"many-comms-{i}")
            comm = self.track(lib.ncclCommInitRank(self.nranks, uid, self.rank))
            self.check_comm(lib, comm, what, self.nranks, self.rank)
            self.eager(lib, comm, "float32", 1024, i % 2 == 0, i % PERIOD, self.stream, what)
            if i % 4 == 0:  # a split is collective over the parent: every rank splits the same ones
                child = self.track(lib.ncclCommSplit(comm, color, self.rank))
                me = members.index(self.rank)
                child_what = f"{what}'s split child (color {color}, {len(members)} rank(s))"
                self.check_comm(lib, child, child_what, len(members), me)
                self.eager(lib, child, "float32", 1024, i % 8 == 0, (i + 5) % PERIOD, self.stream, child_what,
                           member=(me, len(members)))
                self.end_comm(lib, child)
                splits += 1
            if i % 5 == 0:
                self.end_comm(lib, comm, abort=True)
                aborts += 1
            else:
                self.end_comm(lib, comm)
            if i % PROGRESS_EVERY == 0 and i < n:
                self.say(f"scenario many-comms: {i} of {n} communicators done ({splits} split, {aborts} aborted), "
                         f"{self.wrong} wrong, {time.monotonic() - start:.0f} s")
        return (f"{n} communicators ({splits} split into children of {len(members)} rank(s), {aborts} ended with "
                f"ncclCommAbort, the rest with ncclCommDestroy) in {time.monotonic() - start:.0f} s")

    def scenario_nonblocking(self, lib, version) -> str:
        """ncclCommInitRankConfig with blocking = 0, polled until ready; checked all-reduces, eager and in
        a CUDA graph, each polled until no longer in progress; destroy."""
        args, cuda = self.args, self.cuda
        config = make_config(version, blocking=0)
        uid = self.exchange_id(lib)
        comm, code = lib.ncclCommInitRankConfig(self.nranks, uid, self.rank, config)
        if comm.value:
            self.track(comm)
        self.expect(bool(comm.value), "ncclCommInitRankConfig (blocking = 0) returned a communicator at once")
        if not comm.value:
            raise NcclError("ncclCommInitRankConfig (blocking = 0) returned no communicator")
        init_note = "ncclInProgress" if code == ncclInProgress else "ncclSuccess"
        self.settle(lib, comm, "ncclCommInitRankConfig (blocking = 0)")
        self.check_comm(lib, comm, "non-blocking communicator", self.nranks, self.rank)
        eager = [("float32", 1024, True), ("bfloat16", 4097, False), ("float16", 1, False), ("float32", 65536, True)]
        for k, (dtype, count, inplace) in enumerate(eager):
            self.eager(lib, comm, dtype, count, inplace, k + 3, self.stream, "non-blocking eager", nonblocking=True)
        specs = [("float32", 1024, True), ("bfloat16", 4097, False), ("float32", 1001, False), ("float16", 2048, True)]
        replays = max(args.graph_replays, 1)
        self.graph_rounds(lib, comm, specs, replays, eager_between=False, nonblocking=True)
        code = lib.ncclCommDestroyNonBlocking(comm)
        self.live = [c for c in self.live if c.value != comm.value]
        destroy_note = "" if code == 0 else " (ncclCommDestroy returned ncclInProgress: NCCL finishes it on its own)"
        return (f"non-blocking communicator (ncclCommInitRankConfig returned {init_note}, then polled), "
                f"{len(eager)} eager all-reduces and a graph of {len(specs)} replayed {replays} times{destroy_note}")

    def scenario_two_comms(self, lib, version) -> str:
        """Two communicators over the same ranks; from this thread, one all-reduce on each inside one
        ncclGroupStart/End, ROUNDS times (even rounds one stream, odd rounds two), checked."""
        cuda = self.cuda
        comm_a = self.track(self.new_comm(lib, "communicator A"))
        comm_b = self.track(self.new_comm(lib, "communicator B"))
        other = cuda.stream_create()
        a_count, b_count = 1024, 2048
        a_bytes, b_bytes = a_count * 4, b_count * 2
        a_buf = cuda.malloc(a_bytes)
        b_send, b_recv = cuda.malloc(b_bytes), cuda.malloc(b_bytes)
        try:
            for r in range(ROUNDS):
                b_stream = other if r % 2 else self.stream
                a_salt, b_salt = r % PERIOD, (r + 9) % PERIOD
                cuda.upload(a_buf, contribution_bytes(a_count, "float32", self.rank, a_salt))
                b_mine = contribution_bytes(b_count, "bfloat16", self.rank, b_salt)
                cuda.upload(b_send, b_mine)
                cuda.memset(b_recv, 0xFF, b_bytes)
                cuda.synchronize()
                lib.ncclGroupStart()
                try:
                    lib.ncclAllReduce(a_buf, a_buf, a_count, DTYPES["float32"][0], NCCL_SUM, comm_a, self.stream)
                    lib.ncclAllReduce(b_send, b_recv, b_count, DTYPES["bfloat16"][0], NCCL_SUM, comm_b, b_stream)
                finally:
                    lib.ncclGroupEnd()
                where = "two streams" if r % 2 else "one stream"
                self.wait(lib, comm_a, self.stream, f"round {r} communicator A")
                self.wait(lib, comm_b, b_stream, f"round {r} communicator B")
                self.compare(f"round {r} ({where}) communicator A float32 count {a_count} in place",
                             cuda.download(a_buf, a_bytes), expected_bytes(a_count, "float32", self.nranks, a_salt),
                             "float32")
                self.compare(f"round {r} ({where}) communicator B bfloat16 count {b_count} out of place",
                             cuda.download(b_recv, b_bytes), expected_bytes(b_count, "bfloat16", self.nranks, b_salt),
                             "bfloat16")
                self.compare(f"round {r} communicator B: input unchanged", cuda.download(b_send, b_bytes), b_mine,
                             "bfloat16")
        finally:
            for ptr in (a_buf, b_send, b_recv):
                try:
                    cuda.free(ptr)
                except CudaError:
                    pass
            try:
                cuda.stream_destroy(other)
            except CudaError:
                pass
        self.end_comm(lib, comm_b)
        self.end_comm(lib, comm_a)
        return f"two communicators, {ROUNDS} groups of one all-reduce on each (one stream and two streams, alternating)"

    def scenario_mixed(self, lib, version) -> str:
        """One communicator: eager all-reduces between replays of a graph of 4 captured all-reduces,
        ROUNDS rounds, fresh inputs each time, checked."""
        comm = self.track(self.new_comm(lib, "communicator"))
        # The first call eager: the plugin sets a communicator up on an eager call, never inside a capture.
        self.eager(lib, comm, "float32", 1024, True, 1, self.stream, "first eager")
        specs = [("float32", 1024, True), ("bfloat16", 4097, False), ("float16", 1, True), ("float32", 16384, False)]
        self.graph_rounds(lib, comm, specs, ROUNDS, eager_between=True)
        self.end_comm(lib, comm)
        return f"{ROUNDS} rounds of an eager all-reduce and a replay of a graph of {len(specs)} all-reduces"

    def graph_rounds(self, lib, comm, specs, rounds: int, eager_between: bool, nonblocking: bool = False) -> None:
        """Captures one all-reduce per spec (dtype, count, in place) into a graph, then `rounds` times: an
        eager all-reduce (eager_between), fresh inputs, a replay, the results checked."""
        cuda, args = self.cuda, self.args
        bufs = []
        graph = exec_ = None
        eager_counts = [1024, 1001, 4097, 17]
        try:
            for dtype, count, inplace in specs:
                nbytes = count * DTYPES[dtype][1]
                send = cuda.malloc(nbytes)
                bufs.append((dtype, count, nbytes, send, send if inplace else cuda.malloc(nbytes), inplace))
            cuda.synchronize()
            cuda.begin_capture(self.stream, CAPTURE_MODES[args.capture_mode])
            try:
                for k, (dtype, count, _, send, recv, _) in enumerate(bufs):
                    if nonblocking:  # no stream query inside a capture: NCCL's own state only
                        lib.ncclAllReduceNonBlocking(send, recv, count, DTYPES[dtype][0], NCCL_SUM, comm, self.stream)
                        self.settle(lib, comm, f"captured all-reduce {k}")
                    else:
                        lib.ncclAllReduce(send, recv, count, DTYPES[dtype][0], NCCL_SUM, comm, self.stream)
            except BaseException:
                try:
                    broken = cuda.end_capture(self.stream)
                    if broken:
                        cuda.graph_destroy(broken)
                except CudaError:
                    pass
                raise
            graph = cuda.end_capture(self.stream)
            exec_ = cuda.graph_instantiate(graph)
            for r in range(rounds):
                if eager_between:
                    dtype = "float32" if r % 2 else "bfloat16"
                    self.eager(lib, comm, dtype, eager_counts[r % len(eager_counts)], r % 3 == 0, (r + 2) % PERIOD,
                               self.stream, f"round {r} eager")
                for k, (dtype, count, nbytes, send, recv, inplace) in enumerate(bufs):
                    cuda.upload(send, contribution_bytes(count, dtype, self.rank, 100 + r * len(bufs) + k))
                    if not inplace:
                        cuda.memset(recv, 0xFF, nbytes)
                cuda.synchronize()
                cuda.graph_launch(exec_, self.stream)
                self.wait(lib, comm, self.stream, f"round {r} graph replay")
                for k, (dtype, count, nbytes, send, recv, inplace) in enumerate(bufs):
                    where = "in place" if inplace else "out of place"
                    self.compare(f"round {r} graph call {k} {dtype} count {count} {where}", cuda.download(recv, nbytes),
                                 expected_bytes(count, dtype, self.nranks, 100 + r * len(bufs) + k), dtype)
        finally:
            if exec_:
                cuda.graph_exec_destroy(exec_)
            if graph:
                cuda.graph_destroy(graph)
            for _, _, _, send, recv, inplace in bufs:
                cuda.free(send)
                if not inplace:
                    cuda.free(recv)

    def stall_bound(self) -> float:
        """timeout: how long the others may take, once the last rank stops, to see the error."""
        return self.args.stall_timeout + (self.args.wait_async_error or STALL_ASYNC_WAIT_S)

    def scenario_timeout(self, lib, version) -> str:
        """--stall-after K checked all-reduces on every rank; then the last rank stops calling and sleeps
        past the others' bound, while the others keep calling until they see an error (an all-reduce
        that returns one, or ncclCommGetAsyncError); every rank then aborts its communicator."""
        args = self.args
        comm = self.track(self.new_comm(lib, "communicator"))
        for k in range(args.stall_after):
            self.eager(lib, comm, "float32", 1024, k % 2 == 0, k % PERIOD, self.stream, f"before the stall, call {k}")
        staller = self.nranks - 1
        bound = self.stall_bound()
        if self.rank == staller:
            nap = bound + min(STALL_MARGIN_S, bound)
            self.say(f"scenario timeout: stopping after {args.stall_after} checked all-reduces; sleeping {nap:g} s "
                     f"(the others' bound is {bound:g} s), then ncclCommAbort")
            time.sleep(nap)
            self.end_comm(lib, comm, abort=True)
            return f"rank {staller} stopped after {args.stall_after} all-reduces, slept {nap:g} s and aborted"
        outcome, elapsed, calls = self.call_until_error(lib, comm, bound)
        if outcome:
            self.expect(True, f"saw an error {elapsed:.1f} s after rank {staller} stopped: {outcome}")
        else:
            self.expect(False, f"no error in {elapsed:.1f} s after rank {staller} stopped (bound {bound:g} s)")
        self.end_comm(lib, comm, abort=True)
        if not outcome:
            raise NcclError(f"no error within {bound:g} s after rank {staller} stopped calling ({calls} call(s) made)")
        return (f"rank {staller} stopped after {args.stall_after} all-reduces; this rank saw an error after "
                f"{calls} more call(s), {elapsed:.1f} s later (bound {bound:g} s): {outcome}; then ncclCommAbort")

    def call_until_error(self, lib, comm, bound: float):
        """timeout, the ranks that go on: checked all-reduces until one fails. Each call's stream and
        ncclCommGetAsyncError are polled (never a blocking synchronize); once the stream has finished with
        wrong values, or has not finished after --stall-timeout, ncclCommGetAsyncError is polled for the
        rest of `bound`. Returns (what was seen or "", seconds since the stall, calls made)."""
        args, cuda = self.args, self.cuda
        count = 1024
        nbytes = count * 4
        send, recv = cuda.malloc(nbytes), cuda.malloc(nbytes)
        start = time.monotonic()
        calls = 0
        finished = True  # whether nothing of ours is left running on the stream
        outcome = ""
        try:
            while not outcome and time.monotonic() - start < bound:
                salt = (calls + 7) % PERIOD
                # cudaMemcpy from pageable memory returns when done and waits for nothing on our stream
                cuda.upload(send, contribution_bytes(count, "float32", self.rank, salt))
                cuda.upload(recv, b"\xff" * nbytes)
                try:
                    lib.ncclAllReduce(send, recv, count, DTYPES["float32"][0], NCCL_SUM, comm, self.stream)
                except NcclError as e:
                    outcome = f"ncclAllReduce returned an error: {e}"
                    break
                calls += 1
                finished = False
                deadline = time.monotonic() + args.stall_timeout
                while True:
                    finished = cuda.stream_query(self.stream)
                    code = lib.ncclCommGetAsyncError(comm)
                    if code not in (0, ncclInProgress):
                        outcome = (f"ncclCommGetAsyncError returned {code} ({lib.ncclGetErrorString(code)}) while "
                                   f"call {calls} {'had finished' if finished else 'was still running'}")
                        break
                    if finished or time.monotonic() >= deadline:
                        break
                    time.sleep(0.01)
                if outcome:
                    break
                if finished:
                    got = cuda.download(recv, nbytes)
                    if got == expected_bytes(count, "float32", self.nranks, salt):
                        self.say(f"scenario timeout: call {calls} after the stall finished with the right sum")
                        continue
                    why = f"call {calls} finished with wrong values (its results are invalid)"
                else:
                    why = f"call {calls} still running after {args.stall_timeout} s (--stall-timeout)"
                rest = max(bound - (time.monotonic() - start), 1.0)
                self.say(f"scenario timeout: {why}; polling ncclCommGetAsyncError for up to {rest:.0f} s")
                poll_end = time.monotonic() + rest
                while time.monotonic() < poll_end:
                    code = lib.ncclCommGetAsyncError(comm)
                    if code not in (0, ncclInProgress):
                        outcome = f"{why}; ncclCommGetAsyncError returned {code} ({lib.ncclGetErrorString(code)})"
                        break
                    if not finished:
                        finished = cuda.stream_query(self.stream)
                    time.sleep(0.05)
                if not outcome:
                    self.say(f"scenario timeout: {why}, and ncclCommGetAsyncError reported no error")
                    break
        finally:
            if finished:  # cudaFree waits for the device: never while our call may still be running
                for ptr in (send, recv):
                    try:
                        cuda.free(ptr)
                    except CudaError:
                        pass
        return outcome, time.monotonic() - start, calls


    def result(self) -> dict:
        return {"rank": self.rank, "checks": self.checks, "wrong": self.wrong, "errors": self.errors}


# ==== GPUs, single rank and forked ranks ============================================================
def probe_gpus(args):
    """(usable GPU count, why not, the loaded runtime or None). Initialises CUDA in this process."""
    try:
        cuda = HOOKS["cuda"](args.cudart)
    except CudaError as e:
        return 0, str(e), None
    try:
        return cuda.device_count(), "", cuda
    except CudaError as e:
        return 0, str(e), cuda


def probe_gpus_forked(args):
    """The same in a child, so this process stays free of CUDA until it has forked the ranks."""
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            count, why, cuda = probe_gpus(args)
            write_frame(w, b"P", json.dumps([count, why, cuda is not None]).encode())
        finally:
            os._exit(0)
    os.close(w)
    try:
        _, payload = read_frame(r)
        count, why, loaded = json.loads(payload)
    except (EOFError, ValueError) as e:
        count, why, loaded = 0, f"the GPU probe process failed ({e})", False
    os.close(r)
    os.waitpid(pid, 0)
    return count, why, loaded


def skip(nranks: int, count: int, why: str) -> int:
    reason = f": {why}" if why else ""
    print(f"{PROG}: SKIPPED: needs {nranks} GPU(s), found {count}{reason}. "
          f"(NCCL refuses two ranks on one GPU; --self-test runs the host-side checks without one.)", flush=True)
    return EXIT_SKIP


def finish(results: List[dict], nranks: int, problems: List[str]) -> int:
    checks = sum(r["checks"] for r in results)
    wrong = sum(r["wrong"] for r in results)
    errors = sum(len(r["errors"]) for r in results) + len(problems)
    for p in problems:
        print(f"{PROG}: ERROR: {p}", flush=True)
    print(summary_line(checks, wrong), flush=True)
    if errors:
        print(f"{PROG}: FAILED: {errors} error(s)", flush=True)
    ok = len(results) == nranks and wrong == 0 and errors == 0
    return EXIT_OK if ok else EXIT_FAIL


def run_single(args) -> int:
    count, why, cuda = probe_gpus(args)
    if cuda is None and args.cudart:
        print(f"{PROG}: ERROR: {why}", flush=True)
        return EXIT_FAIL
    if count < 1:
        return skip(1, count, why)
    if args.device is not None and count <= args.device:
        return skip(args.device + 1, count, why)
    faulthandler.dump_traceback_later(args.timeout, exit=True)
    rank = Rank(0, 1, args, None, cuda, device=args.device)
    try:
        rank.run()
    except Exception as e:  # noqa: BLE001 - before any communicator: loading NCCL, the first calls
        rank.errors.append(str(e))
        rank.say(f"ERROR: {e}")
    faulthandler.cancel_dump_traceback_later()
    return finish([rank.result()], 1, [])


def run_launched(args) -> int:
    """One rank of args.world, started by a launcher; prints its own summary line."""
    prefix = f"{PROG}[rank {args.rank}]"
    note = f" ({NO_LATENCY})" if args.world > 1 else ""
    print(f"{prefix}: rank {args.rank} of {args.world} on GPU {args.device}; expected path: {args.expect_path} "
          f"(checked by the caller in this log){note}", flush=True)
    count, why, cuda = probe_gpus(args)
    if cuda is None and args.cudart:
        print(f"{prefix}: ERROR: {why}", flush=True)
        return EXIT_FAIL
    if count <= args.device:
        reason = f": {why}" if why else ""
        print(f"{prefix}: SKIPPED: needs GPU {args.device}, found {count} GPU(s){reason}", flush=True)
        return EXIT_SKIP
    faulthandler.dump_traceback_later(args.timeout, exit=True)
    if (args.stats_check or args.check_captured) and os.environ.get("SYMMEM_STATS_DIR"):
        os.makedirs(os.environ["SYMMEM_STATS_DIR"], exist_ok=True)  # before NCCL loads the plugin
    channel = FileChannel(args.rendezvous, args.rank, args.rendezvous_timeout) if args.world > 1 else None
    rank = Rank(args.rank, args.world, args, channel, cuda, device=args.device, launched=True)
    rank.prefix = prefix
    if args.scenario:
        return run_scenario(rank, args, prefix)
    try:
        rank.run()
    except Exception as e:  # noqa: BLE001 - before any communicator: loading NCCL, the unique id
        rank.errors.append(str(e))
        rank.say(f"ERROR: {e}")
    faulthandler.cancel_dump_traceback_later()
    print(f"{prefix}: {rank.checks} checks, {rank.wrong} wrong{note}", flush=True)
    if rank.errors:
        print(f"{prefix}: FAILED: {len(rank.errors)} error(s)", flush=True)
    return EXIT_OK if not rank.errors and not rank.wrong else EXIT_FAIL


def scenario_line(prefix: str, name: str, done: str, checks: int, wrong: int, errors: List[str]) -> str:
    """The one line a scenario ends with: 'scenario NAME: ... PASS|FAIL (...)'."""
    ok = not errors and not wrong
    why = NO_LATENCY if ok else f"first error: {errors[0].strip().splitlines()[-1]}; {NO_LATENCY}" if errors \
        else f"{wrong} wrong value(s); {NO_LATENCY}"
    return f"{prefix}: scenario {name}: {done}; {checks} checks, {wrong} wrong: {'PASS' if ok else 'FAIL'} ({why})"


def run_scenario(rank: "Rank", args, prefix: str) -> int:
    done = "stopped early"
    try:
        done = rank.run_scenario()
    except Exception as e:  # noqa: BLE001 - every failure is reported and fails the scenario
        rank.errors.append(str(e) if isinstance(e, (NcclError, CudaError)) else traceback.format_exc())
        rank.say(f"ERROR: {rank.errors[-1]}")
    faulthandler.cancel_dump_traceback_later()
    print(scenario_line(prefix, args.scenario, done, rank.checks, rank.wrong, rank.errors), flush=True)
    return EXIT_OK if not rank.errors and not rank.wrong else EXIT_FAIL


def child_main(rank: int, nranks: int, args, up_fd: int, down_fd: int) -> int:
    faulthandler.dump_traceback_later(args.timeout, exit=True)
    r = Rank(rank, nranks, args, Channel(up_fd, down_fd), None)
    try:
        r.run()
    except Exception as e:  # noqa: BLE001 - NcclLoadError and friends
        r.errors.append(str(e))
        r.say(f"ERROR: {e}")
    try:
        r.channel.send_result(r.result())
    except OSError:
        pass
    return EXIT_OK if not r.errors and not r.wrong else EXIT_FAIL


def run_forked(args) -> int:
    nranks = args.nranks
    count, why, loaded = probe_gpus_forked(args)
    if not loaded and args.cudart:
        print(f"{PROG}: ERROR: {why}", flush=True)
        return EXIT_FAIL
    if count < nranks:
        return skip(nranks, count, why)
    ups = [os.pipe() for _ in range(nranks)]
    downs = [os.pipe() for _ in range(nranks)]
    sys.stdout.flush()
    sys.stderr.flush()
    pids = []
    for rank in range(nranks):
        pid = os.fork()
        if pid == 0:
            code = EXIT_FAIL
            try:
                for i in range(nranks):  # keep only this rank's ends: EOF must mean what it says
                    os.close(ups[i][0])
                    os.close(downs[i][1])
                    if i != rank:
                        os.close(ups[i][1])
                        os.close(downs[i][0])
                code = child_main(rank, nranks, args, ups[rank][1], downs[rank][0])
            except BaseException:  # noqa: BLE001
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                try:
                    ctypes.CDLL(None).fflush(None)  # NCCL's log lines in C stdio buffers (_exit drops them)
                except Exception:  # noqa: BLE001
                    pass
                os._exit(code)
        pids.append(pid)
    for i in range(nranks):
        os.close(ups[i][1])
        os.close(downs[i][0])
    down_fds = {i: downs[i][1] for i in range(nranks)}
    open_fds = {ups[i][0]: i for i in range(nranks)}
    buffers = {i: FrameBuffer() for i in range(nranks)}
    results: Dict[int, dict] = {}
    problems: List[str] = []
    exit_codes: Dict[int, int] = {}
    deadline = time.monotonic() + args.timeout + 30

    def close_downs():  # ranks waiting for an id then see EOF instead of waiting forever
        for i in list(down_fds):
            os.close(down_fds.pop(i))

    while (open_fds or len(exit_codes) < nranks) and time.monotonic() < deadline:
        ready, _, _ = select.select(list(open_fds), [], [], 0.5) if open_fds else ([], [], [])
        if not open_fds:
            time.sleep(0.1)
        for fd in ready:
            rank = open_fds[fd]
            chunk = os.read(fd, 65536)
            if not chunk:
                del open_fds[fd]
                os.close(fd)
                if rank == 0 or rank not in results:  # no more ids will come / a rank is gone
                    close_downs()
                continue
            for tag, payload in buffers[rank].feed(chunk):
                if tag == b"I" and rank == 0:
                    for i, dfd in down_fds.items():
                        if i != 0:
                            try:
                                write_frame(dfd, b"I", payload)
                            except OSError:  # that rank is gone; its exit status says why
                                pass
                elif tag == b"R":
                    results[rank] = json.loads(payload)
        for rank, pid in enumerate(pids):
            if rank in exit_codes:
                continue
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                exit_codes[rank] = os.waitstatus_to_exitcode(status)
                if exit_codes[rank] != 0:  # its peers may be stuck in a collective: a short grace
                    deadline = min(deadline, time.monotonic() + 30)
    for rank, pid in enumerate(pids):
        if rank not in exit_codes:
            problems.append(f"rank {rank} did not finish in time; killed")
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        elif exit_codes[rank] != 0 and rank not in results:
            problems.append(f"rank {rank} exited with status {exit_codes[rank]} without a result")
    close_downs()
    for fd in open_fds:
        os.close(fd)
    for res in results.values():
        for e in res["errors"]:
            print(f"{PROG}[rank {res['rank']}]: error: {e.splitlines()[0] if e else e}", flush=True)
    return finish([results[r] for r in sorted(results)], nranks, problems)


# ==== host-only stand-ins: a dry run of the driver logic in --self-test =============================
class _FakeCuda:
    """CUDA on host memory: buffers are bytearrays, a capturing stream records, a graph replays."""

    current = None

    def __init__(self, explicit=None):
        self.path = self.loaded_from = "fake-cudart"
        self.mem: Dict[int, bytearray] = {}
        self.next_ptr = 0x10000
        self.capturing: Dict[Any, list] = {}
        self.graphs: Dict[int, list] = {}
        self.device = None
        self.count = _FakeCuda.gpus
        _FakeCuda.current = self

    gpus = 1

    def device_count(self):
        if self.count == 0:
            raise CudaError(cuda_error_message("cudaGetDeviceCount", 100, "no CUDA-capable device is detected"))
        return self.count

    def versions(self):
        return 13000, 13000

    def set_device(self, device):
        self.device = device

    def synchronize(self):
        pass

    def malloc(self, nbytes):
        ptr, self.next_ptr = self.next_ptr, self.next_ptr + max(nbytes, 1) + 0x1000
        self.mem[ptr] = bytearray(max(nbytes, 1))
        return ptr

    def free(self, ptr):
        del self.mem[ptr]

    def upload(self, dst, data):
        self.mem[dst][: len(data)] = data

    def download(self, src, nbytes):
        return bytes(self.mem[src][:nbytes])

    def memset(self, ptr, value, nbytes):
        self.mem[ptr][:nbytes] = bytes([value]) * nbytes

    def stream_create(self):
        return self.malloc(1)

    def stream_destroy(self, stream):
        self.free(stream)

    def stream_query(self, stream):
        if stream in self.capturing:
            raise CudaError(cuda_error_message("cudaStreamQuery", 900, "operation not permitted when stream is capturing"))
        return True

    def stream_synchronize(self, stream):
        if stream in self.capturing:
            raise CudaError(cuda_error_message("cudaStreamSynchronize", 900, "operation not permitted when stream is capturing"))

    def begin_capture(self, stream, mode):
        self.capturing[stream] = []

    def end_capture(self, stream):
        graph = self.malloc(1)
        self.graphs[graph] = self.capturing.pop(stream)
        return graph

    def graph_instantiate(self, graph):
        exec_ = self.malloc(1)
        self.graphs[exec_] = list(self.graphs[graph])
        return exec_

    def graph_launch(self, exec_, stream):
        for work in self.graphs[exec_]:
            work()

    def graph_exec_destroy(self, exec_):
        del self.graphs[exec_]
        self.free(exec_)

    def graph_destroy(self, graph):
        del self.graphs[graph]
        self.free(graph)


class _FakeNccl:
    """NCCL's semantics for the calls used here; ranks in other processes meet in files under `meet`."""

    _funcs: Dict[str, Any] = {}
    meet = ""
    flaw = ""  # "", "skip-out-of-place", "off-by-one-in-graph", "fail-destroy", "no-timeout-error"
    peer_timeout_s = 60.0  # a peer missing this long: an error (below 60: set asynchronously, as the plugin does)

    def __init__(self, so_file):
        self.so_file = so_file
        self.lib = {"ncclAllReduce": None}
        self.comms: Dict[int, dict] = getattr(_FakeNccl, "_comms", {})
        _FakeNccl._comms = self.comms
        _FakeNccl._funcs.setdefault("ncclAllReduce", None)

    def ncclGetVersion(self):
        return 22803

    def ncclGetUniqueId(self):
        return ncclUniqueId.from_buffer_copy(os.urandom(NCCL_UNIQUE_ID_BYTES))

    def ncclCommInitRank(self, nranks, uid, rank):
        handle = 0x5000 + len(self.comms)
        self.comms[handle] = {"id": bytes(uid)[:8].hex(), "nranks": nranks, "rank": rank, "seq": 0, "live": True}
        return ncclComm_t(handle)

    def ncclCommInitRankConfig(self, nranks, uid, rank, config):
        comm = self.ncclCommInitRank(nranks, uid, rank)
        if config.magic != NCCL_CONFIG_MAGIC or config.size != ctypes.sizeof(ncclConfig_t):
            raise NcclError(nccl_error_message("ncclCommInitRankConfig", 4, "invalid argument"))
        if config.blocking == 0:
            self.comms[comm.value].update(blocking=False, pending=2)  # in progress for two polls
            return comm, ncclInProgress
        return comm, 0

    def ncclCommSplit(self, comm, color, key, config=None):
        state = self._comm(comm, "ncclCommSplit")
        state["splits"] = state.get("splits", 0) + 1
        stem = os.path.join(_FakeNccl.meet, f"{state['id']}-split{state['splits']}-")
        with open(stem + f"{state['rank']}.tmp", "w") as f:
            f.write(f"{color} {key}")
        os.rename(stem + f"{state['rank']}.tmp", stem + str(state["rank"]))
        entries = []
        for r in range(state["nranks"]):
            while not os.path.exists(stem + str(r)):
                time.sleep(0.001)
            with open(stem + str(r)) as f:
                c, k = map(int, f.read().split())
            entries.append((c, k, r))
        if color == NCCL_SPLIT_NOCOLOR:
            return ncclComm_t(None)
        members = sorted((k, r) for c, k, r in entries if c == color)
        handle = 0x5000 + len(self.comms)
        self.comms[handle] = {"id": f"{state['id']}s{state['splits']}c{color}", "nranks": len(members),
                              "rank": members.index((key, state["rank"])), "seq": 0, "live": True}
        return ncclComm_t(handle)

    def ncclAllReduceNonBlocking(self, send, recv, count, datatype, op, comm, stream):
        self.ncclAllReduce(send, recv, count, datatype, op, comm, stream)
        state = self.comms[comm.value]
        if state.get("blocking", True):
            return 0
        state["pending"] = 1
        return ncclInProgress

    def _comm(self, comm, name):
        state = self.comms.get(comm.value)
        if not state or not state["live"]:
            raise NcclError(nccl_error_message(name, 4, "invalid argument"))
        return state

    def ncclCommCount(self, comm):
        return self._comm(comm, "ncclCommCount")["nranks"]

    def ncclCommUserRank(self, comm):
        return self._comm(comm, "ncclCommUserRank")["rank"]

    def ncclCommCuDevice(self, comm):
        return _FakeCuda.current.device

    def ncclGroupStart(self):
        pass

    def ncclGroupEnd(self):
        pass

    def ncclAllReduce(self, send, recv, count, datatype, op, comm, stream):
        state = self._comm(comm, "ncclAllReduce")
        cuda = _FakeCuda.current
        dtype = next(name for name, (code, _) in DTYPES.items() if code == datatype)
        nbytes = count * DTYPES[dtype][1]
        capturing = stream in cuda.capturing

        def work():
            data = cuda.download(send, nbytes)
            if state["nranks"] > 1:
                data = self._meet(state, data, dtype)
            if _FakeNccl.flaw == "skip-out-of-place" and send != recv:
                return
            if _FakeNccl.flaw == "off-by-one-in-graph" and capturing:
                values = decode(data, dtype)
                values[-1] += 1
                data = encode(values, dtype)
            cuda.upload(recv, data)

        if capturing:
            cuda.capturing[stream].append(work)
        else:
            work()

    def _meet(self, state, data, dtype):
        state["seq"] += 1
        stem = os.path.join(_FakeNccl.meet, f"{state['id']}-{state['seq']}-")
        with open(stem + f"{state['rank']}.tmp", "wb") as f:
            f.write(data)
        os.rename(stem + f"{state['rank']}.tmp", stem + str(state["rank"]))
        if state.get("async"):  # the communicator has failed: its calls report it, as the plugin's do
            raise NcclError(nccl_error_message("ncclAllReduce", state["async"], self.ncclGetErrorString(state["async"])))
        deadline = time.monotonic() + _FakeNccl.peer_timeout_s
        parts = []
        for r in range(state["nranks"]):
            while not os.path.exists(stem + str(r)):
                if glob.glob(os.path.join(_FakeNccl.meet, f"{state['id']}-aborted-*")):
                    state["async"] = 6  # a peer aborted: this call never completes its sum
                    return data
                if time.monotonic() > deadline:
                    if _FakeNccl.peer_timeout_s < 60:  # the call ends with invalid results, the error comes later
                        if _FakeNccl.flaw != "no-timeout-error":
                            state["async"] = 2
                        return b"\xff" * len(data)
                    raise NcclError(nccl_error_message("ncclAllReduce", 6, "remote process exited or there was a network error"))
                time.sleep(0.001)
            with open(stem + str(r), "rb") as f:
                parts.append(decode(f.read(), dtype))
        return encode([sum(col) for col in zip(*parts)], dtype)

    def ncclCommDestroy(self, comm):
        self._comm(comm, "ncclCommDestroy")["live"] = False
        if _FakeNccl.flaw == "fail-destroy":
            raise NcclError(nccl_error_message("ncclCommDestroy", 3, "internal error"))

    def ncclCommAbort(self, comm):
        state = self._comm(comm, "ncclCommAbort")
        state["live"] = False
        if state["nranks"] > 1:  # the peers' waits see it (a remote error), as over NCCL's sockets
            open(os.path.join(_FakeNccl.meet, f"{state['id']}-aborted-{state['rank']}"), "wb").close()

    def ncclCommGetAsyncError(self, comm):
        state = self._comm(comm, "ncclCommGetAsyncError")
        if state.get("pending"):
            state["pending"] -= 1
            return ncclInProgress
        return state.get("async", 0)

    def ncclCommDestroyNonBlocking(self, comm):
        self.ncclCommDestroy(comm)
        return 0

    def ncclGetErrorString(self, code):
        return {0: "no error", 2: "unhandled system error", 6: "remote process exited or there was a network error",
                ncclInProgress: "NCCL operation in progress"}.get(code, "error")

    def _last_error(self, comm=None):
        return ""


def dry_run(argv, gpus: int = 1, flaw: str = ""):
    """Runs the client's driver on the stand-ins; returns (exit status, its output)."""
    import tempfile
    saved = dict(HOOKS)
    HOOKS.update(nccl=_FakeNccl, cuda=_FakeCuda)
    _FakeCuda.gpus, _FakeNccl.flaw, _FakeNccl._comms = gpus, flaw, {}
    out = tempfile.TemporaryFile()
    sys.stdout.flush()
    saved_fd = os.dup(1)
    try:
        with tempfile.TemporaryDirectory(prefix="pynccl-dry-") as meet:
            _FakeNccl.meet = meet
            os.dup2(out.fileno(), 1)
            try:
                args = parse_args(argv, environ={})
                code = run_single(args) if args.nranks == 1 else run_forked(args)
            finally:
                sys.stdout.flush()
                os.dup2(saved_fd, 1)
    finally:
        os.close(saved_fd)
        HOOKS.clear()
        HOOKS.update(saved)
    out.seek(0)
    return code, out.read().decode(errors="replace")


def dry_run_launched(argv, nranks: int, flaw: str = "", environ_extra=None, peer_timeout_s: float = 60.0):
    """Runs `nranks` launched ranks (forked here, as a launcher would start them) on the stand-ins;
    returns ([exit status per rank], [output per rank]). peer_timeout_s below 60: a call whose peer does
    not come ends after that long with invalid results and an asynchronous error (SYMMEM_TIMEOUT_MS)."""
    import tempfile
    saved = dict(HOOKS)
    HOOKS.update(nccl=_FakeNccl, cuda=_FakeCuda)
    _FakeCuda.gpus, _FakeNccl.flaw, _FakeNccl._comms = 1, flaw, {}
    _FakeNccl.peer_timeout_s = peer_timeout_s
    codes, texts = [], []
    try:
        with tempfile.TemporaryDirectory(prefix="pynccl-dry-") as meet, \
                tempfile.TemporaryDirectory(prefix="pynccl-rdv-") as rendezvous:
            _FakeNccl.meet = meet
            outs = [tempfile.TemporaryFile() for _ in range(nranks)]
            pids = []
            sys.stdout.flush()
            sys.stderr.flush()
            for rank in range(nranks):
                pid = os.fork()
                if pid == 0:
                    code = EXIT_FAIL
                    try:
                        os.dup2(outs[rank].fileno(), 1)
                        os.dup2(outs[rank].fileno(), 2)
                        environ = {"RANK": str(rank), "WORLD_SIZE": str(nranks),
                                   "SYMMEM_TEST_RENDEZVOUS_DIR": rendezvous}
                        environ.update(environ_extra or {})
                        code = run_launched(parse_args(["--launched"] + list(argv), environ=environ))
                    except BaseException:  # noqa: BLE001
                        traceback.print_exc()
                    finally:
                        sys.stdout.flush()
                        sys.stderr.flush()
                        os._exit(code)
                pids.append(pid)
            for pid in pids:
                _, status = os.waitpid(pid, 0)
                codes.append(os.waitstatus_to_exitcode(status))
            for out in outs:
                out.seek(0)
                texts.append(out.read().decode(errors="replace"))
                out.close()
    finally:
        HOOKS.clear()
        HOOKS.update(saved)
        _FakeNccl.peer_timeout_s = 60.0
    return codes, texts


# ==== self-test (host only) =========================================================================
def self_test() -> int:
    checks = 0
    failures: List[str] = []

    def check(ok, what):
        nonlocal checks
        checks += 1
        if not ok:
            failures.append(what)
            print(f"{PROG} self-test: FAILED: {what}", flush=True)

    # bf16 and fp16 bit patterns, rounding, specials
    bf16 = {0.0: 0x0000, 1.0: 0x3F80, -1.0: 0xBF80, 2.0: 0x4000, -2.0: 0xC000, 0.5: 0x3F00,
            -8.0: 0xC100, 8.0: 0x4100, 3.0: 0x4040, 64.0: 0x4280, -64.0: 0xC280, 256.0: 0x4380,
            1.0 + 2 ** -8: 0x3F80, 1.0 + 3 * 2 ** -8: 0x3F82, 1.0 + 2 ** -8 + 2 ** -20: 0x3F81,
            math.inf: 0x7F80, -math.inf: 0xFF80, 3.0e38: 0x7F62}
    for value, bits in bf16.items():
        check(float_to_bf16_bits(value) == bits, f"bf16 bits of {value!r}: {float_to_bf16_bits(value):#06x} != {bits:#06x}")
    check(float_to_bf16_bits(-0.0) == 0x8000, "bf16 bits of -0.0")
    nan_bits = float_to_bf16_bits(math.nan)
    check((nan_bits & 0x7F80) == 0x7F80 and (nan_bits & 0x7F) != 0, f"bf16 NaN stays NaN ({nan_bits:#06x})")
    check(math.isnan(bf16_bits_to_float(0xFFFF)), "bf16 0xFFFF (the sentinel) decodes to NaN")
    fp16 = {0.0: 0x0000, 1.0: 0x3C00, -1.0: 0xBC00, -2.0: 0xC000, 0.5: 0x3800, -8.0: 0xC800, 64.0: 0x5400,
            256.0: 0x5C00, 65504.0: 0x7BFF, 1.0 + 2 ** -11: 0x3C00, 1.0 + 3 * 2 ** -11: 0x3C02}
    for value, bits in fp16.items():
        check(float_to_fp16_bits(value) == bits, f"fp16 bits of {value!r}: {float_to_fp16_bits(value):#06x} != {bits:#06x}")
    check(math.isnan(fp16_bits_to_float(0xFFFF)), "fp16 0xFFFF (the sentinel) decodes to NaN")
    check(math.isnan(struct.unpack("<f", b"\xff\xff\xff\xff")[0]), "fp32 0xFFFFFFFF (the sentinel) is NaN")
    for dtype in DTYPES:
        ints = list(range(-256, 257))
        data = encode(ints, dtype)
        check(len(data) == len(ints) * DTYPES[dtype][1], f"{dtype}: encoded size")
        check(decode(data, dtype) == [float(v) for v in ints], f"{dtype}: integers -256..256 round-trip exactly")
    check(encode([1.0, -8.0], "bfloat16") == bytes([0x80, 0x3F, 0x00, 0xC1]), "bf16 encoding is little-endian")
    check(encode([1.0], "float16") == bytes([0x00, 0x3C]), "fp16 encoding is little-endian")

    # contributions and expected sums: the tiled fast path equals the per-element formula
    for dtype in DTYPES:
        for n in (1, 2, 3, 16, 17, 18, 34, 35, 1001):
            for rank in (0, 1, 3, 31):
                for salt in (0, 5, 1001):
                    direct = encode([pattern_value(i, rank, salt) for i in range(n)], dtype)
                    check(contribution_bytes(n, dtype, rank, salt) == direct,
                          f"contribution {dtype} n={n} rank={rank} salt={salt}")
            for nranks in (1, 2, 3, 8, MAX_RANKS):
                for salt in (0, 7, 103):
                    sums = [sum(pattern_value(i, r, salt) for r in range(nranks)) for i in range(n)]
                    got = expected_bytes(n, dtype, nranks, salt)
                    check(got == encode(sums, dtype), f"expected {dtype} n={n} nranks={nranks} salt={salt}")
                    check(decode(got, dtype) == [float(s) for s in sums],
                          f"expected sums exact in {dtype} (n={n} nranks={nranks})")
    worst = max(abs(sum(pattern_value(i, r, s) for r in range(k)))
                for k in range(1, MAX_RANKS + 1) for i in range(PERIOD) for s in range(PERIOD))
    check(worst <= 256, f"every partial sum is an integer bf16 holds exactly (max |sum| {worst})")
    check({pattern_value(i, r, 0) for i in range(PERIOD) for r in range(2)} == set(range(-8, 9)),
          "contributions cover -8..8")
    check(contribution_bytes(5, "float32", 0, 0) != contribution_bytes(5, "float32", 1, 0), "ranks contribute differently")
    check(contribution_bytes(50, "float16", 0, 100) != contribution_bytes(50, "float16", 0, 101), "replays get fresh inputs")
    check(expected_bytes(3, "float32", 2, 0) == struct.pack("<3f", -13, 1, -2), "expected sums, two ranks, by hand")

    # sizes
    for quick in (False, True):
        for dtype in DTYPES:
            counts = counts_for(dtype, quick)
            esize = DTYPES[dtype][1]
            check(all(isinstance(c, int) and c > 0 for c in counts), f"{dtype}: counts positive")
            check({1, 3, 17, 1001, 4097} <= set(counts), f"{dtype} quick={quick}: 1 element and odd counts")
            check(any(KIB <= c * esize < MIB for c in counts) and any(c * esize >= MIB for c in counts),
                  f"{dtype} quick={quick}: KiB and MiB sizes")
            check(set(graph_counts_for(dtype, quick)) <= set(counts) and 1 in graph_counts_for(dtype, quick),
                  f"{dtype} quick={quick}: graph sizes")
        check(max(c * DTYPES[d][1] for d in DTYPES for c in counts_for(d, quick)) <= 16 * MIB, "at most 16 MiB")
    check(set(counts_for("bfloat16", True)) < set(counts_for("bfloat16", False)), "--quick is a subset")

    # arguments
    a = parse_args([], environ={})
    check((a.nranks, a.nccl_path, a.nccl_source, a.quick, a.self_test) == (1, "libnccl.so.2", "default", False, False),
          "defaults: 1 rank, libnccl.so.2")
    check((a.graph_replays, a.graph_calls, a.capture_mode, a.cudart) == (5, 4, "thread_local", None), "graph defaults")
    env = {"SGLANG_NCCL_SO_PATH": "/s/libnccl.so.2", "VLLM_NCCL_SO_PATH": "/v/libnccl.so.2"}
    check(parse_args(["--nccl", "/x/p.so"], environ=env).nccl_path == "/x/p.so", "--nccl wins over the environment")
    check(parse_args([], environ=env).nccl_source == "SGLANG_NCCL_SO_PATH", "SGLANG_NCCL_SO_PATH honoured")
    check(parse_args([], environ={"VLLM_NCCL_SO_PATH": "/v/l.so"}).nccl_path == "/v/l.so", "VLLM_NCCL_SO_PATH honoured")
    check(parse_args([], environ={"VLLM_NCCL_SO_PATH": ""}).nccl_path == "libnccl.so.2", "empty variable ignored")
    a = parse_args(["--quick", "--graph-replays", "7", "--nranks", "2", "--capture-mode", "relaxed",
                    "--cudart", "/c/libcudart.so.13", "--graph-calls", "3", "--timeout", "60"], environ={})
    check((a.quick, a.graph_replays, a.nranks, a.capture_mode, a.cudart, a.graph_calls, a.timeout)
          == (True, 7, 2, "relaxed", "/c/libcudart.so.13", 3, 60), "options parsed")
    check(parse_args(["--graph-replays", "0"], environ={}).graph_replays == 0, "--graph-replays 0 turns graphs off")
    check(parse_args(["--self-test"], environ={}).self_test, "--self-test parsed")
    for bad in (["--nranks", "0"], ["--nranks", str(MAX_RANKS + 1)], ["--nranks", "x"], ["--graph-replays", "-1"],
                ["--capture-mode", "strict"], ["--bogus"]):
        try:
            stderr, sys.stderr = sys.stderr, open(os.devnull, "w")
            try:
                parse_args(bad, environ={})
            finally:
                sys.stderr.close()
                sys.stderr = stderr
            check(False, f"{bad} rejected")
        except SystemExit as e:
            check(e.code == EXIT_USAGE, f"{bad} rejected with status 2")

    # libraries
    cands = cudart_candidates(None, environ={})
    check(cands[:3] == ["libcudart.so.13", "libcudart.so.12", "libcudart.so"], "libcudart names first")
    check(all(os.path.isabs(c) for c in cands[3:]), "then absolute paths")
    check(cudart_candidates("/my/libcudart.so", environ={}) == ["/my/libcudart.so"], "--cudart alone")
    check(decode_nccl_version(22803) == "2.28.3" and decode_nccl_version(21903) == "2.19.3"
          and decode_nccl_version(2804) == "2.8.4", "NCCL version codes")
    try:
        NCCLLibrary("/nonexistent/libnccl.so.2")
        check(False, "a missing library is reported")
    except NcclLoadError as e:
        check("/nonexistent/libnccl.so.2" in str(e), "a missing library is reported with its path")
    libc = ctypes.util.find_library("c")
    if libc:  # a library without NCCL's functions fails when the wrapper is built, not at the first call
        try:
            NCCLLibrary(libc)
            check(False, "a library without NCCL is refused")
        except NcclLoadError as e:
            check("ncclGetErrorString" in str(e), "a library without NCCL is refused when the wrapper is built")
    msg = nccl_error_message("ncclAllReduce", 5, "invalid usage", "bad stream")
    check(msg.startswith("ncclAllReduce failed: invalid usage") and "bad stream" in msg, "NCCL error messages")
    check(cuda_error_message("cudaMalloc", 2, "out of memory") == "cudaMalloc failed: out of memory (cudaError_t 2)",
          "CUDA error messages")

    # checks and pipes
    want = expected_bytes(40, "bfloat16", 2, 3)
    check(mismatch_report(want, want, "bfloat16")[0] == 0, "no mismatch on equal data")
    nbad, index, _, _ = mismatch_report(b"\xff\xff" + want[2:], want, "bfloat16")
    check((nbad, index) == (1, 0), "an unwritten (NaN) element is wrong")
    check(mismatch_report(struct.pack("<f", -0.0), struct.pack("<f", 0.0), "float32")[0] == 0, "-0 equals +0")
    check(mismatch_report(struct.pack("<2e", 1, 2), struct.pack("<2e", 1, 3), "float16")[:2] == (1, 1), "fp16 mismatch")
    r, w = os.pipe()
    uid = ncclUniqueId.from_buffer_copy(bytes(range(128)))
    write_frame(w, b"I", bytes(uid))
    write_frame(w, b"R", json.dumps({"checks": 3}).encode())
    os.close(w)
    tag, payload = read_frame(r)
    check(tag == b"I" and ncclUniqueId.from_buffer_copy(payload).internal[:] == uid.internal[:], "id through a pipe")
    tag, payload = read_frame(r)
    check(tag == b"R" and json.loads(payload) == {"checks": 3}, "result through a pipe")
    try:
        read_frame(r)
        check(False, "EOF detected")
    except EOFError:
        check(True, "EOF detected")
    os.close(r)
    fb = FrameBuffer()
    data = _FRAME.pack(b"I", 3) + b"abc" + _FRAME.pack(b"R", 2) + b"xy"
    frames = fb.feed(data[:5]) + fb.feed(data[5:9]) + fb.feed(data[9:])
    check(frames == [(b"I", b"abc"), (b"R", b"xy")], "frames reassembled from partial reads")
    check(ctypes.sizeof(ncclUniqueId) == 128, "ncclUniqueId is 128 bytes")
    check(summary_line(12, 0) == "pynccl_client: 12 checks, 0 wrong", "summary line")

    # the driver on host-only stand-ins: every step runs, right results pass, wrong ones are caught
    def summary_of(text):
        lines = [l for l in text.splitlines() if l.startswith(f"{PROG}: ") and " checks, " in l]
        return lines[-1] if lines else ""

    def checks_of(text):
        return int(summary_of(text).split()[1]) if summary_of(text) else 0

    code, text = dry_run(["--quick", "--graph-replays", "2"])
    check(code == EXIT_OK and summary_of(text).endswith(" 0 wrong"), f"dry run, 1 rank: status {code}\n{text}")
    check(checks_of(text) > 100, f"dry run, 1 rank: {checks_of(text)} checks")
    # The stand-in's ranks meet through files, slow for MiB messages: the forked runs stay small.
    small = ["--quick", "--graph-replays", "2", "--max-bytes", "65536", "--timeout", "120"]
    code, text = dry_run(small)
    n1 = checks_of(text)
    check(code == EXIT_OK and 0 < n1 < checks_of(dry_run(["--quick", "--graph-replays", "2"])[1]),
          f"dry run, --max-bytes: status {code}, {n1} checks")
    code, text = dry_run(small + ["--nranks", "2"], gpus=2)
    check(code == EXIT_OK and summary_of(text).endswith(" 0 wrong"), f"dry run, 2 forked ranks: status {code}\n{text}")
    check(checks_of(text) == 2 * n1, f"dry run, 2 forked ranks: {checks_of(text)} checks, twice the 1-rank run's {n1}")
    code, text = dry_run(small + ["--nranks", "3"], gpus=2)
    check(code == EXIT_SKIP and "SKIPPED" in text, f"dry run: 3 ranks on 2 GPUs skipped (status {code})")
    code, text = dry_run(["--quick"], gpus=0)
    check(code == EXIT_SKIP and "SKIPPED" in text, f"dry run without a GPU skipped (status {code})")
    for flaw in ("skip-out-of-place", "off-by-one-in-graph"):
        code, text = dry_run(small, flaw=flaw)
        check(code == EXIT_FAIL and "WRONG" in text and not summary_of(text).endswith(" 0 wrong"),
              f"dry run with flaw {flaw} fails (status {code})")
    code, text = dry_run(small, flaw="fail-destroy")
    check(code == EXIT_FAIL and "ncclCommDestroy failed: internal error" in text,
          f"dry run: an NCCL error names the function and its error string (status {code})")
    code, text = dry_run(small + ["--nranks", "2"], gpus=2, flaw="fail-destroy")
    check(code == EXIT_FAIL and "ncclCommDestroy failed" in text, f"dry run, 2 ranks: an NCCL error fails (status {code})")

    # one rank of N under a launcher: arguments, the id files, the driver on the stand-ins
    launched_env = {"RANK": "1", "WORLD_SIZE": "4", "SYMMEM_TEST_RENDEZVOUS_DIR": "/tmp/rdv"}
    a = parse_args(["--launched"], environ=launched_env)
    check((a.launched, a.rank, a.world, a.device, a.rendezvous, a.expect_path, a.abort_after_first,
           a.wait_async_error, a.keep_calling) == (True, 1, 4, 0, "/tmp/rdv", "any", False, 0, 0),
          "--launched: rank and world from the environment, GPU 0")
    a = parse_args(["--launched", "--device", "2", "--expect-path", "symmetric", "--abort-after-first",
                    "--wait-async-error", "30", "--stall-timeout", "20", "--keep-calling", "5"], environ=launched_env)
    check((a.device, a.expect_path, a.abort_after_first, a.wait_async_error, a.stall_timeout, a.keep_calling)
          == (2, "symmetric", True, 30, 20, 5), "launched options parsed")
    check(parse_args(["--launched", "--delay-first", "0:60"], environ=launched_env).delay_first == (0, 60),
          "--delay-first RANK:S parsed")
    check(parse_args(["--launched"], environ={"RANK": "0", "WORLD_SIZE": "1"}).rendezvous == "",
          "one launched rank needs no rendezvous folder")
    check(parse_args(["--device", "1"], environ={}).device == 1, "--device with one rank")
    check(parse_args(["--wait-async-error", "5"], environ={}).wait_async_error == 5, "--wait-async-error alone")
    bad_launched = [
        (["--launched"], {}), (["--launched"], {"RANK": "0"}), (["--launched"], {"RANK": "x", "WORLD_SIZE": "2"}),
        (["--launched"], {"RANK": "2", "WORLD_SIZE": "2", "SYMMEM_TEST_RENDEZVOUS_DIR": "/r"}),
        (["--launched"], {"RANK": "-1", "WORLD_SIZE": "2", "SYMMEM_TEST_RENDEZVOUS_DIR": "/r"}),
        (["--launched"], {"RANK": "0", "WORLD_SIZE": "0"}),
        (["--launched"], {"RANK": "0", "WORLD_SIZE": "2"}),  # no rendezvous folder
        (["--launched", "--nranks", "2"], launched_env), (["--launched", "--device", "-1"], launched_env),
        (["--launched", "--expect-path", "fast"], launched_env),
        (["--launched", "--abort-after-first"], {"RANK": "0", "WORLD_SIZE": "1"}),
        (["--abort-after-first"], {}), (["--keep-calling", "3"], {}), (["--nranks", "2", "--device", "0"], {}),
        (["--launched", "--wait-async-error", "-1"], launched_env), (["--delay-first", "0:5"], {}),
        (["--launched", "--delay-first", "0"], launched_env), (["--launched", "--delay-first", "a:5"], launched_env)]
    for bad, environ in bad_launched:
        try:
            stderr, sys.stderr = sys.stderr, open(os.devnull, "w")
            try:
                parse_args(bad, environ=environ)
            finally:
                sys.stderr.close()
                sys.stderr = stderr
            check(False, f"{bad} with {environ} rejected")
        except SystemExit as e:
            check(e.code == EXIT_USAGE, f"{bad} with {environ} rejected with status 2")
    import tempfile
    with tempfile.TemporaryDirectory(prefix="pynccl-ids-") as d:
        zero, one = FileChannel(d, 0, 1), FileChannel(d, 1, 1)
        uids = [ncclUniqueId.from_buffer_copy(bytes((i + k) % 256 for i in range(128))) for k in (1, 2)]
        for uid in uids:
            zero.publish_id(uid)
        check(sorted(os.listdir(d)) == ["uid-1", "uid-2"], f"ids written whole, no temporary left: {os.listdir(d)}")
        check([one.receive_id().internal[:] for _ in uids] == [u.internal[:] for u in uids], "ids read back in order")
        started = time.monotonic()
        try:
            one.receive_id()
            check(False, "a missing id is reported")
        except RuntimeError as e:
            check("no unique id from rank 0" in str(e) and "uid-3" in str(e) and time.monotonic() - started < 5,
                  f"a missing id ends the wait with a message: {e}")
        with open(os.path.join(d, "uid-4"), "wb") as f:
            f.write(b"short")
        try:
            one.receive_id()
            check(False, "a short id file is refused")
        except RuntimeError as e:
            check("not a 128-byte unique id" in str(e), "a short id file is refused")

    def rank_summary(text, rank):
        lines = [l for l in text.splitlines() if l.startswith(f"{PROG}[rank {rank}]: ") and " checks, " in l]
        return lines[-1] if lines else ""

    def rank_checks(text, rank):
        line = rank_summary(text, rank)
        return int(line.split(": ")[1].split()[0]) if line else 0

    codes, texts = dry_run_launched(small, 2)
    check(codes == [0, 0] and all(rank_summary(t, r).endswith(f" 0 wrong ({NO_LATENCY})") for r, t in enumerate(texts)),
          f"dry run, 2 launched ranks: {codes}\n{texts}")
    check(rank_checks(texts[0], 0) == n1 and rank_checks(texts[1], 1) == n1,
          f"dry run, 2 launched ranks: as many checks each as one rank alone ({n1})")
    check(all("expected path: any" in t for t in texts), "the expected path is printed")
    codes, texts = dry_run_launched(small + ["--device", "1"], 2)
    check(codes == [EXIT_SKIP] * 2 and all("SKIPPED: needs GPU 1" in t for t in texts),
          f"dry run: launched on a GPU that is not there is skipped ({codes})")
    codes, texts = dry_run_launched(small, 3, flaw="skip-out-of-place")
    check(all(c == EXIT_FAIL for c in codes) and all("WRONG" in t for t in texts),
          f"dry run, 3 launched ranks, a flaw: every rank fails ({codes})")
    for n in (2, 3):
        codes, texts = dry_run_launched(["--abort-after-first", "--wait-async-error", "20"], n)
        check(codes == [0] * n, f"dry run, --abort-after-first, {n} ranks: every rank exits 0 ({codes})\n{texts}")
        check("aborted the first communicator" in texts[0], "rank 0 aborts")
        check(all("while rank 0 aborted: saw an error: ncclCommGetAsyncError returned 6" in t for t in texts[1:]),
              f"the others see the remote error ({texts[1:]})")
    codes, texts = dry_run_launched(small + ["--keep-calling", "1"], 2)
    check(codes == [0, 0] and all("kept calling: " in t for t in texts)
          and len({t.split("kept calling: ")[1].split()[0] for t in texts}) == 1,
          f"dry run, --keep-calling: both ranks make the same number of calls ({codes})")

    # --scenario: arguments
    a = parse_args(["--launched"], environ=launched_env)
    check((a.scenario, a.comms, a.stall_after) == (None, DEFAULT_COMMS, DEFAULT_STALL_AFTER),
          "no --scenario: the existing checks; --comms 200 and --stall-after 3 by default")
    for name in SCENARIOS:
        check(parse_args(["--launched", "--scenario", name], environ=launched_env).scenario == name,
              f"--scenario {name} parsed")
    a = parse_args(["--launched", "--scenario", "many-comms", "--comms", "60"], environ=launched_env)
    check((a.scenario, a.comms) == ("many-comms", 60), "--comms parsed")
    a = parse_args(["--launched", "--scenario", "timeout", "--stall-after", "5", "--stall-timeout", "20",
                    "--timeout", "180"], environ=launched_env)
    check((a.scenario, a.stall_after, a.stall_timeout, a.timeout) == ("timeout", 5, 20, 180),
          "--stall-after parsed")
    check(parse_args(["--launched", "--scenario", "many-comms"], environ={"RANK": "0", "WORLD_SIZE": "1"}).world == 1,
          "a scenario other than timeout runs on one rank")
    bad_scenario = [
        (["--scenario", "many-comms"], {}), (["--launched", "--scenario", "bogus"], launched_env),
        (["--launched", "--scenario", "many-comms", "--comms", "0"], launched_env),
        (["--launched", "--comms", "5"], launched_env),
        (["--launched", "--scenario", "nonblocking", "--comms", "5"], launched_env),
        (["--launched", "--stall-after", "2"], launched_env),
        (["--launched", "--scenario", "timeout", "--stall-after", "0"], launched_env),
        (["--launched", "--scenario", "many-comms", "--stall-after", "2"], launched_env),
        (["--launched", "--scenario", "timeout"], {"RANK": "0", "WORLD_SIZE": "1"}),
        (["--launched", "--scenario", "timeout", "--stall-timeout", "20", "--timeout", "60"], launched_env),
        (["--launched", "--scenario", "mixed-eager-graph", "--keep-calling", "5"], launched_env),
        (["--launched", "--scenario", "nonblocking", "--abort-after-first"], launched_env)]
    for bad, environ in bad_scenario:
        try:
            stderr, sys.stderr = sys.stderr, open(os.devnull, "w")
            try:
                parse_args(bad, environ=environ)
            finally:
                sys.stderr.close()
                sys.stderr = stderr
            check(False, f"{bad} with {environ} rejected")
        except SystemExit as e:
            check(e.code == EXIT_USAGE, f"{bad} with {environ} rejected with status 2")

    # ncclConfig_t: the layout of nccl.h 2.28 (x86-64 and aarch64 Linux: 8-byte size_t and pointers)
    want_offsets = {"size": 0, "magic": 8, "version": 12, "blocking": 16, "cgaClusterSize": 20, "minCTAs": 24,
                    "maxCTAs": 28, "netName": 32, "splitShare": 40, "trafficClass": 44, "commName": 48,
                    "collnetEnable": 56, "CTAPolicy": 60, "shrinkShare": 64, "nvlsCTAs": 68,
                    "nChannelsPerNetPeer": 72, "nvlinkCentricSched": 76}
    got_offsets = {name: getattr(ncclConfig_t, name).offset for name, _ in ncclConfig_t._fields_}
    check(got_offsets == want_offsets, f"ncclConfig_t offsets: {got_offsets}")
    check(ctypes.sizeof(ncclConfig_t) == 80 and ctypes.alignment(ncclConfig_t) == 8,
          f"ncclConfig_t is 80 bytes, 8-aligned ({ctypes.sizeof(ncclConfig_t)})")
    check(NCCL_CONFIG_UNDEF_INT == -2147483648, "NCCL_CONFIG_UNDEF_INT is INT_MIN")
    config = make_config(22803, blocking=0)
    raw = bytes(config)
    undef = struct.pack("<i", NCCL_CONFIG_UNDEF_INT)
    want = (struct.pack("<QII", 80, 0xCAFEBEEF, 22803) + struct.pack("<i", 0) + undef * 3 + b"\0" * 8 + undef * 2
            + b"\0" * 8 + undef * 6)
    check(len(want) == 80 and raw == want, f"ncclConfig_t packed as NCCL_CONFIG_INITIALIZER with blocking = 0: {raw.hex()}")
    check(bytes(make_config(22809)) == struct.pack("<QII", 80, 0xCAFEBEEF, 22809) + undef * 4 + b"\0" * 8
          + undef * 2 + b"\0" * 8 + undef * 6, "ncclConfig_t with nothing set: every field undefined")
    check(make_config(22809, blocking=1, minCTAs=2).minCTAs == 2, "ncclConfig_t fields set by name")
    try:
        make_config(22809, magic=1)
        check(False, "ncclConfig_t's fixed fields cannot be set")
    except ValueError:
        check(True, "ncclConfig_t's fixed fields cannot be set")

    # --scenario: the driver on the stand-ins
    def scenario_lines(texts, name):
        return [next((l for l in t.splitlines() if f": scenario {name}: " in l and " checks, " in l), "")
                for t in texts]

    for name, extra, n in (("many-comms", ["--comms", "12"], 2), ("many-comms", ["--comms", "8"], 4),
                           ("nonblocking", [], 2), ("two-comms-one-group", [], 2), ("mixed-eager-graph", [], 3)):
        codes, texts = dry_run_launched(["--scenario", name] + extra, n)
        lines = scenario_lines(texts, name)
        check(codes == [0] * n and all(l.endswith(f": PASS ({NO_LATENCY})") and " 0 wrong" in l for l in lines),
              f"dry run, --scenario {name}, {n} ranks: every rank passes ({codes})\n{texts}")
    codes, texts = dry_run_launched(["--scenario", "many-comms", "--comms", "12"], 2)
    check("12 communicators (3 split into children of 1 rank(s), 2 ended with ncclCommAbort" in texts[0],
          f"many-comms: every 4th split, every 5th aborted: {scenario_lines(texts, 'many-comms')}")
    codes, texts = dry_run_launched(["--scenario", "many-comms", "--comms", "51"], 2)
    check(codes == [0, 0] and all(" 51 communicators " in l for l in scenario_lines(texts, "many-comms"))
          and all(": 50 of 51 communicators done (12 split, 10 aborted), 0 wrong" in t for t in texts),
          f"many-comms: 51 communicators, a progress line after 50 ({codes})")
    codes, texts = dry_run_launched(["--scenario", "nonblocking"], 2)
    check("ncclCommInitRankConfig returned ncclInProgress" in texts[0], "nonblocking: init in progress, then polled")
    codes, texts = dry_run_launched(["--scenario", "mixed-eager-graph"], 2, flaw="off-by-one-in-graph")
    check(codes == [EXIT_FAIL] * 2 and all(": FAIL (" in l for l in scenario_lines(texts, "mixed-eager-graph")),
          f"dry run, mixed-eager-graph with a wrong graph result fails ({codes})")
    codes, texts = dry_run_launched(["--scenario", "two-comms-one-group"], 2, flaw="skip-out-of-place")
    check(codes == [EXIT_FAIL] * 2, f"dry run, two-comms-one-group with an unwritten output fails ({codes})")
    stall = ["--scenario", "timeout", "--stall-after", "2", "--stall-timeout", "1", "--wait-async-error", "1",
             "--timeout", "60"]  # the others' bound: 2 s; the last rank sleeps 2 s more
    for n in (2, 3):
        codes, texts = dry_run_launched(stall, n, peer_timeout_s=0.5)
        lines = scenario_lines(texts, "timeout")
        check(codes == [0] * n and all(l.endswith(f": PASS ({NO_LATENCY})") for l in lines),
              f"dry run, --scenario timeout, {n} ranks: every rank passes ({codes})\n{texts}")
        check(all("saw an error" in l and "ncclCommGetAsyncError returned" in l for l in lines[:-1])
              and "slept 4 s and aborted" in lines[-1], f"timeout: the others saw the error, the last rank slept: {lines}")
    codes, texts = dry_run_launched(stall, 2, flaw="no-timeout-error", peer_timeout_s=0.5)
    check(codes == [EXIT_FAIL, 0] and "reported no error" in texts[0] and ": FAIL (" in scenario_lines(texts, "timeout")[0],
          f"dry run, timeout: invalid results without an error fail ({codes})\n{texts[0]}")

    print(f"{PROG} self-test: {checks} checks, {len(failures)} failed", flush=True)
    return EXIT_OK if not failures else EXIT_FAIL


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.self_test:
        return self_test()
    # NVLink multicast stays off unless the caller decides otherwise (it can take shared hosts down).
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    if args.launched:
        return run_launched(args)
    if args.nranks == 1:
        return run_single(args)
    return run_forked(args)


if __name__ == "__main__":
    sys.exit(main())

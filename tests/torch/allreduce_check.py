#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""torch.distributed all_reduce through NCCL, checked bit for bit and timed.

Run it twice, once without and once with NCCL_TUNER_PLUGIN=<path to libnccl-tuner-symmem.so>: the
results must be identical (exact integer-valued data), and the CUDA-graph latency shows what the plugin
changes for an unmodified PyTorch program. One process per GPU, spawned here.

  python3 tests/torch/allreduce_check.py --out results.json [--world 2]

One rank of N under a launcher, every rank on GPU 0 (testing only: the ranks time-slice the GPU, so
nothing is timed here), rank and world from RANK and WORLD_SIZE, env:// rendezvous:

  tests/multiproc/launch_ranks.py --nranks 4 --timeout 600 -- python3 tests/torch/allreduce_check.py --launched

It checks all_reduce eagerly, with async_op=True, coalesced, captured in a CUDA graph and on a second
group, bf16/fp16/fp32, odd sizes, exact values, and prints `allreduce_check[rank r]: N checks, W wrong`.

With --launched --second-nccl, two NCCLs serve one process, as when vLLM or SGLang point pynccl at
another libnccl (VLLM_NCCL_SO_PATH) while PyTorch keeps its own: after the checks above, with the
process group still up, the same process runs the pynccl-style client's checks
(tests/clients/pynccl_client.py) on the libnccl.so.2 that SYMMEM_TEST_SECOND_NCCL names, loaded by
path. Skipped (77) where that variable is unset.
Exit status: 0 right, 1 a wrong value or an error, 77 skipped (no torch or no GPU), 2 bad arguments.
"""
import argparse
import datetime
import faulthandler
import gc
import importlib.util
import inspect
import json
import os
import sys
import time
import traceback

NO_LATENCY = "shared GPU: correctness only, no latency figures"


def expected(n, dtype, world, torch, device):
    # Rank r contributes ((i * 7 + r * 3) % 17) - 8: small integers, exact in bf16/fp16/fp32 sums.
    i = torch.arange(n, device=device, dtype=torch.int64)
    total = torch.zeros(n, device=device, dtype=torch.int64)
    for r in range(world):
        total += ((i * 7 + r * 3) % 17) - 8
    return total.to(dtype)


def contribution(n, dtype, rank, torch, device, salt=0):
    i = torch.arange(n, device=device, dtype=torch.int64)
    return (((i * 7 + rank * 3 + salt) % 17) - 8).to(dtype)


def worker(rank, world, args, queue):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
    report = {"rank": rank, "checks": [], "latency_us": {}, "errors": []}
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
    counts = [1, 3, 7, 8, 1023, 4097, 65537, 1 << 20]
    try:
        for name, dt in dtypes.items():
            for n in counts:
                # Eager, out of place semantics do not exist in all_reduce: it is in place.
                x = contribution(n, dt, rank, torch, device)
                dist.all_reduce(x)
                ok = torch.equal(x, expected(n, dt, world, torch, device))
                report["checks"].append({"mode": "eager", "dtype": name, "count": n, "ok": bool(ok)})
                # Graph: capture once, replay with new inputs copied into the static tensor.
                static = torch.zeros(n, device=device, dtype=dt)
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    dist.all_reduce(static)  # warm-up outside the capture
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    dist.all_reduce(static)
                good = True
                for rep in range(5):
                    static.copy_(contribution(n, dt, rank, torch, device, salt=rep))
                    g.replay()
                    exp = torch.zeros(n, device=device, dtype=torch.int64)
                    i = torch.arange(n, device=device, dtype=torch.int64)
                    for r in range(world):
                        exp += ((i * 7 + r * 3 + rep) % 17) - 8
                    good &= bool(torch.equal(static, exp.to(dt)))
                report["checks"].append({"mode": "graph", "dtype": name, "count": n, "ok": good})
                del g
        # Latency under a graph of 100 all-reduces, bf16, 8 B .. 64 KiB.
        for nbytes in [8, 256, 4096, 16384, 65536, 262144]:
            n = nbytes // 2
            t = torch.ones(n, device=device, dtype=torch.bfloat16)
            dist.all_reduce(t)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(100):
                    dist.all_reduce(t)
            times = []
            for _ in range(7):
                dist.barrier()
                torch.cuda.synchronize()
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                g.replay()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1000.0 / 100)
            times.sort()
            report["latency_us"][str(nbytes)] = times[len(times) // 2]
            del g
    except Exception as e:  # noqa: BLE001 - reported to the parent, which fails the run
        report["errors"].append(repr(e))
    torch.cuda.synchronize()
    dist.destroy_process_group()
    queue.put(report)


class LaunchedRank:
    """One rank of WORLD_SIZE, all on GPU 0: exact checks only, nothing timed."""

    def __init__(self, rank, world, torch, dist, verbose=False):
        self.rank, self.world, self.torch, self.dist, self.verbose = rank, world, torch, dist, verbose
        self.device = torch.device("cuda", 0)
        self.checks = self.wrong = 0
        self.prefix = f"allreduce_check[rank {rank}]"

    def say(self, text):
        print(f"{self.prefix}: {text}", flush=True)

    def value(self, n, dt, ranks, salt):
        """The exact sum over `ranks` of what each contributes (contribution() with that salt)."""
        torch = self.torch
        i = torch.arange(n, device=self.device, dtype=torch.int64)
        total = torch.zeros(n, device=self.device, dtype=torch.int64)
        for r in ranks:
            total += ((i * 7 + r * 3 + salt) % 17) - 8
        return total.to(dt)

    def mine(self, n, dt, salt):
        return contribution(n, dt, self.rank, self.torch, self.device, salt=salt)

    def check(self, what, got, want):
        self.checks += 1
        if self.torch.equal(got, want):
            if self.verbose:
                self.say(f"ok: {what}")
            return
        self.wrong += 1
        bad = (got != want).nonzero()
        first = int(bad[0][0]) if len(bad) else -1
        self.say(f"WRONG: {what}: {len(bad)} of {got.numel()} elements differ, first at {first}: "
                 f"got {got[first].item() if first >= 0 else '?'}, want {want[first].item() if first >= 0 else '?'}")

    def run(self, dtypes, counts):
        torch, dist = self.torch, self.dist
        everyone = list(range(self.world))
        # A second group: the even ranks when there are 4 or more (a smaller communicator), else everyone.
        members = everyone[::2] if self.world >= 4 else everyone
        second = dist.new_group(ranks=members)  # every rank calls new_group, members or not
        salt = 0
        for name, dt in dtypes.items():
            for n in counts:
                salt = (salt + 1) % 17
                x = self.mine(n, dt, salt)
                dist.all_reduce(x)
                self.check(f"eager {name} count {n}", x, self.value(n, dt, everyone, salt))
                x = self.mine(n, dt, salt + 1)
                work = dist.all_reduce(x, async_op=True)
                work.wait()
                self.check(f"async_op {name} count {n}", x, self.value(n, dt, everyone, salt + 1))
            # the second group in between the default group's calls
            if self.rank in members:
                x = self.mine(4097, dt, 5)
                dist.all_reduce(x, group=second)
                self.check(f"second group {members} {name} count 4097", x, self.value(4097, dt, members, 5))
            self.coalesced(name, dt, everyone)
            self.graph(name, dt, everyone, [c for c in counts if c in (1, 1001, 4097)] or counts[:1])
        if self.rank in members:
            x = self.mine(1001, torch.float32, 9)
            dist.all_reduce(x, group=second)
            self.check(f"second group {members} float32 count 1001, after the graphs", x,
                       self.value(1001, torch.float32, members, 9))
        torch.cuda.synchronize()

    def coalesced(self, name, dt, everyone):
        dist = self.dist
        sizes = [1, 17, 4097]
        xs = [self.mine(n, dt, 11 + k) for k, n in enumerate(sizes)]
        manager = getattr(dist, "_coalescing_manager", None)
        if manager is not None:
            params = inspect.signature(manager).parameters
            kwargs = {"device": self.device} if "device" in params else {}
            if "async_ops" in params:
                kwargs["async_ops"] = True
            with manager(**kwargs) as cm:
                for x in xs:
                    dist.all_reduce(x)
            if kwargs.get("async_ops") and cm is not None:
                cm.wait()
            how = "_coalescing_manager"
        elif hasattr(dist, "all_reduce_coalesced"):
            dist.all_reduce_coalesced(xs)
            how = "all_reduce_coalesced"
        else:
            if self.rank == 0:
                self.say("coalesced all-reduces skipped: this torch has neither torch.distributed."
                         "_coalescing_manager nor all_reduce_coalesced")
            return
        for k, (n, x) in enumerate(zip(sizes, xs)):
            self.check(f"coalesced ({how}) {name} count {n}", x, self.value(n, dt, everyone, 11 + k))

    def graph(self, name, dt, everyone, counts):
        torch, dist = self.torch, self.dist
        for n in counts:
            static = torch.zeros(n, device=self.device, dtype=dt)
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                dist.all_reduce(static)  # warm-up outside the capture
            torch.cuda.current_stream().wait_stream(s)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                dist.all_reduce(static)
            try:
                for rep in range(3):
                    static.copy_(self.mine(n, dt, rep + 2))
                    g.replay()
                    self.check(f"graph {name} count {n} replay {rep}", static, self.value(n, dt, everyone, rep + 2))
            finally:
                torch.cuda.synchronize()
                del g  # graph execs go before the communicators are destroyed
                gc.collect()


def run_pynccl_on(path, args):
    """The pynccl-style client's launched checks, in this process, on the NCCL at `path`."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "pynccl_client", os.path.join(here, "..", "clients", "pynccl_client.py"))
    client = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(client)
    return client.main(["--launched", "--nccl", path, "--quick", "--graph-replays", "2", "--graph-calls", "2",
                        "--max-bytes", "65536", "--expect-path", "symmetric", "--timeout", str(int(args.timeout)),
                        "--stall-timeout", "120"])


def nccl_version(torch):
    v = torch.cuda.nccl.version()
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def run_launched(args):
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        print(f"allreduce_check: SKIPPED: torch is not importable ({e})", flush=True)
        return 77
    try:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    except (KeyError, ValueError):
        print("allreduce_check: --launched needs RANK and WORLD_SIZE (start it with tests/multiproc/launch_ranks.py)",
              file=sys.stderr)
        return 2
    if not 0 <= rank < world:
        print(f"allreduce_check: RANK {rank} is not in [0, {world - 1}]", file=sys.stderr)
        return 2
    prefix = f"allreduce_check[rank {rank}]"
    second_nccl = ""
    if args.second_nccl:
        second_nccl = os.environ.get("SYMMEM_TEST_SECOND_NCCL", "")
        if not second_nccl or not os.path.isfile(second_nccl):
            print(f"{prefix}: SKIPPED: --second-nccl needs SYMMEM_TEST_SECOND_NCCL, the path of another "
                  f"libnccl.so.2 than torch's (now: {second_nccl or 'unset'})", flush=True)
            return 77
    if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
        print(f"{prefix}: SKIPPED: no GPU visible to torch", flush=True)
        return 77
    for var, value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                       ("NVSHMEM_DISABLE_NVLS", "1")):
        os.environ.setdefault(var, value)
    faulthandler.dump_traceback_later(args.timeout, exit=True)
    torch.cuda.set_device(0)
    r = LaunchedRank(rank, world, torch, dist, args.verbose)
    print(f"{prefix}: rank {rank} of {world} on GPU 0, torch {torch.__version__}, "
          f"NCCL {nccl_version(torch)} ({NO_LATENCY})", flush=True)
    errors = []
    try:
        dist.init_process_group("nccl", init_method="env://", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=args.timeout), device_id=r.device)
        dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
        counts = [1, 3, 17, 1001, 4097, 65537] if not args.quick else [1, 3, 1001, 4097]
        r.run(dtypes, counts)
        if second_nccl:
            status = run_pynccl_on(second_nccl, args)
            if status != 0:
                errors.append(f"the pynccl-style client on {second_nccl} exited {status}")
                r.say(f"ERROR: {errors[-1]}")
    except Exception:  # noqa: BLE001 - every failure fails the run
        errors.append(traceback.format_exc())
        r.say(f"ERROR: {errors[-1]}")
    try:
        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # noqa: BLE001
        errors.append(traceback.format_exc())
        r.say(f"ERROR in destroy_process_group: {errors[-1]}")
    faulthandler.cancel_dump_traceback_later()
    print(f"{prefix}: {r.checks} checks, {r.wrong} wrong ({NO_LATENCY})", flush=True)
    if errors:
        print(f"{prefix}: FAILED: {len(errors)} error(s)", flush=True)
    return 0 if not errors and not r.wrong and r.checks else 1


def main():
    parser = argparse.ArgumentParser(prog="allreduce_check")
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--out", help="where the report goes (required without --launched)")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--launched", action="store_true",
                        help="one rank of $WORLD_SIZE started by a launcher, every rank on GPU 0; no timing")
    parser.add_argument("--quick", action="store_true", help="with --launched: fewer sizes")
    parser.add_argument("--verbose", "-v", action="store_true", help="with --launched: print every check")
    parser.add_argument("--second-nccl", action="store_true",
                        help="with --launched: then the pynccl-style client on $SYMMEM_TEST_SECOND_NCCL, in this process")
    args = parser.parse_args()
    if args.launched:
        sys.exit(run_launched(args))
    if not args.out:
        parser.error("--out is required (or --launched)")
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"allreduce_check: SKIPPED: torch is not importable ({e})", flush=True)
        sys.exit(77)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    for var in ("NCCL_NVLS_ENABLE", "NVSHMEM_DISABLE_NVLS"):
        os.environ[var] = "0" if var == "NCCL_NVLS_ENABLE" else "1"
    os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, args.world, args, queue)) for r in range(args.world)]
    for p in procs:
        p.start()
    reports = []
    deadline = time.time() + args.timeout
    try:
        for _ in procs:
            reports.append(queue.get(timeout=max(1.0, deadline - time.time())))
    except Exception:  # noqa: BLE001
        print("allreduce_check: ranks did not finish in time", file=sys.stderr)
    for p in procs:
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
    reports.sort(key=lambda r: r["rank"])
    with open(args.out, "w") as f:
        json.dump({"plugin": os.environ.get("NCCL_TUNER_PLUGIN", ""), "reports": reports}, f, indent=1)
    failed = [c for r in reports for c in r["checks"] if not c["ok"]]
    errors = [e for r in reports for e in r["errors"]]
    print(f"allreduce_check: {len(reports)} ranks, {sum(len(r['checks']) for r in reports)} checks, "
          f"{len(failed)} wrong, {len(errors)} errors")
    if reports:
        print("latency (us, graph, bf16):", json.dumps(reports[0]["latency_us"]))
    ok = len(reports) == args.world and not failed and not errors
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

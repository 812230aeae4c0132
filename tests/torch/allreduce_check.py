#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""torch.distributed all_reduce through NCCL, checked bit for bit and timed.

Run it twice, once without and once with NCCL_TUNER_PLUGIN=<path to libnccl-tuner-symmem.so>: the
results must be identical (exact integer-valued data), and the CUDA-graph latency shows what the plugin
changes for an unmodified PyTorch program. One process per GPU, spawned here.

  python3 tests/torch/allreduce_check.py --out results.json [--world 2]
"""
import argparse
import json
import os
import sys
import time


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--out", required=True)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
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

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""nccl-tests-configs/run.sh with NCCL_TESTS_MPI=N, on CPU: a stand-in mpirun (written here) checks its
options, runs mpi_rank_env.sh once per rank with OMPI_COMM_WORLD_RANK set and records what each rank
got; the stand-in all_reduce_perf of nccl-tests-configs/testdata prints recorded logs."""
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.normpath(os.path.join(HERE, "..", "..", "nccl-tests-configs"))

FAKE_MPIRUN = r'''#!/usr/bin/env python3
import json, os, subprocess, sys
argv = sys.argv[1:]
record = {"argv": argv, "ranks": []}
i, np_, exported = 0, None, []
while i < len(argv) and argv[i].startswith("-"):
    if argv[i] == "-np":
        np_ = int(argv[i + 1]); i += 2
    elif argv[i] == "-x":
        exported.append(argv[i + 1]); i += 2
    elif argv[i] in ("--bind-to", "--mca"):
        i += 2 if argv[i] == "--bind-to" else 3
    else:
        i += 1
record["np"], record["exported"], record["command"] = np_, exported, argv[i:]
shim = [sys.executable, "-c", "import json, os, sys; "
        "keys = ('NCCL_HOSTID', 'NCCL_TESTS_DEVICE', 'NCCL_SOCKET_IFNAME', 'NCCL_IB_DISABLE', "
        "'SYMMEM_TEST_SHARED_GPU', 'NCCL_TUNER_PLUGIN', 'CASE_VAR'); "
        "open(os.environ['FAKE_MPI_RECORD'] + '.rank' + os.environ['OMPI_COMM_WORLD_RANK'], 'w')"
        ".write(json.dumps({k: os.environ.get(k) for k in keys})); os.execvp(sys.argv[1], sys.argv[1:])"]
status = 0
for rank in range(np_):
    env = dict(os.environ, OMPI_COMM_WORLD_RANK=str(rank))
    out = None if rank == 0 else subprocess.DEVNULL  # rank 0 prints the table, as nccl-tests does
    cmd = [argv[i]] + shim + argv[i + 1:]  # mpi_rank_env.sh, then the shim that records, then the binary
    status |= subprocess.call(cmd, env=env, stdout=out)
with open(os.environ["FAKE_MPI_RECORD"] + "." + os.environ["NCCL_TUNER_PLUGIN"].replace("/", "_"), "w") as f:
    json.dump(record, f)
sys.exit(status)
'''


def load(path):
    with open(path) as f:
        return json.load(f)


class RunShMpiMode(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="run-sh-mpi-")
        self.dir = self.tmp.name
        self.mpirun = os.path.join(self.dir, "mpirun")
        with open(self.mpirun, "w") as f:
            f.write(FAKE_MPIRUN)
        os.chmod(self.mpirun, os.stat(self.mpirun).st_mode | stat.S_IXUSR)
        self.cases = os.path.join(self.dir, "cases.txt")
        with open(self.cases, "w") as f:
            f.write("two-gpus FAKE_STOCK_LOG=latency-stock.log FAKE_PLUGIN_LOG=latency-plugin.log CASE_VAR=x "
                    "all_reduce_perf -b 8 -e 64M -f 2 -c 1 -G 100 -n 20 -g 2\n"
                    "threads FAKE_STOCK_LOG=clean.log FAKE_PLUGIN_LOG=clean.log all_reduce_perf -b 8 -e 64M -t 2 -g 1\n")
        self.record = os.path.join(self.dir, "record")

    def tearDown(self):
        self.tmp.cleanup()

    def run_sh(self, np_="3", extra_env=None):
        env = dict(os.environ, NCCL_TESTS_DIR=os.path.join(CONFIGS, "testdata", "fake-nccl-tests"),
                   SYMMEM_PLUGIN=os.path.join(CONFIGS, "run.sh"),  # any file: the stand-ins load nothing
                   NCCL_TESTS_CASES=self.cases, NCCL_TESTS_TIMEOUT="30", NCCL_TESTS_OUT=os.path.join(self.dir, "out"),
                   NCCL_TESTS_MPI=np_, MPIRUN=self.mpirun, FAKE_MPI_RECORD=self.record)
        env.pop("SYMMEM_TEST_SHARED_GPU", None)
        env.update(extra_env or {})
        return subprocess.run(["bash", os.path.join(CONFIGS, "run.sh")], env=env, capture_output=True, text=True,
                              timeout=100)

    def test_each_case_runs_under_mpirun_one_gpu_per_process(self):
        p = self.run_sh()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("3 processes on GPU 0", p.stdout)
        self.assertIn("nothing measured this way is a latency figure", p.stdout.splitlines()[-2])
        with open(os.path.join(self.dir, "out", "summary.txt")) as f:
            self.assertIn("nothing measured this way is a latency figure", f.readline())
        records = [load(os.path.join(self.dir, n)) for n in sorted(os.listdir(self.dir))
                   if n.startswith("record.") and ".rank" not in n]
        self.assertEqual(len(records), 2, "one stock and one plugin run of the last case")
        for rec in records:
            argv = rec["argv"]
            self.assertEqual(rec["np"], 3)
            for opt in ("--allow-run-as-root", "--oversubscribe"):
                self.assertIn(opt, argv)
            for var in ("NCCL_TUNER_PLUGIN", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                        "NVSHMEM_DISABLE_NVLS"):
                self.assertIn(var, rec["exported"])
            cmd = rec["command"]
            self.assertEqual(os.path.basename(cmd[0]), "mpi_rank_env.sh")
            self.assertEqual(os.path.basename(cmd[1]), "all_reduce_perf")
            args = cmd[2:]
            self.assertEqual(args[args.index("-t") + 1], "1", args)
            self.assertEqual(args[args.index("-g") + 1], "1", args)
            self.assertEqual(args[-6:], ["-e", "1M", "-n", "1", "-w", "1"], args)
        for rank in range(3):
            with open(f"{self.record}.rank{rank}") as f:
                got = json.load(f)
            self.assertEqual(got["NCCL_HOSTID"], f"symmem-test-host-{rank}")
            self.assertEqual((got["NCCL_TESTS_DEVICE"], got["NCCL_SOCKET_IFNAME"], got["NCCL_IB_DISABLE"],
                              got["SYMMEM_TEST_SHARED_GPU"]), ("0", "lo", "1", "1"))

    def test_case_environment_and_graph_count(self):
        with open(self.cases, "w") as f:
            f.write("g FAKE_STOCK_LOG=clean.log FAKE_PLUGIN_LOG=clean.log CASE_VAR=x "
                    "all_reduce_perf -b 8 -e 64M -G 100 -g 2\n")
        p = self.run_sh("2", {"NCCL_TESTS_MPI_ARGS": "-e 256K"})
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        rec = load(f"{self.record}.{os.path.join(CONFIGS, 'run.sh').replace('/', '_')}")
        args = rec["command"][2:]
        self.assertEqual(args, ["-b", "8", "-e", "64M", "-G", "2", "-g", "1", "-e", "256K"])
        self.assertIn("CASE_VAR", rec["exported"])
        self.assertEqual(load(f"{self.record}.rank1")["CASE_VAR"], "x")

    def test_bad_process_count(self):
        for bad in ("0", "x", "65"):
            p = self.run_sh(bad)
            self.assertEqual(p.returncode, 2, bad)
            self.assertIn("NCCL_TESTS_MPI must be", p.stderr)

    def test_missing_mpirun(self):
        p = self.run_sh("2", {"MPIRUN": os.path.join(self.dir, "no-mpirun")})
        self.assertEqual(p.returncode, 2)
        self.assertIn("not found (set MPIRUN)", p.stderr)

    def test_wrapper_needs_a_rank(self):
        env = {k: v for k, v in os.environ.items() if k not in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")}
        p = subprocess.run([os.path.join(CONFIGS, "mpi_rank_env.sh"), "true"], env=env, capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("run it under mpirun", p.stderr)
        p = subprocess.run([os.path.join(CONFIGS, "mpi_rank_env.sh"), "sh", "-c", 'echo "$NCCL_HOSTID $NCCL_TESTS_DEVICE"'],
                           env=dict(env, OMPI_COMM_WORLD_RANK="5"), capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "symmem-test-host-5 0"))


if __name__ == "__main__":
    unittest.main(verbosity=2)

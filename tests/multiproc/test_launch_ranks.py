#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""CPU tests of launch_ranks.py: arguments, each rank's environment, verdicts for exit codes, a
timeout, --kill-rank and a command that cannot start. No GPU: the ranks are shell commands."""
import io
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import launch_ranks as lr  # noqa: E402


def run(argv, base_env=None):
    """(exit status, printed text, the log folder)."""
    logs = tempfile.mkdtemp(prefix="launch-ranks-test-")
    out = io.StringIO()
    cfg = lr.parse_args(["--logs", logs] + list(argv))
    code = lr.launch(cfg, out_stream=out, base_env=base_env)
    return code, out.getvalue(), logs


def verdict(text):
    return text.strip().splitlines()[-1]


class Arguments(unittest.TestCase):
    def test_defaults_and_command(self):
        cfg = lr.parse_args(["--nranks", "4", "--", "python3", "x.py", "--timeout", "5"])
        self.assertEqual((cfg.nranks, cfg.timeout, cfg.shared_gpu_mode), (4, 600.0, True))
        self.assertEqual(cfg.command, ["python3", "x.py", "--timeout", "5"])
        self.assertFalse(cfg.self_test)

    def test_rank_env_and_env(self):
        cfg = lr.parse_args(["--nranks", "2", "--rank-env", "1:SYMMEM_HOOKS=0", "--rank-env", "0:A=x=y",
                             "--env", "B=", "--env", "C=1", "--", "true"])
        self.assertEqual(cfg.rank_env, [(1, "SYMMEM_HOOKS", "0"), (0, "A", "x=y")])
        self.assertEqual(cfg.env, [("B", ""), ("C", "1")])

    def test_rank_env_errors(self):
        cases = {"2:A=b": "not in [0, 1]", "-1:A=b": "not in [0, 1]", "x:A=b": "not an integer",
                 "A=b": "expected R:NAME=VALUE", "1:A": "expected NAME=VALUE", "1:9A=b": "not a variable name",
                 "1:=b": "not a variable name", "0:RANK=3": "set by the launcher"}
        for text, message in cases.items():
            with self.subTest(text=text):
                with self.assertRaises(lr.UsageError) as e:
                    lr.parse_args(["--nranks", "2", f"--rank-env={text}", "--", "true"])
                self.assertIn(message, str(e.exception))

    def test_other_errors(self):
        cases = [(["--nranks", "0", "--", "true"], "must be in [1, 16]"),
                 (["--nranks", "17", "--", "true"], "must be in [1, 16]"),
                 (["--nranks", "2"], "no command"),
                 (["--nranks", "2", "--"], "no command"),
                 (["--", "true"], "--nranks"),
                 (["--nranks", "2", "--timeout", "0", "--", "true"], "positive"),
                 (["--nranks", "2", "--timeout", "nan", "--", "true"], "positive"),
                 (["--nranks", "2", "--env", "WORLD_SIZE=3", "--", "true"], "set by the launcher"),
                 (["--nranks", "2", "--kill-rank", "1", "--", "true"], "go together"),
                 (["--nranks", "2", "--kill-rank", "2", "--kill-after", "1", "--", "true"], "not in [0, 1]"),
                 (["--nranks", "2", "--kill-rank", "1", "--kill-after", "9", "--timeout", "5", "--", "true"],
                  "before --timeout")]
        for argv, message in cases:
            with self.subTest(argv=argv):
                with self.assertRaises(lr.UsageError) as e:
                    lr.parse_args(argv)
                self.assertIn(message, str(e.exception))

    def test_usage_status(self):
        self.assertEqual(lr.main(["--nranks", "2", "--rank-env", "5:A=b", "--", "true"]), lr.EXIT_USAGE)

    def test_self_test_only_before_the_command(self):
        self.assertTrue(lr.parse_args(["--self-test"]).self_test)
        cfg = lr.parse_args(["--nranks", "2", "--", "client.py", "--self-test"])
        self.assertFalse(cfg.self_test)
        self.assertEqual(cfg.command, ["client.py", "--self-test"])


class Environment(unittest.TestCase):
    def test_each_rank(self):
        base = {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "3", "NCCL_HOSTID": "inherited", "SYMMEM_TEST_SHARED_GPU": "0"}
        cfg = lr.parse_args(["--nranks", "4", "--env", "X=all", "--rank-env", "2:X=two",
                             "--rank-env", "1:SYMMEM_HOOKS=0", "--", "true"])
        envs = [lr.rank_environment(base, cfg, r, 12345, "/tmp/rdv") for r in range(4)]
        for r, env in enumerate(envs):
            want = {"RANK": str(r), "WORLD_SIZE": "4", "LOCAL_RANK": str(r), "LOCAL_WORLD_SIZE": "4",
                    "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "12345", "SYMMEM_TEST_RENDEZVOUS_DIR": "/tmp/rdv",
                    "NCCL_HOSTID": f"symmem-test-host-{r}", "NCCL_SOCKET_IFNAME": "lo", "NCCL_IB_DISABLE": "1",
                    "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1",
                    "SYMMEM_TEST_SHARED_GPU": "1", "CUDA_VISIBLE_DEVICES": "3", "PATH": "/bin"}
            for name, value in want.items():
                self.assertEqual(env.get(name), value, f"rank {r} {name}")
        self.assertEqual([e["X"] for e in envs], ["all", "all", "two", "all"])
        self.assertEqual([e.get("SYMMEM_HOOKS") for e in envs], [None, "0", None, None])
        self.assertEqual(len({e["NCCL_HOSTID"] for e in envs}), 4)

    def test_no_shared_gpu_mode_unsets_it(self):
        cfg = lr.parse_args(["--nranks", "2", "--no-shared-gpu-mode", "--", "true"])
        env = lr.rank_environment({"SYMMEM_TEST_SHARED_GPU": "1"}, cfg, 0, 1, "/r")
        self.assertNotIn("SYMMEM_TEST_SHARED_GPU", env)
        self.assertEqual(env["NCCL_HOSTID"], "symmem-test-host-0")

    def test_env_reaches_the_processes(self):
        code, text, logs = run(["--nranks", "3", "--rank-env", "1:SYMMEM_HOOKS=0", "--",
                                "sh", "-c", 'echo "r=$RANK w=$WORLD_SIZE h=$NCCL_HOSTID hooks=${SYMMEM_HOOKS-unset} '
                                'port=$MASTER_PORT dir=$SYMMEM_TEST_RENDEZVOUS_DIR"; test -d "$SYMMEM_TEST_RENDEZVOUS_DIR"'])
        self.assertEqual(code, lr.EXIT_OK, text)
        lines = [open(os.path.join(logs, f"rank-{r}.log")).read().strip() for r in range(3)]
        for r, line in enumerate(lines):
            self.assertIn(f"r={r} w=3 h=symmem-test-host-{r} hooks={'0' if r == 1 else 'unset'}", line)
        self.assertEqual(len({l.split("port=")[1] for l in lines}), 1, "one MASTER_PORT for all")
        rdv = lines[0].split("dir=")[1]
        self.assertFalse(os.path.exists(rdv), "the rendezvous folder is removed after the run")
        shutil.rmtree(logs)

    def test_free_port(self):
        port = lr.free_port()
        self.assertTrue(1024 <= port <= 65535)


class Verdicts(unittest.TestCase):
    def test_pass(self):
        code, text, logs = run(["--nranks", "2", "--", "sh", "-c", "echo done $RANK"])
        self.assertEqual(code, 0, text)
        self.assertRegex(verdict(text), r"^launch_ranks: 2 ranks: PASS \(exit codes 0 0\) in [0-9.]+ s; logs in "
                         + logs + "; shared GPU: correctness only, no latency figures$")
        self.assertIn("rank 1: done 1", text)
        shutil.rmtree(logs)

    def test_one_rank_fails(self):
        code, text, logs = run(["--nranks", "3", "--", "sh", "-c",
                                'echo line-a; echo "failing $RANK"; [ "$RANK" != 2 ] || exit 5'])
        self.assertEqual(code, 1)
        self.assertIn("FAIL (exit codes 0 0 5)", verdict(text))
        self.assertIn("---- rank 2 (5), last lines of", text)
        self.assertIn("  | failing 2", text)
        self.assertNotIn("---- rank 0", text)
        self.assertIn("no latency figures", verdict(text))
        shutil.rmtree(logs)

    def test_signal_is_named(self):
        code, text, logs = run(["--nranks", "2", "--", "sh", "-c", '[ "$RANK" = 0 ] || kill -SEGV $$'])
        self.assertEqual(code, 1)
        self.assertIn("(exit codes 0 SIGSEGV)", verdict(text))
        shutil.rmtree(logs)

    def test_all_skipped(self):
        code, text, logs = run(["--nranks", "2", "--", "sh", "-c", "echo no GPU; exit 77"])
        self.assertEqual(code, lr.EXIT_SKIP)
        self.assertIn("SKIPPED (exit codes 77 77)", verdict(text))
        shutil.rmtree(logs)

    def test_some_skipped_is_a_failure(self):
        code, text, logs = run(["--nranks", "2", "--", "sh", "-c", '[ "$RANK" = 0 ] || exit 77'])
        self.assertEqual(code, lr.EXIT_FAIL)
        shutil.rmtree(logs)

    def test_timeout_ends_every_group(self):
        # Rank 1 ignores SIGTERM and has a child: SIGKILL to its group must end both.
        marker = tempfile.mktemp(prefix="launch-ranks-child-")
        code, text, logs = run(["--nranks", "2", "--timeout", "1.5", "--kill-grace", "0.5", "--", "sh", "-c",
                                f'if [ "$RANK" = 1 ]; then trap "" TERM; (sleep 3; touch {marker}) & sleep 60; '
                                'else exit 0; fi'])
        self.assertEqual(code, 1, text)
        v = verdict(text)
        self.assertIn("TIMEOUT (exit codes 0 SIGKILL)", v)
        self.assertIn("rank(s) 1 still running", v)
        self.assertIn("no latency figures", v)
        import time
        time.sleep(2.5)
        self.assertFalse(os.path.exists(marker), "the rank's child was killed with its group")
        shutil.rmtree(logs)

    def test_sleep_timeout_sigterm_is_enough(self):
        code, text, logs = run(["--nranks", "2", "--timeout", "1", "--", "sleep", "30"])
        self.assertEqual(code, 1)
        self.assertIn("TIMEOUT (exit codes SIGTERM SIGTERM)", verdict(text))
        self.assertIn("rank(s) 0 1 still running", verdict(text))
        shutil.rmtree(logs)

    def test_kill_rank_others_end_by_themselves(self):
        code, text, logs = run(["--nranks", "3", "--timeout", "20", "--kill-rank", "1", "--kill-after", "0.5", "--",
                                "sh", "-c", 'if [ "$RANK" = 1 ]; then sleep 60; else sleep 1.5; echo peer gone; exit 1; fi'])
        self.assertEqual(code, 0, text)
        v = verdict(text)
        self.assertIn("PASS (exit codes 1 SIGKILL 1)", v)
        self.assertIn("rank 1 killed by --kill-rank (SIGKILL)", v)
        self.assertIn("rank 0 ended by itself with 1", v)
        self.assertIn("killed rank 1", text)
        shutil.rmtree(logs)

    def test_kill_rank_others_hang(self):
        code, text, logs = run(["--nranks", "2", "--timeout", "2", "--kill-grace", "0.5", "--kill-rank", "0",
                                "--kill-after", "0.3", "--", "sleep", "60"])
        self.assertEqual(code, 1)
        self.assertIn("TIMEOUT", verdict(text))
        self.assertIn("rank(s) 1 still running", verdict(text))
        shutil.rmtree(logs)

    def test_kill_rank_too_late(self):
        code, text, logs = run(["--nranks", "2", "--timeout", "10", "--kill-rank", "1", "--kill-after", "2", "--",
                                "true"])
        self.assertEqual(code, 1)
        self.assertIn("FAIL", verdict(text))
        self.assertIn("nothing was killed", verdict(text))
        shutil.rmtree(logs)

    def test_bad_command(self):
        code, text, logs = run(["--nranks", "2", "--", "/nonexistent/command", "x"])
        self.assertEqual(code, 1)
        v = verdict(text)
        self.assertIn("FAIL", v)
        self.assertIn("rank 0 could not start '/nonexistent/command'", v)
        self.assertIn("no latency figures", v)
        shutil.rmtree(logs)

    def test_log_folder_cannot_be_made(self):
        out = io.StringIO()
        cfg = lr.parse_args(["--nranks", "1", "--logs", "/proc/no-such/dir", "--", "true"])
        self.assertEqual(lr.launch(cfg, out_stream=out), lr.EXIT_USAGE)
        self.assertIn("cannot make the log folder", out.getvalue())

    def test_describe_status(self):
        self.assertEqual([lr.describe_status(c) for c in (0, 3, -9, -15, None)],
                         ["0", "3", "SIGKILL", "SIGTERM", "unstarted"])


if __name__ == "__main__":
    unittest.main(verbosity=2)

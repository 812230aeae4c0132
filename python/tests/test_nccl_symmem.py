#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The nccl_symmem package from its source, laid out as the wheel lays it out: a temporary folder with
this package's .py files, lib/ holding the built plugin and bin/ holding a stand-in tool. Each check
runs in a child Python with PYTHONPATH on that folder, so what one loads does not leak into another.

    test_nccl_symmem.py PLUGIN STAND_IN_LIBNCCL [unittest args]

PLUGIN is the built libnccl-tuner-symmem.so; STAND_IN_LIBNCCL a libnccl.so.2 to load (the code-hook
fixture's stand-in), to see enable() warn. CI runs the same commands against the installed wheel.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nccl_symmem")
PLUGIN = STAND_IN = ""

# A stand-in for a tool: writes its arguments, one a line, to <tool>.args and exits with the first.
FAKE_TOOL = """#!/bin/sh
printf '%s\\n' "$@" > "$0.args"
exit "$1"
"""


class Package(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="nccl_symmem-test-")
        package = os.path.join(cls.root, "nccl_symmem")
        os.makedirs(os.path.join(package, "lib"))
        os.makedirs(os.path.join(package, "bin"))
        for name in os.listdir(SOURCE):
            if name.endswith(".py"):
                shutil.copy(os.path.join(SOURCE, name), package)
        cls.plugin = os.path.join(package, "lib", "libnccl-tuner-symmem.so")
        os.symlink(os.path.abspath(PLUGIN), cls.plugin)
        cls.tool = os.path.join(package, "bin", "symmem-info")
        with open(cls.tool, "w", encoding="utf-8") as f:
            f.write(FAKE_TOOL)
        os.chmod(cls.tool, 0o755)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root)

    def run_python(self, args, env_extra=None, env_drop=()):
        env = {k: v for k, v in os.environ.items() if k not in env_drop}
        env["PYTHONPATH"] = self.root
        env.update(env_extra or {})
        return subprocess.run([sys.executable] + args, capture_output=True, text=True, env=env, timeout=60,
                              cwd=self.root)

    def module(self, *args, **kw):
        return self.run_python(["-m", "nccl_symmem"] + list(args), **kw)

    def test_path_prints_the_plugin_inside_the_package(self):
        r = self.module("path")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, self.plugin + "\n")
        self.assertTrue(os.path.isabs(r.stdout.strip()))

    def test_env_prints_the_export_line(self):
        r = self.module("env")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f"export NCCL_TUNER_PLUGIN={self.plugin}\n")
        # The line does what it says in a shell.
        sh = subprocess.run(["sh", "-c", r.stdout + 'printf %s "$NCCL_TUNER_PLUGIN"'], capture_output=True, text=True)
        self.assertEqual(sh.stdout, self.plugin)

    def test_enable_prints_the_export_line_for_eval(self):
        r = self.module("enable")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f"export NCCL_TUNER_PLUGIN={self.plugin}\n")

    def test_help_starts_with_the_usage_line(self):
        r = self.module("--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("usage: python -m nccl_symmem path | env | enable | <tool> [args]\n"),
                        r.stdout)
        self.assertIn("Tools here: info", r.stdout)

    def test_a_near_miss_is_named(self):
        r = self.module("inof")
        self.assertEqual(r.returncode, 2)
        self.assertIn("(did you mean info?)", r.stderr)
        r = self.module("enabel")
        self.assertIn("(did you mean enable?)", r.stderr)

    def test_path_without_a_plugin_fails_naming_it(self):
        os.rename(self.plugin, self.plugin + ".away")
        try:
            r = self.module("path")
        finally:
            os.rename(self.plugin + ".away", self.plugin)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertIn("libnccl-tuner-symmem.so does not exist", r.stderr)

    def test_a_tool_runs_with_its_arguments_and_exit_status(self):
        r = self.module("info", "7", "--cc", "12.0")
        self.assertEqual(r.returncode, 7, r.stderr)
        with open(self.tool + ".args", encoding="utf-8") as f:
            self.assertEqual(f.read().splitlines(), ["7", "--cc", "12.0"])
        self.assertEqual(self.module("info", "0").returncode, 0)

    def test_an_unknown_tool_is_a_usage_error(self):
        r = self.module("nosuchtool")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no tool symmem-nosuchtool", r.stderr)
        self.assertIn("Tools here: info", r.stderr)
        self.assertEqual(self.module("../../bin/sh").returncode, 2)

    def test_each_console_entry_point_runs_its_tool(self):
        # pyproject.toml's [project.scripts]: symmem-<tool> on PATH runs nccl_symmem/bin/symmem-<tool>.
        with open(os.path.join(SOURCE, "..", "pyproject.toml"), encoding="utf-8") as f:
            text = f.read()
        scripts = re.findall(r'^(symmem-[a-z]+) = "nccl_symmem\.__main__:([a-z_]+)"$',
                             text.split("[project.scripts]", 1)[1].split("\n[", 1)[0], re.M)
        self.assertEqual(sorted(name for name, _ in scripts),
                         ["symmem-bench", "symmem-health", "symmem-info", "symmem-report", "symmem-stat", "symmem-tune"])
        made = []
        try:
            for name, function in scripts:
                with self.subTest(script=name):
                    tool = os.path.join(self.root, "nccl_symmem", "bin", name)
                    if not os.path.exists(tool):
                        shutil.copy(self.tool, tool)
                        made.append(tool)
                    code = (f"import sys; import nccl_symmem.__main__ as m; sys.argv = [{name!r}, '5', '--x y']; "
                            f"m.{function}()")
                    r = self.run_python(["-c", code])
                    self.assertEqual(r.returncode, 5, r.stderr)
                    with open(tool + ".args", encoding="utf-8") as f:
                        self.assertEqual(f.read().splitlines(), ["5", "--x y"])
        finally:
            for path in made + [p + ".args" for p in made]:
                if os.path.exists(path):
                    os.remove(path)

    def pip_nccl(self, name):
        """A site-packages folder `name` under the test's root holding a pip NCCL; returns (site, its lib)."""
        site = os.path.join(self.root, name)
        lib = os.path.join(site, "nvidia", "nccl", "lib")
        os.makedirs(lib, exist_ok=True)
        open(os.path.join(lib, "libnccl.so.2"), "w").close()
        return site, lib

    def tool_library_path(self, library_path, sites):
        """LD_LIBRARY_PATH as a tool run through `python -m nccl_symmem` sees it, with the caller's
        `library_path` (None: unset) and `sites` as the only folders searched for a pip NCCL: the child
        runs with -S, so the site-packages of the Python running the test (a venv with torch's NCCL, say)
        are not searched, and it gives the same answer on any machine. None: the tool saw it unset."""
        recorder = os.path.join(self.root, "nccl_symmem", "bin", "symmem-ldpath")
        with open(recorder, "w", encoding="utf-8") as f:
            f.write('#!/bin/sh\nif [ -n "${LD_LIBRARY_PATH+set}" ]; then printf %s "$LD_LIBRARY_PATH"; '
                    'else printf unset; fi > "$0.ld"\n')
        os.chmod(recorder, 0o755)
        code = textwrap.dedent(f"""
            import runpy, sys
            sys.path.extend({list(sites)!r})
            sys.argv = ["nccl_symmem", "ldpath"]
            runpy.run_module("nccl_symmem", run_name="__main__")
        """)
        try:
            if library_path is None:
                r = self.run_python(["-S", "-c", code], env_drop=("LD_LIBRARY_PATH",))
            else:
                r = self.run_python(["-S", "-c", code], env_extra={"LD_LIBRARY_PATH": library_path})
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(recorder + ".ld", encoding="utf-8") as f:
                seen = f.read()
            return None if seen == "unset" else seen
        finally:
            for path in (recorder, recorder + ".ld"):
                if os.path.exists(path):
                    os.remove(path)

    def test_tools_see_a_pip_nccl_on_the_library_path(self):
        site, lib = self.pip_nccl("site")
        self.assertEqual(self.tool_library_path("/first", [site]), "/first:" + lib)
        self.assertEqual(self.tool_library_path(None, [site]), lib)
        self.assertEqual(self.tool_library_path("", [site]), lib)

    def test_tools_keep_a_pip_nccl_already_on_the_library_path(self):
        # A venv whose NCCL the user (or the venv's activation) put on the path: nothing is added twice,
        # wherever it stands and however it is spelt, and what the user put first stays first.
        site, lib = self.pip_nccl("site")
        link = os.path.join(self.root, "site-link")
        if not os.path.islink(link):
            os.symlink(site, link)
        for given in (lib + ":/first", "/first:" + lib, "/first:" + lib + "/",
                      os.path.join(link, "nvidia", "nccl", "lib") + ":/first"):
            with self.subTest(LD_LIBRARY_PATH=given):
                self.assertEqual(self.tool_library_path(given, [site]), given)
        # Found through the symlinked site while the path names the real folder: the same folder.
        self.assertEqual(self.tool_library_path(lib, [link]), lib)
        # Another NCCL first (the user's choice), the venv's after it.
        other_site, other = self.pip_nccl("other-site")
        self.assertEqual(self.tool_library_path(other, [site]), other + ":" + lib)
        self.assertEqual(self.tool_library_path(other + ":" + lib, [site, other_site]), other + ":" + lib)

    def test_tools_get_each_pip_nccl_once_in_search_order(self):
        site, lib = self.pip_nccl("site")
        other_site, other = self.pip_nccl("other-site")
        self.assertEqual(self.tool_library_path("/first", [other_site, site, other_site]),
                         "/first:" + other + ":" + lib)

    def test_tools_keep_the_library_path_without_a_pip_nccl(self):
        self.assertEqual(self.tool_library_path("/first", []), "/first")
        self.assertIsNone(self.tool_library_path(None, []))

    def enable_in_child(self, load_first, env_drop=("NCCL_TUNER_PLUGIN",), env_extra=None, calls=1):
        code = textwrap.dedent(f"""
            import ctypes, json, os, warnings
            if {bool(load_first)!r}:
                ctypes.CDLL({STAND_IN!r})
            import nccl_symmem
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for _ in range({int(calls)!r}):
                    path = nccl_symmem.enable()
            print(json.dumps({{"returned": path, "env": os.environ.get("NCCL_TUNER_PLUGIN"),
                               "warnings": [[w.category.__name__, str(w.message)] for w in caught]}}))
        """)
        r = self.run_python(["-c", code], env_drop=env_drop, env_extra=env_extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_enable_sets_the_variable_quietly_before_nccl_loads(self):
        got = self.enable_in_child(load_first=False)
        self.assertEqual(got["returned"], self.plugin)
        self.assertEqual(got["env"], self.plugin)
        self.assertEqual(got["warnings"], [])

    def test_enable_warns_when_libnccl_is_already_loaded(self):
        got = self.enable_in_child(load_first=True)
        self.assertEqual(got["env"], self.plugin)  # still set: communicators created later use it
        self.assertEqual(len(got["warnings"]), 1, got["warnings"])
        category, message = got["warnings"][0]
        self.assertEqual(category, "RuntimeWarning")
        self.assertIn("NCCL is already loaded", message)
        self.assertIn(os.path.realpath(STAND_IN), message)

    def test_enable_names_a_different_setting_it_replaces(self):
        other = "/opt/other/libnccl-tuner-other.so"
        got = self.enable_in_child(load_first=False, env_drop=(), env_extra={"NCCL_TUNER_PLUGIN": other})
        self.assertEqual(got["env"], self.plugin)
        self.assertEqual(len(got["warnings"]), 1, got["warnings"])
        self.assertIn(f"NCCL_TUNER_PLUGIN was {other!r}", got["warnings"][0][1])

    def test_enable_leaves_an_operators_none_in_place(self):
        # An operator's off switch: kept, said once however often enable() is called, nothing enabled.
        for value in ("none", "NONE"):
            with self.subTest(NCCL_TUNER_PLUGIN=value):
                got = self.enable_in_child(load_first=False, env_drop=(), env_extra={"NCCL_TUNER_PLUGIN": value},
                                           calls=2)
                self.assertIsNone(got["returned"])
                self.assertEqual(got["env"], value)
                self.assertEqual(len(got["warnings"]), 1, got["warnings"])
                category, message = got["warnings"][0]
                self.assertEqual(category, "RuntimeWarning")
                self.assertIn("NCCL_TUNER_PLUGIN=none is set", message)
                self.assertIn("the plugin stays off", message)

    def test_the_variable_reaches_the_c_environment(self):
        # NCCL reads getenv(), not os.environ: the child's C library must see the value.
        code = textwrap.dedent("""
            import ctypes, nccl_symmem
            nccl_symmem.enable()
            libc = ctypes.CDLL(None)
            libc.getenv.restype = ctypes.c_char_p
            print(libc.getenv(b"NCCL_TUNER_PLUGIN").decode())
        """)
        r = self.run_python(["-c", code], env_drop=("NCCL_TUNER_PLUGIN",))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), self.plugin)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    PLUGIN, STAND_IN = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])  # the checks run elsewhere
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)

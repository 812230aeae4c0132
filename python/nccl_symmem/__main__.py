# SPDX-License-Identifier: Apache-2.0
"""usage: python -m nccl_symmem path | env | enable | <tool> [args]

    path              print the plugin's path (for NCCL_TUNER_PLUGIN)
    env, enable       print the line: export NCCL_TUNER_PLUGIN=<path>
                      (a command cannot change its shell: eval "$(python -m nccl_symmem enable)")
    info, health, tune, report, bench, stat, report-plots [args]
                      run symmem-<tool> with the arguments; its exit status is this command's

Exit status 2 for a wrong command line (a tool this package does not carry too), 1 when it has no plugin.
The wheel also puts symmem-info, symmem-health, symmem-tune, symmem-bench, symmem-report and symmem-stat on
PATH.
"""
import difflib
import os
import sys

import nccl_symmem


_COMMANDS = ("path", "env", "enable")


def _usage(stream):
    names = ", ".join(nccl_symmem.tools()) or "none in this package"
    stream.write(__doc__.rstrip("\n") + f"\n\nTools here: {names}\n")


def _did_you_mean(command):
    """' (did you mean X?)' for the nearest command or tool here, or ''."""
    near = difflib.get_close_matches(command, list(_COMMANDS) + list(nccl_symmem.tools()), n=1, cutoff=0.6)
    return f" (did you mean {near[0]}?)" if near else ""


def _run_tool(name, args):
    try:
        tool = nccl_symmem.tool_path(name)
    except FileNotFoundError as e:
        print(f"nccl_symmem: {e}{_did_you_mean(name)}", file=sys.stderr)
        _usage(sys.stderr)
        return 2
    env = dict(os.environ)
    # A venv's NCCL from pip is not on the loader's path; the tools (and the plugin they load, which
    # NEEDs libnccl.so.2) use it as the application would. The caller's LD_LIBRARY_PATH comes first and
    # a folder already on it is not added again (nccl_symmem.tool_library_path).
    library_path = nccl_symmem.tool_library_path(env.get("LD_LIBRARY_PATH"))
    if library_path is not None:
        env["LD_LIBRARY_PATH"] = library_path
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(tool, [os.path.basename(tool)] + args, env)  # returns only by raising
    return 1


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "help"):
        _usage(sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    command, args = argv[0], argv[1:]
    if command in _COMMANDS:
        if args:
            print(f"nccl_symmem: {command} takes no arguments", file=sys.stderr)
            return 2
        try:
            print(nccl_symmem.plugin_path() if command == "path" else nccl_symmem.export_line())
            if command == "enable" and sys.stdout.isatty():
                print('nccl_symmem: a command cannot change its shell\'s environment; run: '
                      'eval "$(python -m nccl_symmem enable)", or call nccl_symmem.enable() in the program',
                      file=sys.stderr)
        except FileNotFoundError as e:
            print(f"nccl_symmem: {e}", file=sys.stderr)
            return 1
        return 0
    if os.sep in command or command.startswith("."):
        print(f"nccl_symmem: {command!r} is not a command", file=sys.stderr)
        return 2
    return _run_tool(command, args)


# The console entry points of the wheel (pyproject.toml, [project.scripts]): symmem-info and the others
# on PATH, each running the package's binary with the command line's arguments.
def _console(name):
    sys.exit(_run_tool(name, sys.argv[1:]))


def info():
    _console("info")


def health():
    _console("health")


def tune():
    _console("tune")


def bench():
    _console("bench")


def report():
    _console("report")


def stat():
    _console("stat")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

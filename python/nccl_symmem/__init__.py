# SPDX-License-Identifier: Apache-2.0
"""nccl-symmem from a wheel: where the plugin is, and turning it on for this process.

The wheel carries the install layout of the source build inside this package:

    nccl_symmem/lib/libnccl-tuner-symmem.so   the NCCL tuner plugin (RUNPATH $ORIGIN)
    nccl_symmem/lib/libZydis.so.4.0           the disassembler of the code hooks, found beside the plugin first
    nccl_symmem/bin/symmem-*                  the tools (they find the plugin at ../lib)

    python -m nccl_symmem path                the plugin's path
    python -m nccl_symmem env                 export NCCL_TUNER_PLUGIN=...
    python -m nccl_symmem info|health|tune|report [args]   the tools

or, in the program, ``nccl_symmem.enable()`` before the first NCCL communicator is created
(it leaves an operator's ``NCCL_TUNER_PLUGIN=none`` in place and returns None).
"""
import ctypes
import os
import shlex
import sys
import warnings

__all__ = ["PLUGIN_NAME", "enable", "export_line", "loaded_nccl", "nccl_library_dirs", "plugin_path",
           "tool_library_path", "tool_path", "tools"]

PLUGIN_NAME = "libnccl-tuner-symmem.so"
_HERE = os.path.dirname(os.path.abspath(__file__))


def plugin_path():
    """The plugin's absolute path inside this package. Raises FileNotFoundError when the package has
    no plugin (the source tree, or a wheel built without one)."""
    path = os.path.join(_HERE, "lib", PLUGIN_NAME)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{path} does not exist: this nccl_symmem has no plugin (install the nccl-symmem wheel)")
    return path


def tool_path(name):
    """The path of tool `name` ("info" for symmem-info, ...). Raises FileNotFoundError when absent."""
    path = os.path.join(_HERE, "bin", "symmem-" + name)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} does not exist: no tool symmem-{name} in this nccl_symmem")
    return path


def tools():
    """Names of the tools this package carries, without the symmem- prefix."""
    folder = os.path.join(_HERE, "bin")
    if not os.path.isdir(folder):
        return []
    return sorted(n[len("symmem-"):] for n in os.listdir(folder) if n.startswith("symmem-"))


def export_line():
    """The shell line that turns the plugin on: export NCCL_TUNER_PLUGIN=<path>."""
    return "export NCCL_TUNER_PLUGIN=" + shlex.quote(plugin_path())


def loaded_nccl(maps="/proc/self/maps"):
    """Paths of every libnccl.so* mapped into this process, in the order of /proc/self/maps. Where that
    file cannot be read, asks the loader for the soname instead (a path is then not known: the soname
    is returned)."""
    try:
        with open(maps, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return _loaded_by_soname()
    found = []
    for line in lines:
        fields = line.split(None, 5)
        if len(fields) < 6:
            continue
        path = fields[5].strip()
        if os.path.basename(path).startswith("libnccl.so") and path not in found:
            found.append(path)
    return found


def _loaded_by_soname():
    try:
        ctypes.CDLL("libnccl.so.2", mode=os.RTLD_NOLOAD)
    except OSError:
        return []
    return ["libnccl.so.2"]


def _folder_key(path):
    """One spelling for a folder however it is written (relative, trailing slash, through a symlink)."""
    return os.path.realpath(path or os.getcwd())


def nccl_library_dirs(search_path=None):
    """Folders of the pip NCCL (the nvidia-nccl-cu* wheels: nvidia/nccl/lib/libnccl.so.2) on
    `search_path` (sys.path by default), in its order, each folder once. The tools run with them on
    LD_LIBRARY_PATH, so in a venv whose NCCL came from pip they load the same NCCL the application does."""
    dirs, seen = [], set()
    for entry in sys.path if search_path is None else search_path:
        lib = os.path.join(entry or os.getcwd(), "nvidia", "nccl", "lib")
        if os.path.isfile(os.path.join(lib, "libnccl.so.2")) and _folder_key(lib) not in seen:
            seen.add(_folder_key(lib))
            dirs.append(lib)
    return dirs


def tool_library_path(current, nccl_dirs=None):
    """The LD_LIBRARY_PATH the tools run with: `current` (the caller's value; None or "" for none)
    unchanged and first, then each folder of `nccl_dirs` (nccl_library_dirs() by default) that it does
    not name yet. A pip NCCL the user put on the path already (wherever in it, however spelt) is not
    added a second time, and what the user put first stays first: the loader takes the NCCL the user
    chose, and the venv's where the user chose none. None when there is nothing to set."""
    if nccl_dirs is None:
        nccl_dirs = nccl_library_dirs()
    named = {_folder_key(entry) for entry in (current or "").split(os.pathsep) if entry}
    added = []
    for folder in nccl_dirs:
        if _folder_key(folder) not in named:
            named.add(_folder_key(folder))
            added.append(folder)
    return os.pathsep.join(([current] if current else []) + added) or None


_SAID_NONE = False


def enable():
    """Sets NCCL_TUNER_PLUGIN to this package's plugin for this process (and for the processes it
    starts afterwards, which inherit the environment), and returns the path.

    NCCL reads NCCL_TUNER_PLUGIN when its first communicator in the process finishes initialising and
    looks for its tuner then; a failure to load one (no variable set, no libnccl-tuner.so) is
    remembered for the whole process. So enable() must run before the first communicator is created:
    before the inference engine or torch.distributed's process group starts. Once a communicator was
    created without it, setting the variable changes nothing in this process.

    Whether a communicator already exists cannot be seen from outside NCCL. What can be seen is
    whether libnccl is loaded into the process (/proc/self/maps): then one may exist, and enable()
    warns (a RuntimeWarning naming the library) but still sets the variable, which is enough when no
    communicator was created yet (NCCL loaded, none created) and for the processes started later. No
    warning does not prove there is none: an NCCL linked statically into another library (some
    PyTorch builds) is not a separate libnccl and is not seen.

    NCCL_TUNER_PLUGIN=none (any case) is an operator's off switch, as NCCL reads it: enable() leaves it
    as it is, says so once per process (a RuntimeWarning) and returns None without enabling anything.
    Another plugin already named in NCCL_TUNER_PLUGIN is replaced, with a warning naming it.
    """
    global _SAID_NONE
    previous = os.environ.get("NCCL_TUNER_PLUGIN")
    if previous is not None and previous.strip().lower() == "none":
        if not _SAID_NONE:
            _SAID_NONE = True
            warnings.warn(
                "nccl_symmem.enable(): NCCL_TUNER_PLUGIN=none is set, which turns tuner plugins off: left as it is, "
                "the plugin stays off (unset NCCL_TUNER_PLUGIN to let enable() turn it on)", RuntimeWarning,
                stacklevel=2)
        return None
    path = plugin_path()
    if previous is not None and previous != path:
        warnings.warn(f"nccl_symmem.enable(): NCCL_TUNER_PLUGIN was {previous!r}, now {path}", RuntimeWarning,
                      stacklevel=2)
    loaded = loaded_nccl()
    if loaded:
        warnings.warn(
            f"nccl_symmem.enable(): NCCL is already loaded in this process ({', '.join(loaded)}): if a "
            "communicator exists, NCCL has looked for its tuner already and this process keeps running without "
            "the plugin; call enable() before the engine or process group starts", RuntimeWarning, stacklevel=2)
    os.environ["NCCL_TUNER_PLUGIN"] = path
    return path

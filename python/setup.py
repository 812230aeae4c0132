# SPDX-License-Identifier: Apache-2.0
"""The nccl-symmem wheel: the Python package nccl_symmem with the plugin and the tools inside it.

Run by make_wheel.sh on a staged copy of this folder, whose nccl_symmem/bin and nccl_symmem/lib already
hold the installed tools and plugin (and Zydis) and whose VERSION holds the CMake project's version.

The tag is py3-none-linux_<machine>: the package is plain Python (any CPython 3), the binaries are
for this architecture and need glibc 2.34 and GCC 11's libstdc++ or later. It claims no manylinux
tag: nothing has checked the binaries against a manylinux policy (auditwheel).
"""
import os
import platform

from setuptools import setup
from setuptools.dist import Distribution
from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))


class BinaryDistribution(Distribution):
    """Holds native code (outside any extension module): a platform wheel, installed to platlib."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    def get_tag(self):
        return "py3", "none", "linux_" + platform.machine()


def version():
    with open(os.path.join(HERE, "VERSION"), encoding="utf-8") as f:
        return f.read().strip()


def payload():
    """Every file under nccl_symmem/bin, lib, licenses (the bundled Zydis' too), docs (README.md and
    docs/, with their subfolders) and topologies (the sample ones), relative to the package."""
    root = os.path.join(HERE, "nccl_symmem")
    files = []
    for sub in ("bin", "lib", "licenses", "docs", "topologies"):
        for folder, _, names in sorted(os.walk(os.path.join(root, sub))):
            for name in sorted(names):
                files.append(os.path.relpath(os.path.join(folder, name), root))
    if "lib/libnccl-tuner-symmem.so" not in files:
        raise SystemExit("setup.py: nccl_symmem/lib has no libnccl-tuner-symmem.so (run make_wheel.sh)")
    if "docs/README.md" not in files:
        raise SystemExit("setup.py: nccl_symmem/docs has no README.md (run make_wheel.sh)")
    return files


setup(version=version(), package_data={"nccl_symmem": payload()}, distclass=BinaryDistribution,
      cmdclass={"bdist_wheel": PlatformWheel})

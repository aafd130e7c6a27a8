"""pip install ./python: builds libmk.so with the tree's Makefile (or takes
$MKC_LIB, or an existing build/libmk.so) and puts it inside the package."""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)


def find_or_build_libmk():
    env = os.environ.get("MKC_LIB")
    if env:
        return env
    built = os.path.join(TOP, "build", "libmk.so")
    if os.path.exists(os.path.join(TOP, "Makefile")):
        # make is incremental: a fresh tree builds, a built one checks
        subprocess.check_call(["make", "-C", TOP, "-j%d" % (os.cpu_count() or 2),
                               "build/libmk.so"])
    if not os.path.exists(built):
        raise RuntimeError("mkc: no libmk.so: run `make` in the mkc tree or set MKC_LIB")
    return built


class BuildWithLib(build_py):
    def run(self):
        super().run()
        dst = os.path.join(self.build_lib, "mkc", "libmk.so")
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(find_or_build_libmk(), dst)


setup(cmdclass={"build_py": BuildWithLib})

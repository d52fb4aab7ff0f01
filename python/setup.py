"""Builds the reduce_verify wheel around an already-built libreduce_verify_c.so (the project's
CMake builds it: build/capi/). The library is copied into the package, so the installed package
needs nothing from the source tree. Which library: $REDUCE_VERIFY_LIB, else ../build/capi/.
Everything else is in pyproject.toml."""

import os
import pathlib
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = pathlib.Path(__file__).resolve().parent
LIBRARY = "libreduce_verify_c.so"


def built_library():
    override = os.environ.get("REDUCE_VERIFY_LIB")
    path = pathlib.Path(override) if override else HERE.parent / "build" / "capi" / LIBRARY
    if not path.is_file():
        raise SystemExit(
            f"reduce_verify: {path} does not exist. Build the library first (./ci/build.sh, or "
            "cmake --build build --target reduce_verify_c), or set REDUCE_VERIFY_LIB to a built "
            f"{LIBRARY}.")
    return path


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        target = pathlib.Path(self.build_lib) / "reduce_verify" / "_lib"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built_library(), target / LIBRARY)


class BinaryDistribution(Distribution):
    """The wheel carries a shared library: tag it for this platform, not as pure Python."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)

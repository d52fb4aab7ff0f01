"""Builds the reduce_verify wheel around an already-built libreduce_verify_c.so and, when it
was built too, the reduce-verify tool (python/build_clib.sh builds both, CPU-only, into
build-python/; a full build has them in build/capi/ and build/verify/). Both are copied into
the package, so the installed package needs nothing from the source tree.
Which library: $REDUCE_VERIFY_LIB, else ../build-python/capi/, else ../build/capi/.
Which tool: $REDUCE_VERIFY_BIN, else <build>/verify/reduce-verify of the same build folder (left out,
with a note, when absent). The readme is ../docs/pytorch.md (README.md links to it).
Everything else is in pyproject.toml."""

import os
import pathlib
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = pathlib.Path(__file__).resolve().parent
LIBRARY = "libreduce_verify_c.so"
TOOL = "reduce-verify"
BUILD_FOLDERS = ("build-python", "build")


def built_library():
    override = os.environ.get("REDUCE_VERIFY_LIB")
    if override:
        candidates = [pathlib.Path(override)]
    else:
        candidates = [HERE.parent / folder / "capi" / LIBRARY for folder in BUILD_FOLDERS]
    for path in candidates:
        if path.is_file():
            return path
    raise SystemExit(
        f"reduce_verify: no {LIBRARY} at {', '.join(map(str, candidates))}. Build it first: "
        "python/build_clib.sh (CPU-only, the library and the tool, a few minutes), or set "
        f"REDUCE_VERIFY_LIB to a built {LIBRARY}.")


def built_tool(library):
    override = os.environ.get("REDUCE_VERIFY_BIN")
    path = pathlib.Path(override) if override else library.parent.parent / "verify" / TOOL
    if path.is_file():
        return path
    print(f"reduce_verify: no {path}: the wheel will not carry the reduce-verify tool")
    return None


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        package = pathlib.Path(self.build_lib) / "reduce_verify"
        library = built_library()
        (package / "_lib").mkdir(parents=True, exist_ok=True)
        shutil.copy2(library, package / "_lib" / LIBRARY)
        tool = built_tool(library)
        if tool is not None:
            (package / "_bin").mkdir(parents=True, exist_ok=True)
            shutil.copy2(tool, package / "_bin" / TOOL)


class BinaryDistribution(Distribution):
    """The wheel carries a shared library: tag it for this platform, not as pure Python."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)

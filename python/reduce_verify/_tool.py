"""The reduce-verify command-line tool that the wheel carries (`pip install ./python` builds
it into _bin/): `reduce-verify …` where pip put its scripts, or `python -m reduce_verify
…` anywhere the package is importable. $REDUCE_VERIFY names another binary."""

import os
import pathlib
import sys
from typing import List, Optional

from ._library import packaged_file
from .errors import LibraryNotFound

TOOL_NAME = "reduce-verify"


def tool_path() -> pathlib.Path:
    """The reduce-verify binary: $REDUCE_VERIFY if set, else the package's own copy."""
    return packaged_file(
        "REDUCE_VERIFY", "_bin", TOOL_NAME,
        "`pip install ./python` builds it into the package; or point REDUCE_VERIFY at a "
        "built build/verify/reduce-verify.")


def main(argv: Optional[List[str]] = None) -> None:
    arguments = sys.argv[1:] if argv is None else argv
    try:
        path = tool_path()
    except LibraryNotFound as error:
        print(f"reduce-verify: {error}", file=sys.stderr)
        sys.exit(2)  # docs/DESIGN.md §6: bad input or usage
    os.execv(str(path), [str(path), *arguments])

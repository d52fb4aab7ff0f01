"""`python -m reduce_verify ARGS` runs the packaged reduce-verify tool with ARGS."""

from ._tool import main

main()

#!/usr/bin/env bash
# README command 2: install every dependency, build, and run all the tests: the CTest suite
# (GPU tests skip without a device; every Python test under Debian's torch 1.13 and under
# torch 2.13 in a virtual environment), the bounded fuzzers, and the live gate.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/ci/install-deps.sh"
venv_python=$("$root/ci/python-envs.sh")
RV_PYTHONS="/usr/bin/python3;$venv_python" "$root/ci/build.sh"
ctest --test-dir "$root/build" --output-on-failure -j "$(nproc)" --timeout 600
if [[ -x "$root/ci/fuzz.sh" ]]; then "$root/ci/fuzz.sh"; fi
REDUCE_VERIFY="$root/build/verify/reduce-verify" "$root/ci/gate.sh"

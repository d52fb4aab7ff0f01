#!/usr/bin/env bash
# The quick path to the Python package: builds only what the wheel carries,
# libreduce_verify_c.so and the reduce-verify tool, CPU-only (no CUDA, no tests, no
# benchmarks), into build-python/, where python/setup.py looks first. Then:
#   /usr/bin/python3 -m pip install --no-build-isolation --break-system-packages ./python
#   python/build_clib.sh [--cuda] [extra cmake arguments]
#     --cuda  also the GPU paths (CUDA in /usr/local/cuda; set -DCMAKE_CUDA_ARCHITECTURES=NN
#             to your GPU's, or every default architecture is compiled: slow)
#   BUILD_DIR overrides the folder (then set REDUCE_VERIFY_LIB for pip).
# A build-python/ configured before (with CUDA, say, for ci/device/run-ddp-hook-bench.sh)
# keeps its CUDA choice unless --cuda or -DRV_WITH_CUDA=… is given.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$root/build-python"}
cuda=()
if [[ ${1:-} == --cuda ]]; then
  cuda=(-DRV_WITH_CUDA=ON)
  shift
elif [[ ! -f $build/CMakeCache.txt ]]; then
  cuda=(-DRV_WITH_CUDA=OFF)
fi
generator=()
if [[ ! -f $build/CMakeCache.txt ]] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  "${cuda[@]}" -DRV_BUILD_TESTS=OFF -DRV_BUILD_BENCH=OFF "$@" >/dev/null
cmake --build "$build" --target reduce_verify_c reduce-verify -j "$(nproc)"
echo "built $build/capi/libreduce_verify_c.so and $build/verify/reduce-verify"

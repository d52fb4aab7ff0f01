#!/usr/bin/env bash
# Configures and builds reduce-verify into build/ (Release, warnings as errors).
#   BUILD_DIR overrides the folder; extra arguments go to cmake.
#   CUDA (when /usr/local/cuda is there) is compiled to PTX for one architecture, compute_90
#   (CUDAARCHS=… picks others, e.g. 90 for sm_90 machine code as well): CI has no GPU, so it
#   checks that the CUDA code compiles and skips ptxas, a third of the CUDA build's time; the
#   device bundle (ci/device/build-bundle.sh) builds the machine code of every architecture
#   it ships.
#   RV_PYTHONS: the Pythons (;-list) that run the Python tests (ci/test.sh gives two).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$root/build"}
options=(-DCMAKE_CUDA_ARCHITECTURES="${CUDAARCHS:-90-virtual}")
if [[ -n ${RV_PYTHONS:-} ]]; then options+=(-DRV_PYTHONS="$RV_PYTHONS"); fi
echo "build: $(command -v cmake) ($(cmake --version | head -n1)) into $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRV_WERROR=ON \
  "${options[@]}" "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"

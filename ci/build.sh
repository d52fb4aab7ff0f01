#!/usr/bin/env bash
# Configures and builds reduce-verify into build/ (Release, warnings as errors).
#   BUILD_DIR overrides the folder; extra arguments go to cmake.
#   CUDA (when /usr/local/cuda is there) is compiled for one architecture plus its PTX, sm_90
#   by default (CUDAARCHS=… picks others), which keeps CI inside its time: the device
#   bundle (ci/device/build-bundle.sh) builds every architecture it ships.
#   RV_PYTHONS: the Pythons (;-list) that run the Python tests (ci/test.sh gives two).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$root/build"}
options=(-DCMAKE_CUDA_ARCHITECTURES="${CUDAARCHS:-90}")
if [[ -n ${RV_PYTHONS:-} ]]; then options+=(-DRV_PYTHONS="$RV_PYTHONS"); fi
echo "build: $(command -v cmake) ($(cmake --version | head -n1)) into $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRV_WERROR=ON \
  "${options[@]}" "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"

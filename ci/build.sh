#!/usr/bin/env bash
# Configures and builds reduce-verify into build/ (Release, warnings as errors).
#   BUILD_DIR overrides the folder; extra arguments go to cmake.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$root/build"}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRV_WERROR=ON "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"

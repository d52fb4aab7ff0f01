#!/usr/bin/env bash
# README command 1: install every dependency, build, and run the main job — the live gate
# over the committed golden suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/ci/install-deps.sh"
"$root/ci/gate.sh" "$@"

#!/usr/bin/env bash
# Installs this build into a scratch prefix, builds tests/consumer against the installed
# package (find_package(reduce_verify)), runs it, and holds its digest to xxh128sum's of the
# bytes it wrote: the exported package works for a project outside this tree.
#   consumer_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 source=$2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/rv-consumer.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >"$scratch/install.log"
cmake -S "$source/tests/consumer" -B "$scratch/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >"$scratch/configure.log" ||
  { cat "$scratch/configure.log"; exit 1; }
cmake --build "$scratch/build" >"$scratch/build.log" || { cat "$scratch/build.log"; exit 1; }
line=$("$scratch/build/consumer" "$scratch/out.f32")
echo "consumer: $line"
expected=$(xxh128sum "$scratch/out.f32")
if [[ "$line" != "$expected" ]]; then
  echo "consumer: digest line '$line' is not xxh128sum's '$expected'" >&2
  exit 1
fi
echo "consumer: the installed package builds a project outside the tree and agrees with xxh128sum"

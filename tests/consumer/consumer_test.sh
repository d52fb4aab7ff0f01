#!/usr/bin/env bash
# Installs this build into a scratch prefix and holds the installed include tree to the public
# headers this build has (BUILD_DIR/reduce_verify_public_headers.txt, from
# cmake/public_headers.cmake): no header more, none less, no *_detail.h. Then builds
# tests/consumer against the installed package (find_package(reduce_verify)), every entry
# header compiled alone against the installed tree, runs the consumer, and holds its digest to
# xxh128sum's of the bytes it wrote: the exported package works for a project outside this tree.
#   consumer_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 source=$2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/rv-consumer.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >"$scratch/install.log"

tree="$scratch/prefix/include/reduce_verify"
(cd "$tree" && find . -type f -o -type l) | sed 's|^\./||' | LC_ALL=C sort >"$scratch/installed.txt"
LC_ALL=C sort "$build/reduce_verify_public_headers.txt" >"$scratch/expected.txt"
detail=$(grep -E '_detail\.h$' "$scratch/installed.txt" || true)
if [[ -n $detail ]]; then
  echo "consumer: detail headers installed:" $detail >&2
  exit 1
fi
if ! diff -u "$scratch/expected.txt" "$scratch/installed.txt" >"$scratch/tree.diff"; then
  echo "consumer: the installed include tree is not the public header list" \
    "(- listed but not installed, + installed but not listed):" >&2
  grep -E '^[-+][^-+]' "$scratch/tree.diff" >&2
  exit 1
fi
echo "consumer: $(wc -l <"$scratch/installed.txt") headers installed, exactly the public list, no detail header"

cmake -S "$source/tests/consumer" -B "$scratch/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" \
  -DRV_ENTRY_HEADERS_FILE="$build/reduce_verify_public_entry_headers.txt" \
  >"$scratch/configure.log" || { cat "$scratch/configure.log"; exit 1; }
cmake --build "$scratch/build" >"$scratch/build.log" || { cat "$scratch/build.log"; exit 1; }
echo "consumer: $(wc -l <"$build/reduce_verify_public_entry_headers.txt") entry headers each compile alone against the installed tree"
line=$("$scratch/build/consumer" "$scratch/out.f32")
echo "consumer: $line"
expected=$(xxh128sum "$scratch/out.f32")
if [[ "$line" != "$expected" ]]; then
  echo "consumer: digest line '$line' is not xxh128sum's '$expected'" >&2
  exit 1
fi
echo "consumer: the installed package builds a project outside the tree and agrees with xxh128sum"

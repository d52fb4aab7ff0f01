#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, AddressSanitizer + UndefinedBehaviorSanitizer) in a
# build folder of their own and runs each for a bounded time from the committed seed corpus.
# Fails on any crash, sanitizer report, leak or timeout. A failing input is written to
# $build/fuzz-artifacts/ (reproduce: $build/tests/fuzz/<target> <that file>).
#   FUZZ_SECONDS  seconds per parser target (default 25; two of them, so 50 s in all)
#   FUZZ_HANDSHAKE_SECONDS  seconds for the membership handshake's frame reader (default 20)
#   BUILD_DIR     the build folder (default build-fuzz)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$root/build-fuzz"}
seconds=${FUZZ_SECONDS:-25}

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DRV_FUZZ=ON -DRV_WITH_CUDA=OFF -DRV_WITH_GLOO=OFF -DRV_BUILD_TESTS=OFF -DRV_BUILD_BENCH=OFF \
  >/dev/null
cmake --build "$build" --target fuzz_case_id fuzz_golden_line fuzz_handshake -j "$(nproc)"

mkdir -p "$build/fuzz-artifacts"
for target in case_id golden_line handshake; do
  corpus=${target%_line}
  dict="$root/tests/fuzz/case_id.dict"
  budget=$seconds
  if [[ $target == handshake ]]; then
    dict="$root/tests/fuzz/handshake.dict"
    budget=${FUZZ_HANDSHAKE_SECONDS:-20}
  fi
  # New inputs go to a scratch corpus; the committed seeds are only read.
  work="$build/fuzz-corpus/$target"
  mkdir -p "$work"
  echo "fuzz: $target for ${budget}s"
  if ! "$build/tests/fuzz/fuzz_$target" -max_total_time="$budget" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -dict="$dict" \
      -artifact_prefix="$build/fuzz-artifacts/$target-" \
      "$work" "$root/tests/fuzz/corpus/$corpus" >"$build/fuzz-$target.log" 2>&1; then
    tail -n 40 "$build/fuzz-$target.log" >&2
    echo "fuzz: $target FAILED; the input is in $build/fuzz-artifacts/" >&2
    exit 1
  fi
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)' \
    "$build/fuzz-$target.log" || true
done
echo "fuzz: no crash in any target"

#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, AddressSanitizer + UndefinedBehaviorSanitizer) in a
# build folder of their own and runs each for a bounded time from the committed seed corpus.
# Fails on any crash, sanitizer report, leak or timeout. A failing input is written to
# $build/fuzz-artifacts/ (reproduce: $build/tests/fuzz/<target> <that file>).
#   FUZZ_SECONDS  seconds for all targets together (default 60), split among them by the
#                 weights below (the job-directory target is slow per input: real files)
#   BUILD_DIR     the build folder (default build-fuzz)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$root/build-fuzz"}
total=${FUZZ_SECONDS:-60}

# target:corpus folder:dictionary:weight (of 12)
targets=(case_id:case_id:case_id:2 golden_line:golden:case_id:2 report:report:case_id:2
         job_records:job_records:case_id:3 handshake:handshake:handshake:3)

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DRV_FUZZ=ON -DRV_WITH_CUDA=OFF -DRV_WITH_GLOO=OFF -DRV_BUILD_TESTS=OFF -DRV_BUILD_BENCH=OFF \
  >/dev/null
cmake --build "$build" --target fuzz_case_id fuzz_golden_line fuzz_report fuzz_job_records \
  fuzz_handshake -j "$(nproc)"

mkdir -p "$build/fuzz-artifacts"
for entry in "${targets[@]}"; do
  IFS=: read -r target corpus dict weight <<<"$entry"
  seconds=$(( total * weight / 12 ))
  (( seconds >= 1 )) || seconds=1
  # New inputs go to a scratch corpus; the committed seeds are only read.
  work="$build/fuzz-corpus/$target"
  mkdir -p "$work"
  echo "fuzz: $target for ${seconds}s"
  if ! "$build/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -dict="$root/tests/fuzz/$dict.dict" \
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

#!/usr/bin/env bash
# Times `run --transport cuda-loopback` over the committed suite for each CLI given (e.g. this
# branch's and main's, to compare a change of the loopback's dataflow), one after the other on
# the same GPU, and compares every report with the committed H200 report: every digest must be
# the same. Prints one line per CLI: wall seconds, the run's verdict line, compare's.
#   usage (device machine, repository root):
#     bash ci/device/time-loopback-suite.sh build-device/bin/reduce-verify [OTHER_CLI ...]
# The bundle's libraries (build-device/lib) are on the loader path; reports go to $OUT.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/rv-device-out}
golden="$root/golden/boxes/h200-cuda-loopback-nccl2.28.3.json"
mkdir -p "$out"
export LD_LIBRARY_PATH="$root/build-device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
i=0
for cli in "$@"; do
  i=$((i + 1))
  report="$out/loopback-suite-$i.json"
  start=$(date +%s.%N)
  "$cli" run --transport cuda-loopback --report "$report" >"$out/loopback-suite-$i.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  compare=$("$cli" compare "$report" "$golden" 2>&1 | tail -n1)
  printf '%-48s rc=%s %8.1f s | %s | compare: %s\n' "$cli" "$rc" \
    "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$(tail -n1 "$out/loopback-suite-$i.log")" "$compare"
done

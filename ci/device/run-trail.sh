#!/usr/bin/env bash
# The audit trail on a GPU machine (docs/DESIGN.md §12), in one run, from the
# repository root with build-device/ (ci/device/build-bundle.sh) and the machine's own python3
# and torch 2.x:
#   1. digest_tree_cuda_test: the leaves kernel (one tensor and pieces) against the host
#      reference;
#   2. bench_cuda_exact --benchmark_filter=DigestTree: bytes hashed per second against a
#      read-only probe and a copy, to $OUT/cuda-digest-tree.json;
#   3. python/bench/trail_overhead.py: the GPU digests against the host reference from Python
#      (one tensor and pieces), two identical runs' trails audited, and the trail's overhead at
#      batch 256, 1024, 4096, to $OUT/trail-overhead.json.
#   usage: bash ci/device/run-trail.sh        (OUT, default /tmp/rv-trail-out; TRAIL_ARGS, more
#          arguments for trail_overhead.py, e.g. "--profile 256")
set -uo pipefail
out=${OUT:-/tmp/rv-trail-out}
log=trail-log.txt
source "$(dirname "$0")/steps.sh"
: >>"$summary"
lib="$bundle/lib/libreduce_verify_c.so"
py_env=(env REDUCE_VERIFY_LIB="$lib" PYTHONPATH="$root/python" OMP_NUM_THREADS=1)

step "digest_tree_cuda_test" 120 "${bundle_env[@]}" "$bundle/bin/digest_tree_cuda_test"
step "bench_cuda_exact --benchmark_filter=DigestTree" 120 "${bundle_env[@]}" \
  "$bundle/bin/bench_cuda_exact" --benchmark_filter=DigestTree --benchmark_counters_tabular=true \
  --benchmark_out="$out/cuda-digest-tree.json" --benchmark_out_format=json
grep -E '^BM_DigestTree' "$out/trail-log.txt" | tee -a "$summary"
step "trail_overhead.py (digest check, audit, overhead)" 400 "${py_env[@]}" \
  python3 "$root/python/bench/trail_overhead.py" --out "$out" --tool "$shim" \
  ${TRAIL_ARGS:-}
grep -E '^(batch |tree |trail against |wrote )' "$out/trail-log.txt" | tee -a "$summary"

#!/usr/bin/env bash
# The wave's cost targets on one GPU in one run (issues 18 and 20), from the
# repository root with build-device/ (ci/device/build-bundle.sh) and the machine's python3:
#   1. gpu_accumulator_test, gpu_capi_dtype_test, digest_tree_cuda_test, the accumulator's
#      benchmark (a copy's fraction), tests/python/test_accumulate_gpu.py and
#      tests/python/test_trail_gpu.py;
#   2. accumulate_overhead.py: ExactGradAccumulator ÷ DDP's float accumulation, batch 256,
#      1024, 4096;
#   3. trail_overhead.py: the trail against the host reference's digests, then its overhead
#      at batch 256, 1024, 4096;
#   4. ddp_hook_overhead.py, three runs (the hooks' host cost).
# PROFILE=1 adds torch.profiler tables and the accumulator's phases (accumulator at 1024, trail
# at 256 and 1024); HOOK_BATCHES (default 256) are the batches of step 4.
# Everything lands in $OUT (default /tmp/rv-wave-costs) as summary.txt, log.txt and the
# scripts' JSON and profile files.
#   usage: run(command="bash ci/device/run-wave-costs.sh", carry=["build-device"])
set -uo pipefail
out=${OUT:-/tmp/rv-wave-costs}
log=log.txt
source "$(dirname "$0")/steps.sh"
: >"$summary"
export OMP_NUM_THREADS=1
py=(env REDUCE_VERIFY_LIB="$bundle/lib/libreduce_verify_c.so"
    REDUCE_VERIFY="$shim" PYTHONPATH="$root/python:$root/tests/python" python3)
note "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

step "gpu_accumulator_test" 200 "${bundle_env[@]}" "$bundle/bin/gpu_accumulator_test"
step "gpu_capi_dtype_test" 120 "${bundle_env[@]}" "$bundle/bin/gpu_capi_dtype_test"
step "digest_tree_cuda_test" 120 "${bundle_env[@]}" "$bundle/bin/digest_tree_cuda_test"
step "bench_cuda_exact --benchmark_filter=Accumulator" 120 "${bundle_env[@]}" \
  "$bundle/bin/bench_cuda_exact" --benchmark_filter=Accumulator --benchmark_repetitions=3 \
  --benchmark_counters_tabular=true --benchmark_out="$out/cuda-accumulator.json" \
  --benchmark_out_format=json
grep -E 'Accumulator.*median' "$out/log.txt" | tee -a "$summary"
step "test_accumulate_gpu.py (3 groupings, CLI replay)" 200 \
  "${py[@]}" "$root/tests/python/test_accumulate_gpu.py"
step "test_trail_gpu.py (stream order, delayed digests, mutant)" 300 \
  "${py[@]}" "$root/tests/python/test_trail_gpu.py"
step "accumulate_overhead.py" 300 "${py[@]}" "$root/python/bench/accumulate_overhead.py" \
  --out "$out"
if [[ -n "${PROFILE:-}" ]]; then
  step "accumulate_overhead.py --profile (1024)" 200 "${py[@]}" \
    "$root/python/bench/accumulate_overhead.py" --out "$out/profile" --batches 1024 \
    --rounds 2 --profile --phases
fi
step "trail_overhead.py (reference check, overhead)" 400 "${py[@]}" \
  "$root/python/bench/trail_overhead.py" --out "$out" --tool "$shim" \
  ${PROFILE:+--profile 256,1024} ${TRAIL_ARGS:-}
grep -E '^(batch |trail against |wrote |tree )' "$out/log.txt" | grep -v '^tree n=' |
  tee -a "$summary"
for run in 1 2 3; do
  step "ddp_hook_overhead.py batch ${HOOK_BATCHES:-256}, run $run" 200 "${py[@]}" \
    "$root/python/bench/ddp_hook_overhead.py" --out "$out/hooks-$run" \
    --batches "${HOOK_BATCHES:-256}" --skip replay,recorded
done
grep -E '^batch [0-9]+:' "$out/log.txt" | tee -a "$summary"
# TRAIL_AB=DIR (a python/ tree of an earlier commit, e.g. staged in the bundle): the trail's
# overhead at 256 and 1024 with that tree's package and with this one's, interleaved twice on
# this machine (timings only), into trail-ab.jsonl.
if [[ -n "${TRAIL_AB:-}" ]]; then
  for run in 1 2; do
    for tree in "$TRAIL_AB" "$root/python"; do
      label=$([[ $tree == "$root/python" ]] && echo current || echo earlier)
      step "trail A/B: $label, run $run" 200 env REDUCE_VERIFY_LIB="$bundle/lib/libreduce_verify_c.so" \
        python3 "$tree/bench/trail_overhead.py" --skip-checks --batches 256,1024 \
        --out "$out/ab-$label-$run"
      grep -E '^batch ' "$out/log.txt" | tail -4 | sed "s/^/$label $run: /" | tee -a "$summary"
      { printf '{"tree":"%s","run":%s,"report":' "$label" "$run"
        cat "$out/ab-$label-$run/trail-overhead.json"; echo '}'; } >>"$out/trail-ab.jsonl"
      rm -rf "$out/ab-$label-$run"
    done
  done
fi
# The profile tables go into one file, so $OUT holds a few files.
if [[ -d "$out/profile" ]]; then
  cat "$out"/profile/*.txt "$out"/trail-profile-*.txt >"$out/profiles.txt" 2>/dev/null
  rm -f "$out"/trail-profile-*.txt
  cp "$out/profile/accumulate-overhead.json" "$out/accumulate-phases.json" 2>/dev/null
  rm -rf "$out/profile"
fi
cat "$out"/hooks-*/ddp-hook-overhead.json >"$out/ddp-hook-overhead-runs.jsonl" 2>/dev/null &&
  rm -rf "$out"/hooks-*
note_failures

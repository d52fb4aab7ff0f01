#!/usr/bin/env bash
# The exact gradient accumulator on a GPU machine (docs/DESIGN.md §11), in one run,
# from the repository root with build-device/ (ci/device/build-bundle.sh) and the machine's
# own python3 and torch 2.x:
#   1. gpu_accumulator_test (worlds of GPU and host ranks against the straight reference);
#   2. bench_cuda_exact --benchmark_filter=Accumulator: the add against cudaMemcpy D2D of the
#      gradient (copy_fraction; target >= 0.8), to $OUT/cuda-accumulator-h200.json;
#   3. tests/python/test_accumulate_gpu.py: one process, 8 micro-batches in three groupings
#      and orders, one digest, equal to the CLI's CPU replay of the recorded gradients;
#   4. python/bench/accumulate_overhead.py: step time against DDP with float accumulation at
#      batch 256, 1024, 4096 (K = 4), to $OUT/accumulate-overhead.json;
#   5. with two or more GPUs, tests/python/accumulate_nccl_worlds.py: W x K = 1 x 8, 2 x 4,
#      (3 shuffled), 4 x 2, 8 x 1 over NCCL, one digest (and DDP float accumulation's, reported).
#   usage: bash ci/device/run-accumulator.sh        (OUT, default /tmp/rv-accumulator-out)
set -uo pipefail
out=${OUT:-/tmp/rv-accumulator-out}
log=log.txt
source "$(dirname "$0")/steps.sh"
: >"$summary"
lib="$bundle/lib/libreduce_verify_c.so"
[[ -f "$lib" ]] || lib="$root/build/capi/libreduce_verify_c.so"
py_env=(env REDUCE_VERIFY_LIB="$lib" REDUCE_VERIFY="$shim"
        PYTHONPATH="$root/python:$root/tests/python" OMP_NUM_THREADS=1)
note "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)," \
  "$(nvidia-smi -L | wc -l) GPU(s); library $lib"

step "gpu_accumulator_test" 240 "${bundle_env[@]}" "$bundle/bin/gpu_accumulator_test"
step "bench_cuda_exact --benchmark_filter=Accumulator" 240 "${bundle_env[@]}" \
  "$bundle/bin/bench_cuda_exact" \
  --benchmark_filter=Accumulator --benchmark_repetitions=3 --benchmark_counters_tabular=true \
  --benchmark_out="$out/cuda-accumulator-h200.json" --benchmark_out_format=json
grep -E 'Accumulator.*(median|mean)' "$out/log.txt" | tee -a "$summary"
step "test_accumulate_gpu.py (3 groupings, CLI replay)" 300 "${py_env[@]}" \
  python3 "$root/tests/python/test_accumulate_gpu.py"
step "accumulate_overhead.py (exact vs DDP float accumulation)" 400 "${py_env[@]}" \
  python3 "$root/python/bench/accumulate_overhead.py" --out "$out" --phases
grep -E '^batch ' "$out/log.txt" | tee -a "$summary"
if (($(nvidia-smi -L | wc -l) >= 2)); then
  step "accumulate_nccl_worlds.py (W x K over NCCL)" 400 "${py_env[@]}" \
    python3 "$root/tests/python/accumulate_nccl_worlds.py" --out "$out"
  grep -E '^(W = |  (exact|float)-|exact: )' "$out/log.txt" | tee -a "$summary"
fi
note_failures

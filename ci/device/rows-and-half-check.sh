#!/usr/bin/env bash
# The GPU check of what this wave built blind, in one run of at most 600 s, from the repository
# root with build-device/ (ci/device/build-bundle.sh), most needed first:
#   1. add_rows, the W rows of a reduce-scatter table in one launch (C ABI
#      rv_accumulator_add_rows): gpu_accumulator_test and gpu_capi_dtype_test against the
#      straight reference and the host, then the package's test_fsdp_gpu and
#      test_accumulate_gpu under the machine's torch (the FSDP comm adds through it on CUDA);
#   2. bench_cuda_exact BM_AccumulatorRows: a micro-batch of FSDP's accumulation, row by row
#      against one add_rows call, W = 2, 4, 8, shards of 1 Mi and 16 Mi, f32 and bf16;
#   3. bench_cuda_half at 1 Mi and 16 Mi elements (bf16; the default shapes and the exact
#      kernel's vector-s4-4blocks), once as before and once with --flush_l2
#      (bench/cuda/l2_flush.h), each summary to $OUT;
#   4. gpu_half_stacked_kernel_test's EveryShapeEqualsHost (vector-s4-4blocks among the shapes).
#   usage: run(command="bash ci/device/rows-and-half-check.sh", carry=["build-device"])
set -uo pipefail
out=${OUT:-/tmp/rv-rows-and-half}
log=log.txt
budget=${RV_DEVICE_BUDGET:-560}
source "$(dirname "$0")/steps.sh"
: >"$summary"
note_machine
step "gpu_accumulator_test" 120 "${bundle_env[@]}" "$bundle/bin/gpu_accumulator_test" \
  --gtest_brief=1
step "gpu_capi_dtype_test" 60 "${bundle_env[@]}" "$bundle/bin/gpu_capi_dtype_test" --gtest_brief=1
for test in test_fsdp_gpu test_accumulate_gpu; do
  step "python $test.py" 120 "${py[@]}" "$root/tests/python/$test.py"
done
step "bench_cuda_exact BM_AccumulatorRows" 90 "${bundle_env[@]}" \
  "$bundle/bin/bench_cuda_exact" --benchmark_filter=AccumulatorRows \
  --benchmark_out="$out/accumulator-rows.json" --benchmark_out_format=json
# fold: b4x1 (2) and vector-s4 (7); exact: staged-s4x2 (6), vector-s4 (9), vector-s4-4blocks (10).
sizes='n:(1048576|16777216)'
filter="BM_HalfVsCopy/kernel:(0/dtype:0/W:[0-9]+/$sizes/.*/shape:(2|7)"
filter+="|1/dtype:0/W:[0-9]+/$sizes/.*/shape:(6|9|10))/"
for mode in as-before flush-l2; do
  flag=()
  [[ $mode == flush-l2 ]] && flag=(--flush_l2)
  step_log="$out/half-$mode.log" step "bench_cuda_half $mode" 100 "${bundle_env[@]}" \
    "$bundle/bin/bench_cuda_half" "${flag[@]}" --benchmark_filter="$filter" \
    --benchmark_out="$out/cuda-half-$mode.json" --benchmark_out_format=json
  sed -n '/bench_cuda_half summary/,$p' "$out/half-$mode.log" >"$out/cuda-half-$mode-summary.txt"
done
step "gpu_half_stacked_kernel_test EveryShapeEqualsHost" 200 "${bundle_env[@]}" \
  "$bundle/bin/gpu_half_stacked_kernel_test" --gtest_brief=1 --gtest_filter='*EveryShape*'
grep -E '^\[  (FAILED|PASSED) ' "$out/$log" | tee -a "$summary"
note_failures

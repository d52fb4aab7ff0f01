#!/usr/bin/env bash
# This wave's GPU checks (issues 36 and 37) on one GPU, from the repository root with
# build-device/ (ci/device/build-bundle.sh) and the machine's python3 (torch 2.x, CUDA), in
# two parts so that each fits one run of at most 600 s:
#   PART=tests (default)
#     1. every GPU test of the bundle: the half kernels' every shape against the host law
#        (the −0 of the exact two-units shape, issue 37), the C ABI's half entry points and the
#        accumulator's half finish on the device against the host's, the exact and loopback
#        worlds, the accumulator, the digest tree, NCCL's transport (the torch venv's NCCL);
#     2. bench_cuda_half at 2^20 and 2^24 elements (BENCH_FILTER overrides), every shape and
#        layout, with its summary (the default shape beside the best);
#   PART=proof
#     3. the package's Python tests on the GPU after its refactor: test_half, test_trail_gpu,
#        test_accumulate_gpu;
#     4. the CLI over the bf16/f16 golden cases on cuda-loopback, compared with the committed
#        CPU report;
#     5. accumulate_overhead.py at batch 1024 in f32 and in bf16 (the half finish's cost).
# Everything lands in $OUT (summary.txt, log.txt, JSON).
#   usage: run(command="PART=tests bash ci/device/wave-check.sh", carry=["build-device"])
set -uo pipefail
out=${OUT:-/tmp/rv-wave-check}
log=log.txt
source "$(dirname "$0")/steps.sh"
: >"$summary"
export OMP_NUM_THREADS=1 NCCL_DEBUG=${NCCL_DEBUG:-WARN}
note_machine

if [[ ${PART:-tests} == tests ]]; then
  for test in gpu_half_stacked_kernel_test gpu_capi_dtype_test gpu_accumulator_test \
              gpu_exact_kernel_test gpu_exact_world_test gpu_loopback_world_test \
              gpu_fold_kernel_test gpu_cuda_fixed_order_device_test cuda_host_test \
              digest_tree_cuda_test; do
    [[ -x $bundle/bin/$test ]] || { note "$test: not in the bundle"; continue; }
    limit=150
    [[ $test == gpu_half_stacked_kernel_test ]] && limit=240
    step "$test" "$limit" "${bundle_env[@]}" "$bundle/bin/$test" --gtest_brief=1
  done
  step "gpu_nccl_transport_test (${nccl_order[-1]} NCCL)" 120 env \
    "$(libs "${nccl_order[-1]}")" \
    NCCL_SOCKET_IFNAME=lo "$bundle/bin/gpu_nccl_transport_test"
  grep -E '^\[  (FAILED|PASSED) ' "$out/$log" | tee -a "$summary"
  step "bench_cuda_half" 220 "${bundle_env[@]}" "$bundle/bin/bench_cuda_half" \
    --benchmark_filter="${BENCH_FILTER:-/n:(1048576|16777216)/}" --benchmark_counters_tabular=true \
    --benchmark_out="$out/cuda-half.json" --benchmark_out_format=json
  sed -n '/bench_cuda_half summary/,$p' "$out/$log" >"$out/cuda-half-summary.txt"
else
  step "python test_half.py" 150 "${py[@]}" "$root/tests/python/test_half.py"
  step "python test_trail_gpu.py" 240 "${py[@]}" "$root/tests/python/test_trail_gpu.py"
  step "python test_accumulate_gpu.py" 200 "${py[@]}" "$root/tests/python/test_accumulate_gpu.py"
  cpu_report="$root/golden/boxes/cpu-gloo-half.json"
  step "cli run cuda-loopback --dtype bf16,f16" 200 "${bundle_env[@]}" "$bundle/bin/reduce-verify" \
    run --transport cuda-loopback --dtype bf16,f16 --report "$out/cuda-loopback-half.json"
  step "cli compare cuda-loopback half with $cpu_report" 60 "$shim" compare \
    "$out/cuda-loopback-half.json" "$cpu_report"
  for dtype in f32 bf16; do
    step "accumulate_overhead.py --dtype $dtype (1024)" 200 "${py[@]}" \
      "$root/python/bench/accumulate_overhead.py" --out "$out" --batches 1024 --dtype "$dtype"
  done
  grep -E '^batch [0-9]+ \(K' "$out/$log" | tee -a "$summary"
fi
note_failures
exit 0

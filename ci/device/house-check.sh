#!/usr/bin/env bash
# Issue 40's GPU check on one GPU, after the house's second pass (core/cuda grouped by
# contract, FixedOrderDevice, the C ABI's rv_fixed_order_reduce_stacked*, the loopback ranks
# over run's RankReducers), from the repository root with build-device/
# (ci/device/build-bundle.sh), in two parts so that each fits one run of at most 600 s:
#   PART=tests (default)
#     1. every GPU test program of the bundle (gpu_*, cuda_host_test, digest_tree_cuda_test),
#        NCCL's transport test under the torch venv's NCCL;
#     2. the package's GPU tests through the renamed C ABI: test_half, test_accumulate_gpu,
#        test_fsdp_gpu, test_trail_gpu;
#   PART=suite
#     3. the CLI over the whole golden suite on cuda-loopback: f32, bf16 and f16 all-reduces
#        and the reduce-scatter cases, each report compared with the committed one of the same
#        cases (the H200's f32 loopback report, the H100's half and reduce-scatter reports).
# Everything lands in $OUT (summary.txt, log.txt, the JSON reports).
#   usage: run(command="PART=tests bash ci/device/house-check.sh", carry=["build-device"])
set -uo pipefail
out=${OUT:-/tmp/rv-house-check}
log=log.txt
source "$(dirname "$0")/steps.sh"
: >"$summary"
export OMP_NUM_THREADS=1 NCCL_DEBUG=${NCCL_DEBUG:-WARN}
note_machine

if [[ ${PART:-tests} == tests ]]; then
  for program in "$bundle"/bin/gpu_* "$bundle/bin/cuda_host_test" \
                 "$bundle/bin/digest_tree_cuda_test"; do
    test=$(basename "$program")
    [[ -x $program ]] || { note "$test: not in the bundle"; continue; }
    if [[ $test == gpu_nccl_transport_test ]]; then
      step "$test (${nccl_order[-1]} NCCL)" 120 env \
        "$(libs "${nccl_order[-1]}")" \
        NCCL_SOCKET_IFNAME=lo "$program" --gtest_brief=1
      continue
    fi
    limit=120
    [[ $test == gpu_half_stacked_kernel_test ]] && limit=240
    step "$test" "$limit" "${bundle_env[@]}" "$program" --gtest_brief=1
  done
  grep -E '^\[  (FAILED|PASSED) ' "$out/$log" | tee -a "$summary"
  for test in test_half test_accumulate_gpu test_fsdp_gpu test_trail_gpu; do
    step "python $test.py" 150 "${py[@]}" "$root/tests/python/$test.py"
  done
else
  boxes="$root/golden/boxes"
  xz -dkc "$boxes/h100-cuda-loopback-reduce-scatter.json.xz" >"$out/committed-rs.json"
  # `run` with no --dtype and --coll takes every golden line (7844 cases, 275 s on an H100):
  # each collective and dtype apart keeps every step inside its limit.
  step "cli run cuda-loopback f32" 200 "$shim" run --transport cuda-loopback \
    --dtype f32 --coll all-reduce --report "$out/cuda-loopback-f32.json"
  step "cli compare f32 with the H200's loopback report" 60 "$shim" compare \
    "$out/cuda-loopback-f32.json" "$boxes/h200-cuda-loopback-nccl2.28.9.json"
  step "cli run cuda-loopback bf16,f16" 200 "$shim" run --transport cuda-loopback \
    --dtype bf16,f16 --coll all-reduce --report "$out/cuda-loopback-half.json"
  step "cli compare half with the H100's half report" 60 "$shim" compare \
    "$out/cuda-loopback-half.json" "$boxes/h100-cuda-loopback-half-9965dd6.json"
  step "cli run cuda-loopback --coll reduce-scatter" 150 "$shim" run --transport cuda-loopback \
    --coll reduce-scatter --dtype f32,bf16,f16 --report "$out/cuda-loopback-rs.json"
  step "cli compare reduce-scatter with the H100's report" 60 "$shim" compare \
    "$out/cuda-loopback-rs.json" "$out/committed-rs.json"
  rm -f "$out/committed-rs.json"
  grep -E '(passed|failed|agree|differ)' "$out/$log" | tail -20 >>"$summary"
fi
note_failures

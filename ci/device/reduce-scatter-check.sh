#!/usr/bin/env bash
# The reduce-scatter on one GPU (issue 38), from the repository root with build-device/
# (ci/device/build-bundle.sh), in one run of at most 600 s:
#   1. gpu_reduce_scatter_test (every shard over the loopback transport against EmulatedWorld,
#      the exact device's owner reduction against the host's), and the exact and loopback
#      world tests the change touched;
#   2. the CLI over every reduce-scatter golden case on cuda-loopback (W = 1 … 256), compared
#      with the committed CPU report (golden/boxes/cpu-gloo-reduce-scatter.json, W = 2 … 8);
#   3. an NCCL world of one over the same cases under each NCCL (the system's and the torch
#      venv's; library-sum is ncclReduceScatter there), each compared with the loopback report;
#   4. the package's FSDP tests: on the GPU (tests/python/test_fsdp_gpu.py, one GPU: the comm
#      and clipping on CUDA tensors against the CPU's bits), and the CI's FSDP splits on the
#      machine's CPUs under its torch, W = 8 included (tests/python/test_fsdp.py).
# Everything lands in $OUT (summary.txt, log.txt, the JSON reports).
#   usage: bash ci/device/reduce-scatter-check.sh   (with build-device/ carried)
set -uo pipefail
out=${OUT:-/tmp/rv-reduce-scatter-check}
log=log.txt
source "$(dirname "$0")/steps.sh"
: >"$summary"
export OMP_NUM_THREADS=1 NCCL_DEBUG=${NCCL_DEBUG:-WARN}
note "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
note "bundle: $(head -1 "$bundle/BUILD")"

for test in gpu_reduce_scatter_test gpu_exact_world_test gpu_loopback_world_test; do
  step "$test" 200 "${bundle_env[@]}" "$bundle/bin/$test" --gtest_brief=1
done
grep -E '^\[  (FAILED|PASSED) ' "$out/$log" | tee -a "$summary"

loopback="$out/cuda-loopback-reduce-scatter.json"
step "cli run cuda-loopback --coll reduce-scatter" 200 "$shim" run --transport cuda-loopback \
  --coll reduce-scatter --report "$loopback"
step "cli compare loopback with the CPU report" 60 "$shim" compare "$loopback" \
  "$root/golden/boxes/cpu-gloo-reduce-scatter.json"
for tag in "${nccl_order[@]}"; do
  report="$out/nccl1-reduce-scatter-$tag.json"
  step "cli run nccl W=1 --coll reduce-scatter ($tag NCCL)" 120 env \
    "$(libs "$tag")" NCCL_SOCKET_IFNAME=lo \
    "$bundle/bin/reduce-verify" run --transport nccl --max-world 1 --coll reduce-scatter \
    --report "$report"
  step "cli compare nccl ($tag) with the loopback report" 60 "$shim" compare "$report" "$loopback"
done
grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/$log" | tee -a "$summary"

py=(env REDUCE_VERIFY_LIB="$bundle/lib/libreduce_verify_c.so" REDUCE_VERIFY="$shim"
    REDUCE_VERIFY_HAS_GLOO=1 PYTHONPATH="$root/python:$root/tests/python" python3)
step "python test_fsdp_gpu.py" 150 "${py[@]}" "$root/tests/python/test_fsdp_gpu.py" -v
# The CI's FSDP splits again on this machine's CPUs under its torch, W = 8 included (FSDP2 on
# CPU tensors needs CUDA hidden under a CUDA build of torch).
step "python test_fsdp.py on the CPUs, W up to 8" 200 env CUDA_VISIBLE_DEVICES= \
  REDUCE_VERIFY_FSDP_W8=1 "${py[@]}" "$root/tests/python/test_fsdp.py" -v
grep -E 'distinct|digest' "$out/$log" | tail -n 8 | tee -a "$summary"
note_failures
exit 0

#!/usr/bin/env bash
# The bf16/f16 proof on one GPU (issue 19), in one run, from the bundle
# ci/device/build-bundle.sh staged in build-device/ and a CPU report made beforehand:
#   1. the GPU tests of the half-precision pieces (native 2-byte kernels, the CUDA exact
#      rounding to a half dtype, cuda-loopback with halves, the C ABI's dtype entry points)
#      and NCCL's half sum, under each NCCL library
#   2. bench_cuda_half: the bf16/f16 fold and exact stacked kernels against cudaMemcpy D2D
#   3. the CLI: the bf16/f16 golden cases on cuda-loopback, every digest compared with the CPU
#      report (CPU_REPORT, default golden/boxes/cpu-gloo-half.json), and an NCCL world of one
#      over them under each NCCL, with --accuracy
#   4. the Python half tests under the device's torch 2.x (CPU Gloo, the bundle's C ABI)
# Logs and reports go to $OUT (few files: the device returns at most a handful well); every
# step runs, and summary.txt says what failed.
#   usage (device machine, repository root):  bash ci/device/half-proof.sh
set -uo pipefail
out=${OUT:-/tmp/rv-half-out}
log=half.log
budget=${RV_DEVICE_BUDGET:-540}
# root, bundle, summary, the step helper and the CLI's shim (which sets the bundle's lib/ for
# the CLI alone: every call of the CLI, the compare steps and the Python test's included, needs
# Debian's Gloo from there).
source "$(dirname "$0")/steps.sh"
cpu_report=${CPU_REPORT:-"$root/golden/boxes/cpu-gloo-half.json"}
: >"$summary"
: >"$out/$log"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
cli="$shim"

note "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
note "bundle: $(head -1 "$bundle/BUILD")"

# 1. GPU tests.
key=system
step "tests gpu_half_stacked_kernel_test" 150 env "$(libs $key)" "$bundle/bin/gpu_half_stacked_kernel_test"
step "tests gpu_exact_world_test" 150 env "$(libs $key)" "$bundle/bin/gpu_exact_world_test"
step "tests gpu_loopback_world_test" 120 env "$(libs $key)" "$bundle/bin/gpu_loopback_world_test"
[[ -x $bundle/bin/gpu_capi_dtype_test ]] &&
  step "tests gpu_capi_dtype_test" 60 env "$(libs $key)" "$bundle/bin/gpu_capi_dtype_test"
for key in "${nccl_order[@]}"; do
  step "tests[$key] gpu_nccl_transport_test" 120 env "$(libs $key)" NCCL_SOCKET_IFNAME=lo \
    "$bundle/bin/gpu_nccl_transport_test"
done

# 2. The half kernels against cudaMemcpy.
step "bench_cuda_half" 200 env "$(libs system)" "$bundle/bin/bench_cuda_half" \
  --benchmark_counters_tabular=true --benchmark_out="$out/cuda-half-h200.json" \
  --benchmark_out_format=json

# 3. The CLI over the bf16/f16 golden cases.
for key in "${nccl_order[@]}"; do
  if [[ $key == system ]]; then  # cuda-loopback loads no NCCL: once is enough
    step "cli run cuda-loopback --dtype bf16,f16" 200 env "$(libs $key)" "$cli" run \
      --transport cuda-loopback --dtype bf16,f16 --report "$out/h200-cuda-loopback-half.json"
    step "cli compare cuda-loopback half with the CPU report" 60 "$cli" compare \
      "$out/h200-cuda-loopback-half.json" "$cpu_report"
  fi
  step "cli[$key] run nccl --world 1 --dtype bf16,f16 --accuracy" 150 env "$(libs $key)" \
    NCCL_SOCKET_IFNAME=lo "$cli" run --transport nccl --world 1 --dtype bf16,f16 --accuracy \
    --report "$out/1xh200-nccl-half-$key.json"
  step "cli[$key] compare nccl world of one with the CPU report" 60 "$cli" compare \
    "$out/1xh200-nccl-half-$key.json" "$cpu_report"
done

# 4. The Python half tests under torch 2.x.
step "python test_half (torch $(python3 -c 'import torch; print(torch.__version__)' 2>&1))" 150 \
  env REDUCE_VERIFY_LIB="$bundle/lib/libreduce_verify_c.so" PYTHONPATH="$root/python" \
  REDUCE_VERIFY="$cli" REDUCE_VERIFY_HAS_GLOO=1 python3 "$root/tests/python/test_half.py"

python3 - "$out/cuda-half-h200.json" <<'EOF' | tee -a "$summary"
import json, sys
try:
    data = json.load(open(sys.argv[1]))
except Exception as e:
    print("no half benchmark JSON:", e); sys.exit(0)
rows = [b for b in data["benchmarks"] if "copy_fraction" in b]
print(f"half kernels: {len(rows)} runs")
for b in rows:
    print(f"  {b['name'].split('/iterations')[0]:70} {b.get('label',''):40} {b['copy_fraction']:.3f}")
EOF
note_failures
exit 0

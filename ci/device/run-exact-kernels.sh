#!/usr/bin/env bash
# The exact contract's GPU kernels alone, in one short run: their tests (bit for bit
# against host_exact.cc) and their benchmark (copy_fraction against cudaMemcpy D2D), from the
# bundle ci/device/build-bundle.sh staged in build-device/. Results under $OUT.
#   usage (device machine, repository root):  bash ci/device/run-exact-kernels.sh
set -u
out=${OUT:-/tmp/rv-device-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu:$PWD/build-device/lib NCCL_NVLS_ENABLE=0
b=build-device/bin
"$b/gpu_exact_kernel_test" >"$out/exact-tests.log" 2>&1; echo "gpu_exact_kernel_test rc=$?"
"$b/gpu_exact_world_test" >>"$out/exact-tests.log" 2>&1; echo "gpu_exact_world_test rc=$?"
grep -E "^\[  (PASSED|FAILED)" "$out/exact-tests.log"
"$b/bench_cuda_exact" --benchmark_repetitions=3 --benchmark_counters_tabular=true \
  --benchmark_out="$out/cuda-exact-h200.json" --benchmark_out_format=json >"$out/bench.log" 2>&1
echo "bench_cuda_exact rc=$?"
python3 - "$out/cuda-exact-h200.json" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
for b in data["benchmarks"]:
    if b.get("aggregate_name") == "median":
        print(f"{b['run_name'][:60]:60} {b.get('label', ''):40} {b['copy_fraction']:.3f} {b['kernel_GBps']:.0f}")
PY

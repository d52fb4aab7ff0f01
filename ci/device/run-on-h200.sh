#!/usr/bin/env bash
# Everything the GPU proof needs, in one run (kept short), on a machine
# with one NVIDIA GPU, from the bundle ci/device/build-bundle.sh staged in build-device/:
#   1. the machine: GPU, driver, NCCL libraries present
#   2. the gpu tests, once under each NCCL library (LD_LIBRARY_PATH picks it), into tests.log
#   3. the fold benchmark (fold vs cudaMemcpy D2D) and the exact kernels' benchmark (encode,
#      round, agreement vs cudaMemcpy D2D), JSON with GPU/driver/CUDA/NCCL context; the
#      benchmarks' console output goes into the reports archive (bench.log), keeping $OUT at
#      8 files
#   4. a world-of-one smoke run of the NCCL benchmark (it measures only with >= 2 GPUs)
#   5. the CLI, when the bundle has it: info, run --transport cuda-loopback over the
#      committed suite (compared with golden/boxes' H200 report; the step's seconds are in
#      summary.txt) and over raw special-value inputs, run --transport nccl --world 1,
#      under each NCCL
# Logs and results go to $OUT (a few files: keep it so). Never stops at the
# first failure: every step runs, and the summary at the end says what failed.
#   usage (device machine, repository root):  bash ci/device/run-on-h200.sh
set -uo pipefail
out=${OUT:-/tmp/rv-device-out}
log=tests.log
# The whole script stays inside one run's limit: a step gets at most what is left.
budget=${RV_DEVICE_BUDGET:-450}
# root, bundle, summary and the note/step helpers (each step's log is $step_log, set below).
source "$(dirname "$0")/steps.sh"
work=$(mktemp -d /tmp/rv-device.XXXXXX)
mkdir -p "$work/reports"
: >"$summary"

# NVLink multicast stays off on these shared hosts (KINDS.md), here and in every child.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}


# 1. The machine.
{
  echo "== bundle"; cat "$bundle/BUILD"
  echo "== host"; uname -a; nproc; free -g | head -2
  echo "== nvidia-smi"; nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,power.limit --format=csv
  echo "== NCCL libraries"
  for key in "${nccl_order[@]}"; do
    ls -l "${nccl_dirs[$key]}"/libnccl.so* 2>&1
  done
  echo "== loader"; ldconfig -p | grep -E "libnccl|libcuda\.so" ; echo "== ldd"
  for b in "$bundle"/bin/*; do echo "-- $b"; LD_LIBRARY_PATH="$bundle/lib" ldd "$b" | grep -E "not found|=>" ; done
  echo "== sanitizer"; command -v compute-sanitizer || echo "no compute-sanitizer"
} >"$out/machine.txt" 2>&1
note "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"

# 2. The gpu tests: all of them under the first NCCL; under the others, the ones that load
# NCCL (the kernel, device and loopback tests never do). One log for every NCCL (each step's
# header names it): the results folder holds at most 8 files.
tests_log="$out/tests.log"
: >"$tests_log"
run_tests() {  # run_tests KEY TEST...
  local key=$1
  shift
  step_log="$tests_log"
  local first_line=$(($(wc -l <"$step_log") + 1))
  for t in "$@"; do
    if ! step "tests[$key] $t" 240 env "$(libs "$key")" "$bundle/bin/$t" \
         --gtest_output="xml:$work/reports/$t-$key.xml"; then
      if [[ $t == gpu_nccl_transport_test && -z ${NCCL_SOCKET_IFNAME:-} ]]; then
        # Bootstrap may find no usable interface on an isolated machine: try the loopback.
        step "tests[$key] $t (NCCL_SOCKET_IFNAME=lo)" 120 \
          env "$(libs "$key")" NCCL_SOCKET_IFNAME=lo "$bundle/bin/$t" \
          --gtest_output="xml:$work/reports/$t-$key-lo.xml"
      fi
    fi
  done
  tail -n +"$first_line" "$step_log" | grep -hE "^(using|loaded) NCCL" | sort -u |
    sed "s/^/  [$key] /" | tee -a "$summary"
}
run_tests system gpu_fold_kernel_test gpu_cuda_fixed_order_device_test gpu_loopback_world_test \
  gpu_exact_kernel_test gpu_exact_world_test gpu_accumulator_test gpu_nccl_transport_test \
  cuda_host_test gpu_half_stacked_kernel_test

# 3. The fold benchmark (3 repetitions: the spread shows in the aggregates).
step_log="$work/reports/bench.log"
: >"$step_log"
step "bench_cuda (fold vs cudaMemcpy D2D)" 300 env "$(libs system)" "$bundle/bin/bench_cuda" \
  --benchmark_filter=BM_FoldVsCopy \
  --benchmark_repetitions=3 --benchmark_counters_tabular=true \
  --benchmark_out="$out/cuda-fold-h200.json" --benchmark_out_format=json
step "bench_cuda_exact (exact kernels and the accumulator vs cudaMemcpy D2D)" 200 env "$(libs system)" \
  "$bundle/bin/bench_cuda_exact" --benchmark_repetitions=3 --benchmark_counters_tabular=true \
  --benchmark_out="$out/cuda-exact-h200.json" --benchmark_out_format=json
step "bench_cuda_half (bf16/f16 fold and exact stacked kernels vs cudaMemcpy D2D)" 300 \
  env "$(libs system)" "$bundle/bin/bench_cuda_half" --benchmark_counters_tabular=true \
  --benchmark_out="$out/cuda-half-h200.json" --benchmark_out_format=json
# 4. The NCCL benchmark as a world of one (a smoke test: it needs >= 2 GPUs to measure).
step "bench_nccl world of one (smoke, <= 64 MiB)" 120 env "$(libs system)" \
  REDUCE_VERIFY_RENDEZVOUS="$work/rdv" "$bundle/bin/bench_nccl" \
  --max-bytes 67108864 --json "$work/reports/nccl-bench-w1.json"

for key in "${nccl_order[@]:1}"; do run_tests "$key" gpu_nccl_transport_test cuda_host_test; done

# 5. The CLI, when the bundle has it.
cli="$bundle/bin/reduce-verify"
if [[ -x $cli ]]; then
  step_log="$out/cli.log"
  : >"$step_log"
  # Raw inputs holding NaNs (assorted payloads), infinities, signed zeros and subnormals.
  python3 - "$work" <<'EOF' >>"$step_log" 2>&1
import struct, sys
work = sys.argv[1]
bits = [0x7FC00000, 0x7FA00001, 0xFFC12345, 0x7F800000, 0xFF800000, 0x00000000, 0x80000000,
        0x00000001, 0x80000001, 0x007FFFFF, 0x00400000, 0x3F800000, 0x33800000, 0x7F7FFFFF,
        0xFF7FFFFF, 0x80000000]
for rank in range(4):
    values = [bits[(i * (rank + 3) + rank) % len(bits)] for i in range(4099)]
    with open(f"{work}/raw{rank}.f32", "wb") as f:
        f.write(struct.pack(f"<{len(values)}I", *values))
print("raw inputs written")
EOF
  step "cli info" 60 env "$(libs system)" "$cli" info
  for key in "${nccl_order[@]}"; do
    step "cli[$key] run cuda-loopback (suite)" 300 env "$(libs "$key")" "$cli" run \
      --transport cuda-loopback --report "$work/reports/h200-cuda-loopback-$key.json" \
      --junit "$work/reports/h200-cuda-loopback-$key.xml"
    # Every digest against the committed H200 report (cuda-loopback loads no NCCL, so one
    # committed report serves every key).
    step "cli[$key] compare cuda-loopback with golden/boxes" 60 env "$(libs system)" \
      "$cli" compare \
      "$work/reports/h200-cuda-loopback-$key.json" \
      "$root/golden/boxes/h200-cuda-loopback-nccl2.28.3.json"
    for op in sum mean; do
      for contract in fixed-order exact; do
        step "cli[$key] run cuda-loopback --inputs (raw specials, $op, $contract)" 60 \
          env "$(libs "$key")" "$cli" run --transport cuda-loopback --op "$op" \
          --contract "$contract" --inputs "$work"/raw{0,1,2,3}.f32
      done
    done
    step "cli[$key] run nccl --world 1" 120 env "$(libs "$key")" "$cli" run \
      --transport nccl --world 1 --report "$work/reports/h200-nccl-w1-$key.json"
  done
  for contract in fixed-order exact; do
    step "cli digest --inputs (CPU reference for the raw inputs, $contract)" 60 \
      env "$(libs system)" "$cli" digest --contract "$contract" --inputs "$work"/raw{0,1,2,3}.f32
  done
else
  note "cli: not in the bundle, skipped"
fi

tar -czf "$out/reports.tar.gz" -C "$work" reports
# The fold benchmark's medians: the last table of the summary.
python3 - "$out/cuda-fold-h200.json" <<'EOF' | tee -a "$summary"
import json, sys
try:
    data = json.load(open(sys.argv[1]))
except Exception as e:
    print("no benchmark JSON:", e); sys.exit(0)
ctx = data.get("context", {})
print("gpu:", ctx.get("gpu"), "| driver", ctx.get("nvidia_driver"), "| CUDA", ctx.get("cuda_driver"),
      "/", ctx.get("cuda_runtime"), "|", ctx.get("nccl"))
# Run names end in /iterations:25/manual_time: left out, the arguments are what differs.
print(f"{'benchmark':48} {'label':52} {'fold GB/s':>10} {'copy GB/s':>10} {'fraction':>9}")
for b in data["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    name = b['run_name'].split('/iterations:')[0]
    print(f"{name:48} {b.get('label',''):52} {b['fold_GBps']:10.1f} {b['copy_GBps']:10.1f} {b['copy_fraction']:9.3f}")
EOF
# The exact kernels' medians (bytes moved = read + written; target copy_fraction >= 0.8).
python3 - "$out/cuda-exact-h200.json" <<'EOF' | tee -a "$summary"
import json, sys
try:
    data = json.load(open(sys.argv[1]))
except Exception as e:
    print("no exact benchmark JSON:", e); sys.exit(0)
print(f"{'exact kernel':38} {'label':40} {'B/elem':>6} {'GB/s':>8} {'copy GB/s':>10} {'fraction':>9}")
for b in data["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    print(f"{b['run_name']:38} {b.get('label', ''):40} {b['bytes_per_element']:6.2f} "
          f"{b['kernel_GBps']:8.1f} {b['copy_GBps']:10.1f} {b['copy_fraction']:9.3f}")
EOF
note_failures
exit 0

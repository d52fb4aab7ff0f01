#!/usr/bin/env bash
# Issue 5 in one run, on a machine with two or more GPUs (two to eight H100s or H200s),
# from the bundle ci/device/build-bundle.sh stages in build-device/:
#   1. run --transport nccl over the committed suite, every W from 2 to the GPU count, all
#      three contracts (exact through ncclAllReduce ncclInt64), under each NCCL library;
#      `compare` each report with the committed CPU one (fixed-order and exact must agree)
#   2. invariance: the fixed-order and exact digests must not change with the GPU order
#      reversed, or NCCL_ALGO=Ring|Tree, or NCCL_PROTO=Simple|LL (library-sum may: compare
#      lists which)
#   3. a fault: SIGKILL one rank mid-reduction; the world must end (exit 3) within the
#      deadline + 2 s with no rank process left (its 64 MiB arena is cut into two pieces, so
#      the survivors may be waiting in a started exchange: NcclTransport::start_exchange)
#   4. the NCCL benchmark (fixed-order, pipelined in 64 MiB pieces and, where that makes
#      several, in one piece, vs ncclAllReduce) at W = 2 and W = the GPU count; the summary
#      lists the pipelined and one-piece times of the sizes cut into pieces
#   5. the PyTorch hooks (issue 11) in a real NCCL world of every GPU, one process each:
#      step time against DDP's default all-reduce, and every recorded bucket of the W ranks'
#      real gradients replayed on the host (python/bench/ddp_hook_overhead.py --processes;
#      needs the bundle's libreduce_verify_c.so); its JSON and log go into reports.tar.gz
#   1b. (in step 1) the bf16/f16 golden cases over NCCL under all three contracts, --accuracy,
#      compared with golden/boxes/cpu-gloo-half.json
#   1c. (in step 1) the reduce-scatter golden cases (f32, bf16, f16) over NCCL, compared with
#      golden/boxes/cpu-gloo-reduce-scatter.json; the benchmark of step 4 times the
#      reduce-scatter against ncclReduceScatter too
#   6. exact gradient accumulation over NCCL, W x K = 1 x 8, 2 x 4, 4 x 2, 8 x 1 (the W that
#      fit): one final parameter digest (tests/python/accumulate_nccl_worlds.py)
#   7. FSDP2 with reduce_verify.fsdp over NCCL: one final digest (tests/python/test_fsdp_gpu.py)
# NOT RUN YET: nothing has run on several GPUs so far (see docs/results.md).
#   usage (device machine, repository root): bash ci/device/multi-gpu-proof.sh
#   RV_DEVICE_BUDGET (default 540 s): the steps stop there, so the reports are still written
#   RV_DRY_RUN=1: print each step's command instead of running it (CI checks the plan with a
#     stand-in nvidia-smi: tests/device/multi_gpu_proof_plan_test.sh)
# With one GPU it runs the one-GPU proof (ci/device/run-on-h200.sh) and names every step above
# as not run; with none it stops (exit 2).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bundle="$root/build-device"
rv="$bundle/bin/reduce-verify"
out=${OUT:-/tmp/rv-multi-gpu-out}
work=$(mktemp -d /tmp/rv-multi-gpu.XXXXXX)
mkdir -p "$out" "$work/reports"
[[ -n ${RV_DRY_RUN:-} ]] && trap 'rm -rf "$work"' EXIT
summary="$out/summary.txt"
: >"$summary"
# NVLink multicast stays off in every process (the supervisor passes its environment on).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
gpus=$(nvidia-smi -L | grep -c '^GPU')
model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -c 'A-Za-z0-9' - | tr A-Z a-z | sed 's/-*$//')
cpu_report="$root/golden/boxes/cpu-amd-epyc-2core-gloo.json"
declare -A nccl_dirs=([system]=/usr/lib/x86_64-linux-gnu
                      [torch]=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib)
note() { echo "$*" | tee -a "$summary"; }
# The whole script stays inside one run of at most 600 s: each step gets at most what
# is left of RV_DEVICE_BUDGET, and a step with less than 20 s left is skipped and counted.
budget=${RV_DEVICE_BUDGET:-540}
left() { echo $((budget - SECONDS - 20)); }
check() {
  local name=$1; shift
  local limit; limit=$(left)
  if ((limit < 20)); then note "$(printf '%-60s rc=skipped (out of time)' "$name")"; return; fi
  local started=$SECONDS
  if [[ -n ${RV_DRY_RUN:-} ]]; then
    note "$(printf '%-60s plan: %s' "$name" "$*")"
    return
  fi
  timeout --kill-after=5 "$limit" "$@" >>"$out/log.txt" 2>&1
  note "$(printf '%-60s rc=%s %ss' "$name" $? $((SECONDS - started)))"
}
nccl_version() { basename "$(readlink -f "${nccl_dirs[$1]}/libnccl.so.2")" | sed 's/libnccl.so.//'; }
note "machine: $gpus x $model, $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
((gpus >= 1)) || { note "no GPU: nothing to prove here"; exit 2; }
if ((gpus == 1)); then
  # What one GPU can prove, then an honest list of what it cannot.
  check "one GPU: the one-GPU proof (run-on-h200.sh)" env OUT="$out/one-gpu" \
    bash "$root/ci/device/run-on-h200.sh"
  check "one GPU: the bf16/f16 proof (half-proof.sh)" env OUT="$out/one-gpu-half" \
    bash "$root/ci/device/half-proof.sh"
  for step in "suite over nccl, W >= 2, each NCCL" "invariance: GPU order, NCCL_ALGO, NCCL_PROTO" \
      "fault: a rank SIGKILLed mid-reduction" "nccl benchmark W >= 2" \
      "ddp hooks in an NCCL world of several GPUs" "bf16/f16 suite over nccl, W >= 2" \
      "reduce-scatter suite over nccl, W >= 2" "fsdp over NCCL, W >= 2"; do
    note "$(printf '%-60s rc=not-run (needs two or more GPUs)' "$step")"
  done
  exit 0
fi
worlds=$(seq -s, 2 "$gpus")

# 1. The suite over NCCL, under each library.
for key in system torch; do
  lib="LD_LIBRARY_PATH=${nccl_dirs[$key]}:$bundle/lib"
  report="$work/reports/${gpus}x${model}-nccl-nccl$(nccl_version $key).json"
  check "suite nccl[$key] W=$worlds" env "$lib" "$rv" run --transport nccl --world "$worlds" \
    --max-world "$gpus" --dtype f32 --coll all-reduce --report "$report"
  check "compare nccl[$key] with the CPU report" "$rv" compare "$report" "$cpu_report"
  # 1b. The bf16/f16 cases (issue 19): fixed-order, exact and NCCL's own half sum
  # (ncclBfloat16 / ncclFloat16), with each result's error against the correctly rounded sum.
  half="$work/reports/${gpus}x${model}-nccl-half-nccl$(nccl_version $key).json"
  check "half suite nccl[$key] W=$worlds --accuracy" env "$lib" "$rv" run --transport nccl \
    --world "$worlds" --max-world "$gpus" --dtype bf16,f16 --coll all-reduce --accuracy \
    --report "$half"
  check "compare half nccl[$key] with the CPU half report" "$rv" compare "$half" \
    "$root/golden/boxes/cpu-gloo-half.json"
  # 1c. The reduce-scatter cases (issue 38) in f32, bf16 and f16: fixed-order and exact must
  # equal the CPU's; library-sum is ncclReduceScatter, held to the association bound.
  scatter="$work/reports/${gpus}x${model}-nccl-reduce-scatter-nccl$(nccl_version $key).json"
  check "reduce-scatter suite nccl[$key] W=$worlds" env "$lib" "$rv" run --transport nccl \
    --world "$worlds" --max-world "$gpus" --coll reduce-scatter --report "$scatter"
  check "compare reduce-scatter nccl[$key] with the CPU report" "$rv" compare "$scatter" \
    "$root/golden/boxes/cpu-gloo-reduce-scatter.json"
done

# 2. Invariance, at the largest W, under the system library.
lib="LD_LIBRARY_PATH=${nccl_dirs[system]}:$bundle/lib"
base="$work/reports/${gpus}x${model}-nccl-nccl$(nccl_version system).json"
reversed=$(seq -s, $((gpus - 1)) -1 0)
for variant in "CUDA_VISIBLE_DEVICES=$reversed" NCCL_ALGO=Ring NCCL_ALGO=Tree NCCL_PROTO=Simple NCCL_PROTO=LL; do
  tag=$(echo "$variant" | tr -c 'A-Za-z0-9' _)
  report="$work/reports/invariance-$tag.json"
  check "invariance $variant: run" env "$lib" "$variant" "$rv" run --transport nccl --world "$gpus" --report "$report"
  check "invariance $variant: fixed-order unchanged" "$rv" compare "$report" "$base"
done

# 3. A rank SIGKILLed mid-reduction (about 20 s).
case="contract=fixed-order,op=sum,w=$gpus,n=16777259,dist=normal,seed=3,gen=1"
if [[ -n ${RV_DRY_RUN:-} ]]; then note "fault: plan: SIGKILL one rank of $case mid-run"
elif (($(left) < 40)); then note "fault: rc=skipped (out of time)"; else
env "$lib" "$rv" run --transport nccl --case "$case" --iters 1000 --timeout 10 >"$work/fault.log" 2>&1 &
supervisor=$!
sleep 8
ranks=$(pgrep -P "$supervisor")
victim=$(echo "$ranks" | tail -1)
if [[ -z $victim ]]; then
  wait "$supervisor"
  note "fault: rc=1: no rank process to kill after 8 s (supervisor rc=$?; the run ended early?)"
else
  start=$(date +%s%N)
  kill -KILL "$victim"
  wait "$supervisor"
  rc=$?
  took=$((($(date +%s%N) - start) / 1000000))
  sleep 0.5
  left=0
  for pid in $ranks; do kill -0 "$pid" 2>/dev/null && left=$((left + 1)); done
  note "fault: SIGKILL rank pid $victim: supervisor rc=$rc after $took ms, $left of $(echo "$ranks" | wc -w) rank processes left"
fi
cat "$work/fault.log" >>"$out/log.txt"
fi

# 4. The benchmark at W = 2 and W = the GPU count.
check "nccl benchmark W=2" env OUT="$out" bash "$root/ci/device/run-nccl-bench.sh" 2
((gpus > 2)) && check "nccl benchmark W=$gpus" env OUT="$out" bash "$root/ci/device/run-nccl-bench.sh" "$gpus"
# The fixed-order pipeline (pieces of 64 MiB tables) against one piece, per size cut in pieces.
python3 - "$out"/nccl-bench-W*.json <<'EOF' | tee -a "$summary"
import json, os, sys
for path in sys.argv[1:]:
    try:
        data = json.load(open(path))
    except Exception as e:
        print("no NCCL benchmark JSON:", path, e); continue
    print(f"{os.path.basename(path)}: {data['context'].get('nccl')}")
    print(f"  {'bytes':>12} {'pieces':>6} {'pipelined us':>13} {'1-piece us':>11} {'ratio':>6} {'nccl us':>9}")
    for r in data["results"]:
        if r.get("fixed_order_pieces", 1) > 1:
            print(f"  {r['bytes']:12} {r['fixed_order_pieces']:6} {r['fixed_order_us']:13.1f} "
                  f"{r['fixed_order_one_piece_us']:11.1f} {r['pipelined_over_one_piece_time']:6.3f} "
                  f"{r['nccl_allreduce_us']:9.1f}")
EOF
# 5. The DDP hooks over every GPU (about 60 s; figures in the summary, files in the archive).
mkdir -p "$work/ddp"
check "ddp hooks, NCCL world of $gpus processes" env OUT="$work/ddp" \
  bash "$root/ci/device/run-ddp-hook-bench.sh" --processes "$gpus" --batches 256,1024 --rounds 3
grep -E '^batch|replays agree' "$work/ddp/ddp-hook-bench.log" 2>/dev/null | tee -a "$summary"

# 6. Exact gradient accumulation over NCCL: W x K = 1 x 8, 2 x 4, 4 x 2, 8 x 1 (the W that fit;
#    3 ranks shuffled), one final digest (issue 18); DDP's float accumulation reported.
check "accumulation W x K over NCCL (one digest)" env REDUCE_VERIFY_LIB="$bundle/lib/libreduce_verify_c.so" \
  REDUCE_VERIFY="$rv" PYTHONPATH="$root/python:$root/tests/python" OMP_NUM_THREADS=1 \
  python3 "$root/tests/python/accumulate_nccl_worlds.py" --out "$work/ddp"
grep -E '^(  (exact|float)-|exact: )' "$out/log.txt" | tail -n 12 | tee -a "$summary"

# 7. FSDP2 with reduce_verify.fsdp over NCCL (issue 39): the comm on CUDA tensors against the
#    CPU's bits, and the training splits (1 x 8, DDP 2 x 4, FSDP 2 x 4, and 4 x 2, 3+2+2+1 with
#    four GPUs) ending with one parameter digest (tests/python/test_fsdp_gpu.py).
check "fsdp over NCCL (one digest)" env REDUCE_VERIFY_LIB="$bundle/lib/libreduce_verify_c.so" \
  REDUCE_VERIFY="$rv" REDUCE_VERIFY_HAS_GLOO=1 PYTHONPATH="$root/python:$root/tests/python" \
  OMP_NUM_THREADS=1 python3 "$root/tests/python/test_fsdp_gpu.py"

tar -czf "$out/reports.tar.gz" -C "$work" reports ddp
note "steps failed: $(grep -c 'rc=[1-9]' "$summary"), skipped: $(grep -c 'rc=skipped' "$summary")"

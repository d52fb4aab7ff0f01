#!/usr/bin/env bash
# The NCCL benchmark (fixed-order vs ncclAllReduce, 8 B .. 1 GiB) on a machine with two or
# more GPUs: W rank processes on this host, one GPU each, under each NCCL library.
# Not run yet: nothing has run on several GPUs so far.
#   usage (device machine, repository root):  bash ci/device/run-nccl-bench.sh [W]
#   W defaults to the number of GPUs; $OUT gets one JSON per library and the logs' archive.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bundle="$root/build-device"
out=${OUT:-/tmp/rv-nccl-bench-out}
work=$(mktemp -d /tmp/rv-nccl-bench.XXXXXX)
mkdir -p "$out"
world=${1:-$(nvidia-smi -L | wc -l)}
if ((world < 2)); then
  echo "run-nccl-bench: needs 2 or more GPUs (this machine has $world)" >&2
  exit 2
fi
# NVLink multicast stays off on these shared hosts (KINDS.md).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
declare -A nccl_dirs=(
  [system]=/usr/lib/x86_64-linux-gnu
  [torch]=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
)
failed=0
for key in system torch; do
  job="nccl-bench-$key-$$"
  pids=()
  for ((r = 0; r < world; ++r)); do
    LD_LIBRARY_PATH="${nccl_dirs[$key]}:$bundle/lib" REDUCE_VERIFY_RANK=$r \
      REDUCE_VERIFY_WORLD_SIZE=$world REDUCE_VERIFY_LOCAL_RANK=$r REDUCE_VERIFY_JOB_ID=$job \
      REDUCE_VERIFY_RENDEZVOUS=/tmp/rv-nccl-bench \
      timeout 900 "$bundle/bin/bench_nccl" --json "$out/nccl-bench-W$world-$key.json" \
      >"$work/nccl-bench-W$world-$key-rank$r.log" 2>&1 &
    pids+=($!)
  done
  rc=0
  for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
  echo "nccl bench [$key] W=$world: rc=$rc"
  cat "$work/nccl-bench-W$world-$key-rank0.log"
  ((rc == 0)) || failed=$((failed + 1))
done
# The rank logs go into one archive, so $OUT holds a few files.
tar -czf "$out/nccl-bench-logs.tar.gz" -C "$work" .
# Both libraries ran whatever happened; the exit status says whether either failed.
exit $((failed > 0))

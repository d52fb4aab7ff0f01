#!/usr/bin/env bash
# CI's check of ci/device/multi-gpu-proof.sh, which only a machine with several GPUs runs for
# real: its syntax (and every other device script's), and its plan under RV_DRY_RUN=1 with a
# stand-in nvidia-smi that reports 0, 1 or 4 GPUs — none stops with exit 2, one GPU runs the
# one-GPU proof and names each multi-GPU step as not run, four plan every step over W = 2..4.
#   multi_gpu_proof_plan_test.sh SOURCE_DIR
set -euo pipefail
root=$1
for script in "$root"/ci/device/*.sh; do bash -n "$script"; done
scratch=$(mktemp -d "${TMPDIR:-/tmp}/rv-plan.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/bin"
cat >"$scratch/bin/nvidia-smi" <<'SMI'
#!/usr/bin/env bash
# A stand-in: RV_FAKE_GPUS GPUs named "NVIDIA H200".
case "$*" in
  -L) for ((i = 0; i < RV_FAKE_GPUS; i++)); do echo "GPU $i: NVIDIA H200 (UUID: GPU-fake-$i)"; done ;;
  *name*) for ((i = 0; i < RV_FAKE_GPUS; i++)); do echo "NVIDIA H200"; done ;;
  *driver_version*) for ((i = 0; i < RV_FAKE_GPUS; i++)); do echo "580.0"; done ;;
esac
SMI
chmod +x "$scratch/bin/nvidia-smi"
plan() {  # plan GPUS: the summary of a dry run with that many GPUs, its exit code on the last line
  local out="$scratch/out-$1" rc=0
  env PATH="$scratch/bin:$PATH" RV_FAKE_GPUS="$1" RV_DRY_RUN=1 OUT="$out" \
    bash "$root/ci/device/multi-gpu-proof.sh" >/dev/null 2>&1 || rc=$?
  cat "$out/summary.txt"
  echo "exit $rc"
}
fail() { echo "multi-gpu-proof plan: $*" >&2; exit 1; }

none=$(plan 0)
grep -q "no GPU" <<<"$none" || fail "0 GPUs: no 'no GPU' line: $none"
grep -q "^exit 2$" <<<"$none" || fail "0 GPUs: not exit 2: $none"

one=$(plan 1)
grep -q "one GPU: the one-GPU proof (run-on-h200.sh) *plan: .*run-on-h200.sh" <<<"$one" ||
  fail "1 GPU: the one-GPU proof is not planned: $one"
[[ $(grep -c "rc=not-run (needs two or more GPUs)" <<<"$one") -ge 5 ]] ||
  fail "1 GPU: the multi-GPU steps are not all named as not run: $one"
grep -q "run --transport nccl" <<<"$one" && fail "1 GPU: plans an NCCL world: $one"
grep -q "^exit 0$" <<<"$one" || fail "1 GPU: not exit 0: $one"

four=$(plan 4)
grep -q "suite nccl\[system\] W=2,3,4 *plan: .*run --transport nccl --world 2,3,4" <<<"$four" ||
  fail "4 GPUs: the suite over nccl at W = 2..4 is not planned: $four"
grep -q "invariance NCCL_ALGO=Tree" <<<"$four" || fail "4 GPUs: no invariance step: $four"
grep -q "fault: plan" <<<"$four" || fail "4 GPUs: no fault step: $four"
grep -q "nccl benchmark W=4" <<<"$four" || fail "4 GPUs: no benchmark at W = 4: $four"
echo "multi-gpu-proof plan: syntax of every device script, and the plans for 0, 1 and 4 GPUs, as expected"

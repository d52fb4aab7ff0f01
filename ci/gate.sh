#!/usr/bin/env bash
# The gate a user drops into their CI: builds reduce-verify (unless REDUCE_VERIFY names a
# binary), checks the committed golden suite, runs the live multi-process gate over it and
# writes JUnit files and JSON reports. Exits non-zero on any failure.
#
#   ci/gate.sh [--out DIR] [--worlds 2,3,4,5,8] [--nccl-libs /a/libnccl.so.2:/b/libnccl.so.2]
#
# CPU mode always runs (Gloo over TCP on loopback, one process per rank). GPU mode runs when
# nvidia-smi sees a GPU: cuda-loopback on one GPU and, with two or more, nccl (once per NCCL
# library given), each report compared with the CPU one (`reduce-verify compare`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/build/gate"
worlds="2,3,4,5,8"
nccl_libs=""
while (($#)); do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --worlds) worlds=$2; shift 2 ;;
    --nccl-libs) nccl_libs=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "gate: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
if [[ -z "${REDUCE_VERIFY:-}" ]]; then
  "$root/ci/build.sh"
  REDUCE_VERIFY="$root/build/verify/reduce-verify"
fi
rv=$REDUCE_VERIFY
"$rv" info

echo "== gate: check the committed golden suite"
start=$(date +%s%N)
"$rv" check --quiet "$root"/golden/*.xxh128
echo "gate: check took $((($(date +%s%N) - start) / 1000000)) ms"

echo "== gate: live run over gloo, W = $worlds"
"$rv" run --transport gloo --world "$worlds" --contract all \
  --report "$out/cpu-gloo.json" --junit "$out/cpu-gloo.xml"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L | grep -c '^GPU')
  echo "== gate: $gpus GPU(s): cuda-loopback over the whole suite"
  "$rv" run --transport cuda-loopback --report "$out/gpu-loopback.json" --junit "$out/gpu-loopback.xml"
  "$rv" compare "$out/gpu-loopback.json" "$out/cpu-gloo.json"
  if ((gpus >= 2)); then
    IFS=: read -r -a libs <<<"${nccl_libs:-default}"
    for lib in "${libs[@]}"; do
      tag=default; env_prefix=()
      if [[ $lib != default ]]; then
        tag=$(basename "$(dirname "$lib")" | tr -c 'A-Za-z0-9._-' _)
        env_prefix=(env "LD_LIBRARY_PATH=$(dirname "$lib"):${LD_LIBRARY_PATH:-}")
      fi
      echo "== gate: nccl ($lib), W = 2..$gpus"
      "${env_prefix[@]}" "$rv" run --transport nccl --max-world "$gpus" \
        --report "$out/gpu-nccl-$tag.json" --junit "$out/gpu-nccl-$tag.xml"
      "$rv" compare "$out/gpu-nccl-$tag.json" "$out/cpu-gloo.json"
    done
  fi
fi
echo "gate: all verified (reports and JUnit files in $out)"

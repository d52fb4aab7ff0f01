# Sourced by every script of ci/device/ that runs steps on a GPU machine: the bundle's paths,
# a shim for the CLI, and the note/step helpers that write $out/summary.txt and a log.
# The caller sets, before sourcing: `out` (its results folder) and `log` (the log's name in
# it), and optionally `budget` (the seconds the whole script may take). It gets: root, bundle,
# summary, bundle_env, shim (the CLI), py (the package's Python over the bundle's library),
# venv_nccl (the torch venv's NCCL folder, or empty), nccl_dirs and nccl_order (the NCCLs by
# key: system, and torch where the venv has one), libs KEY, and note, note_machine, step,
# note_failures.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bundle="$root/build-device"
mkdir -p "$out"
summary="$out/summary.txt"
export NCCL_NVLS_ENABLE=0
# The bundle's programs need its lib/ (Debian's Gloo); torch must not see it, so the CLI that
# Python steps call is a shim that sets it for the CLI alone (as run-ddp-hook-bench.sh does).
bundle_env=(env "LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
shim_dir=$(mktemp -d /tmp/rv-device-tool.XXXXXX)
trap 'rm -rf "$shim_dir"' EXIT
shim="$shim_dir/reduce-verify"
printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s" "$@"\n' \
  "$bundle/lib" "$bundle/bin/reduce-verify" >"$shim"
chmod +x "$shim"

note() { echo "$*" | tee -a "$summary"; }

# step NAME SECONDS command...: runs the command under a time limit, its output (after a line
# naming the step) to the log — $step_log when the caller sets it, else $out/$log — and notes
# its exit status and seconds in the summary; returns the command's status. With `budget` set,
# a step gets at most what is left of it less 15 s, and is noted as skipped when less than
# 20 s would be left.
step() {
  local name=$1 limit=$2
  shift 2
  local target=${step_log:-$out/$log}
  if [[ -n ${budget:-} ]]; then
    local left=$((budget - SECONDS - 15))
    if ((left < 20)); then
      note "$(printf '%-60s skipped: out of time' "$name")"
      return 125
    fi
    ((limit > left)) && limit=$left
  fi
  local started=$SECONDS
  { echo; echo "===== $name: $*"; } >>"$target"
  timeout --kill-after=5 "$limit" "$@" >>"$target" 2>&1
  local rc=$?
  note "$(printf '%-60s rc=%-3s %4ss' "$name" "$rc" "$((SECONDS - started))")"
  return $rc
}

# The summary's last line: how many steps failed and were skipped, each failed one named.
note_failures() {
  local failed
  failed=$(grep -E ' rc=[1-9]' "$summary" | sed -E 's/ +rc=.*//' | paste -sd ';' - | sed 's/;/; /g')
  note "steps failed: $(grep -cE ' rc=[1-9]' "$summary")${failed:+ ($failed)}, skipped: $(grep -c 'skipped: out of time' "$summary")"
}

# The package's tests and benchmarks: the bundle's C library, the CLI through the shim.
py=(env REDUCE_VERIFY_LIB="$bundle/lib/libreduce_verify_c.so" REDUCE_VERIFY="$shim"
    REDUCE_VERIFY_HAS_GLOO=1 PYTHONPATH="$root/python:$root/tests/python" python3)
# The NCCL of the machine's torch venv (the system's is /usr/lib/x86_64-linux-gnu).
venv_nccl=$(python3 -c "import nvidia.nccl, os; print(os.path.join(next(iter(nvidia.nccl.__path__)), \"lib\"))" 2>/dev/null)
# The NCCLs a script runs under, by key: the system's, and the torch venv's where there is one;
# libs KEY: the loader path with that NCCL first, then the bundle's own libraries.
declare -A nccl_dirs=([system]=/usr/lib/x86_64-linux-gnu)
nccl_order=(system)
if [[ -n $venv_nccl ]]; then
  nccl_dirs[torch]=$venv_nccl
  nccl_order+=(torch)
fi
libs() { echo "LD_LIBRARY_PATH=${nccl_dirs[$1]}:$bundle/lib"; }

# The lines a summary starts with: the GPU and its driver, torch and its NCCL, the bundle.
note_machine() {
  note "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
  note "torch: $(python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())' 2>&1)"
  note "bundle: $(head -1 "$bundle/BUILD")"
}

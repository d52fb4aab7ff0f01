# Sourced by ci/device/run-trail.sh, run-accumulator.sh and run-wave-costs.sh: the bundle's
# paths, a shim for the CLI, and the note/step helpers that write $out/summary.txt and a log.
# The caller sets, before sourcing: `out` (its results folder) and `log` (the log's name in
# it). It gets: root, bundle, summary, bundle_env, shim (the CLI) and note, step.
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

# step NAME SECONDS command...: runs the command under a time limit, its output to the log,
# and notes its exit status and seconds.
step() {
  local name=$1 limit=$2; shift 2
  local started=$SECONDS
  timeout --kill-after=5 "$limit" "$@" >>"$out/$log" 2>&1
  note "$(printf '%-60s rc=%s %ss' "$name" $? $((SECONDS - started)))"
}

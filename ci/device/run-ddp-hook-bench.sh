#!/usr/bin/env bash
# The PyTorch hooks (issue 11) on one GPU, or with --processes W on an NCCL world of W GPUs,
# in one run: python/bench/ddp_hook_overhead.py with the device's own python3 and
# torch 2.x, over a libreduce_verify_c.so built with CUDA on the build machine and carried
# along. It writes $OUT/ddp-hook-overhead.json and a log.
#   on the build machine:  ci/device/build-bundle.sh (stages build-device/lib/libreduce_verify_c.so)
#                          or BUILD_DIR=build-python ./ci/build.sh -DCMAKE_CUDA_ARCHITECTURES=90
#   on the GPU machine:    bash ci/device/run-ddp-hook-bench.sh, from the repository root
#                          with build-device/ copied beside it
#   LIB, TOOL    override the library and the CLI (default: build-python's, else build/'s, else
#                the bundle's; the bundle's build-device/bin/reduce-verify for the CLI)
#   extra arguments go to the Python script (e.g. --batches 1024 --rounds 3, or
#   --processes 2 for a real NCCL world of two GPUs)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/rv-ddp-bench-out}
mkdir -p "$out"
# NVLink multicast stays off on these shared hosts (KINDS.md), here and in every child.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}

first_of() { for path in "$@"; do [[ -f "$path" ]] && { echo "$path"; return; }; done; }
lib=${LIB:-$(first_of "$root/build-python/capi/libreduce_verify_c.so" \
                       "$root/build/capi/libreduce_verify_c.so" \
                       "$root/build-device/lib/libreduce_verify_c.so")}
if [[ -z "$lib" ]]; then
  echo "run-ddp-hook-bench: no libreduce_verify_c.so (carry build-python/capi/ or the bundle)" >&2
  exit 2
fi
# The CLI for the recorded replays: the first candidate that runs here. A Debian-built binary
# needs Debian's shared Gloo, which the bundle stages in build-device/lib; a shim gives the
# CLI (and only the CLI, not torch) that library path.
shim_dir=$(mktemp -d /tmp/rv-ddp-bench-tool.XXXXXX)
trap 'rm -rf "$shim_dir"' EXIT
tool=""
for candidate in ${TOOL:-} "$root/build-python/verify/reduce-verify" \
                 "$root/build/verify/reduce-verify" "$root/build-device/bin/reduce-verify"; do
  [[ -x "$candidate" ]] || continue
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s" "$@"\n' \
    "$root/build-device/lib" "$candidate" >"$shim_dir/reduce-verify"
  chmod +x "$shim_dir/reduce-verify"
  if "$shim_dir/reduce-verify" info >/dev/null 2>&1; then tool=$candidate; break; fi
done
tool_args=()
if [[ -n "$tool" ]]; then
  tool_args=(--tool "$shim_dir/reduce-verify")
else
  echo "run-ddp-hook-bench: no reduce-verify runs here: the recorded replays use the library only" >&2
fi
{
  echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "library $lib"; echo "tool ${tool:-none}"
} 2>&1 | tee "$out/ddp-hook-bench.log"
REDUCE_VERIFY_LIB="$lib" PYTHONPATH="$root/python" \
  python3 "$root/python/bench/ddp_hook_overhead.py" --out "$out" "${tool_args[@]}" "$@" \
  2>&1 | tee -a "$out/ddp-hook-bench.log"
exit "${PIPESTATUS[0]}"

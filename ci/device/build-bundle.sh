#!/usr/bin/env bash
# Builds, on this (GPU-less) machine, what ci/device/run-on-h200.sh runs on a GPU machine,
# and stages it in build-device/ (ignored by git; carried to the device machine):
#   build-device/bin/   the GPU tests, bench_cuda, bench_cuda_exact, bench_cuda_half, bench_nccl,
#                       reduce-verify
#                       (when it builds)
#   build-device/lib/   the shared libraries they need that a bare CUDA image may lack
#                       (Google Benchmark and Gloo are shared-only on Debian), and
#                       libreduce_verify_c.so for the Python package
#   build-device/BUILD  how it was built (commit, compiler, flags)
# The CUDA runtime is linked statically and NCCL not at all (it is dlopen'ed, so the device
# machine's LD_LIBRARY_PATH picks the NCCL under test). Every default CUDA architecture is
# built (sm_75 … sm_120 + PTX): the device run proves the binary we ship, not a special one.
#   BUILD_DIR   the CMake tree (default build-device-tree/), JOBS (default 2)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tree=${BUILD_DIR:-"$root/build-device-tree"}
stage="$root/build-device"
jobs=${JOBS:-2}

cmake -S "$root" -B "$tree" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRV_WERROR=ON \
  -DRV_WITH_CUDA=ON -DCMAKE_CUDA_RUNTIME_LIBRARY=Static "$@" >/dev/null

programs=(gpu_fold_kernel_test gpu_cuda_fixed_order_device_test gpu_loopback_world_test
          gpu_exact_kernel_test gpu_exact_world_test gpu_accumulator_test
          gpu_nccl_transport_test cuda_host_test digest_tree_cuda_test gpu_half_stacked_kernel_test
          gpu_capi_dtype_test gpu_reduce_scatter_test bench_cuda bench_cuda_exact bench_cuda_half
          bench_nccl)
cmake --build "$tree" -j "$jobs" --target "${programs[@]}"
# The C ABI the Python package loads (ci/device/run-ddp-hook-bench.sh), built with CUDA.
cmake --build "$tree" -j "$jobs" --target reduce_verify_c
# The CLI is other people's code in motion: ship it when it builds, go on when it does not.
if cmake --build "$tree" -j "$jobs" --target reduce-verify >/dev/null 2>&1; then
  programs+=(reduce-verify)
else
  echo "build-bundle: reduce-verify did not build; the bundle goes without it" >&2
fi

rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib"
for program in "${programs[@]}"; do
  path=$(find "$tree" -type f -name "$program" -perm -u+x | head -n1)
  [[ -n "$path" ]] || { echo "build-bundle: $program not found in $tree" >&2; exit 1; }
  cp "$path" "$stage/bin/"
  strip -g "$stage/bin/$program"
done

# Shared libraries outside glibc, the C++ runtime and the CUDA driver: copy them. NCCL and
# libcuda must never be copied (NCCL is chosen at run time, libcuda belongs to the driver).
for program in "${programs[@]}"; do
  if ldd "$stage/bin/$program" | grep -q "not found"; then
    echo "build-bundle: $program has unresolved libraries:" >&2
    ldd "$stage/bin/$program" | grep "not found" >&2
    exit 1
  fi
  ldd "$stage/bin/$program" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) ;;
      libcuda.so*|libnccl.so*|libcudart.so*)
        echo "build-bundle: $program links $(basename "$lib"), which must not be linked" >&2
        exit 1 ;;
      *) cp -L -n "$lib" "$stage/lib/" ;;
    esac
  done
done

cp "$tree/capi/libreduce_verify_c.so" "$stage/lib/"

{
  echo "commit: $(git -C "$root" rev-parse HEAD)$(git -C "$root" diff --quiet || echo ' (dirty tree)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm)"
  echo "nvcc: $(/usr/local/cuda/bin/nvcc --version | tail -n2 | head -n1)"
  echo "c++: $(c++ --version | head -n1)"
  grep -E '^CMAKE_CUDA_ARCHITECTURES|^CMAKE_CUDA_RUNTIME_LIBRARY|^CMAKE_BUILD_TYPE' "$tree/CMakeCache.txt"
  echo "programs: ${programs[*]}"
  echo "libraries: $(ls "$stage/lib" | tr '\n' ' ')"
} >"$stage/BUILD"

size=$(du -sm "$stage" | cut -f1)
echo "build-bundle: $stage holds ${size} MiB"
if ((size > 60)); then
  echo "build-bundle: over the 60 MiB the device call can carry with the tree" >&2
  exit 1
fi

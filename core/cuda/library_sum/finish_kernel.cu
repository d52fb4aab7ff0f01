// An elementwise pass over the library's result: float4 units where the buffer allows
// (the scalar head up to the first 16-byte boundary and the tail are done in the same
// launch), a grid sized to the device.
#include "core/cuda/library_sum/finish_kernel.h"

#include <algorithm>
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/launch_grid.h"
#include "core/error.h"
#include "core/fold_law.h"

namespace rv {
namespace {

constexpr int kThreads = 256;

struct FinishArgs {
  float* values;
  std::size_t n;
  std::size_t head;   // scalar elements before the first aligned float4
  std::size_t units;  // float4 units after the head
  float scale;
  bool mean;
};

__device__ __forceinline__ float finish(float v, const FinishArgs& a) {
  return canonicalize_nan(a.mean ? __fmul_rn(v, a.scale) : v);
}

__global__ void __launch_bounds__(kThreads) finish_kernel(FinishArgs a) {
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  float4* units = reinterpret_cast<float4*>(a.values + a.head);
  for (std::size_t u = thread; u < a.units; u += threads) {
    const float4 v = units[u];
    units[u] = make_float4(finish(v.x, a), finish(v.y, a), finish(v.z, a), finish(v.w, a));
  }
  if (thread < a.head) a.values[thread] = finish(a.values[thread], a);
  const std::size_t tail_begin = a.head + 4 * a.units;
  if (thread < a.n - tail_begin) {
    a.values[tail_begin + thread] = finish(a.values[tail_begin + thread], a);
  }
}

}  // namespace

void launch_finish_library_sum(float* d_values, std::size_t n, std::uint32_t world, Op op,
                               void* cuda_stream) {
  RV_ENFORCE_GE(InputError, world, 1u, "the library-sum finish needs a world");
  if (n == 0) return;
  if (d_values == nullptr) throw InputError("launch_finish_library_sum: null device pointer");
  const auto address = reinterpret_cast<std::uintptr_t>(d_values);
  FinishArgs args{d_values, n, n, 0, mean_scale(world), op == Op::kMean};
  if (address % sizeof(float) == 0 && n >= 8) {
    const std::size_t misalignment = (address % 16) / sizeof(float);
    args.head = misalignment == 0 ? 0 : 4 - misalignment;
    args.units = (n - args.head) / 4;
  }
  // Without units (a short or oddly aligned buffer), the "head" is the whole buffer and one
  // thread per element does it.
  const std::size_t edge = args.head + (n - args.head - 4 * args.units);
  const std::size_t needed = (std::max(args.units, edge) + kThreads - 1) / kThreads;
  const unsigned blocks =
      cuda_detail::resident_grid(reinterpret_cast<const void*>(finish_kernel), kThreads, needed);
  // The edges need one thread each in the first blocks: a grid-stride loop covers the
  // units, but not more edge elements than the grid has threads.
  const unsigned edge_blocks = static_cast<unsigned>((edge + kThreads - 1) / kThreads);
  finish_kernel<<<std::max(blocks, edge_blocks), kThreads, 0,
                  static_cast<cudaStream_t>(cuda_stream)>>>(args);
  RV_CUDA_CHECK_LAUNCH("finish_kernel");
}

}  // namespace rv

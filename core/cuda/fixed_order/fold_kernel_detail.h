// What the fold kernels share (fold_kernel.cu: the aligned float4 kernel, the scalar kernel
// and the dispatch; fold_realign_kernel.cu: the realigned float4 kernel): the arguments, the
// element operations, the scalar edges and the launch. Device code: included only by those
// .cu files. Private to core/cuda.
//
// Every arithmetic step of every kernel is one of the two below: __fadd_rn in ascending slot
// order starting from slot 0 itself, then finish() (the mean scale and the NaN rule of
// core/fold_law.h). The kernels differ only in how values reach registers; when a value
// arrives, or through which lane, changes no rounding (docs/DESIGN.md §2.2).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/fixed_order/fold_kernel.h"
#include "core/cuda/launch_grid.h"
#include "core/error.h"
#include "core/fold_law.h"

namespace rv::fold_kernel_detail {

constexpr int kThreads = 256;

struct FoldArgs {
  const float* stacked;
  float* out;
  std::size_t stride;  // elements between slots
  std::size_t n;       // elements per slot
  std::size_t head;    // scalar elements before the first unit
  std::size_t units;   // units (float or float4) after the head
  std::uint32_t world;
  // The realigned kernel: the phase, in floats modulo 4, of slot 0's element `head` (the
  // output's element `head` is 16-byte aligned), and the stride's, stride mod 4: slot r's
  // phase is (phase0 + r × stride_phase) mod 4, 32-bit work for every slot of every sweep.
  std::uint32_t phase0;
  std::uint32_t stride_phase;
  float scale;  // mean_scale(world), used when mean
  bool mean;
};

__device__ __forceinline__ float finish(float sum, const FoldArgs& a) {
  return canonicalize_nan(a.mean ? __fmul_rn(sum, a.scale) : sum);
}

__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float4 add(float4 a, float4 b) {
  return make_float4(__fadd_rn(a.x, b.x), __fadd_rn(a.y, b.y), __fadd_rn(a.z, b.z),
                     __fadd_rn(a.w, b.w));
}
__device__ __forceinline__ float4 finish(float4 v, const FoldArgs& a) {
  return make_float4(finish(v.x, a), finish(v.y, a), finish(v.z, a), finish(v.w, a));
}

template <typename Unit, bool kStreaming>
__device__ __forceinline__ Unit load(const float* p) {
  const Unit* unit = reinterpret_cast<const Unit*>(p);
  if constexpr (kStreaming) {
    return __ldcs(unit);
  } else {
    return *unit;
  }
}

template <typename Unit, bool kStreaming>
__device__ __forceinline__ void store(float* p, Unit value) {
  Unit* unit = reinterpret_cast<Unit*>(p);
  if constexpr (kStreaming) {
    __stcs(unit, value);
  } else {
    *unit = value;
  }
}

// One element, every slot in turn: the head and tail of the vector paths.
__device__ __forceinline__ float fold_element(const FoldArgs& a, std::size_t i) {
  float sum = a.stacked[i];
  for (std::uint32_t r = 1; r < a.world; ++r) sum = add(sum, a.stacked[r * a.stride + i]);
  return finish(sum, a);
}

// The scalar edges of a vector path: elements [0, head) and those after the last unit
// (`width` floats per unit), one per thread of the grid (at most 7 on each side).
__device__ __forceinline__ void fold_edges(const FoldArgs& a, std::size_t thread,
                                           std::size_t width) {
  if (thread < a.head) a.out[thread] = fold_element(a, thread);
  const std::size_t tail_begin = a.head + width * a.units;
  if (thread < a.n - tail_begin) a.out[tail_begin + thread] = fold_element(a, tail_begin + thread);
}

// Launches `kernel` with as many blocks as the device keeps resident, never more than the
// units need (`units_per_block` per block and sweep).
template <typename Kernel>
void launch_resident(Kernel kernel, const FoldArgs& args, std::size_t units_per_block,
                     cudaStream_t stream, const char* name) {
  const std::size_t needed = (args.units + units_per_block - 1) / units_per_block;
  const unsigned blocks =
      cuda_detail::resident_grid(reinterpret_cast<const void*>(kernel), kThreads, needed);
  kernel<<<blocks, kThreads, 0, stream>>>(args);
  RV_CUDA_CHECK_LAUNCH(name);
}

// A detail::FoldShape as compile-time parameters: slots per batch, units per thread,
// streaming cache hints, and __launch_bounds__' minimum resident blocks per SM (0: not
// given, which is not the same as 1: ptxas then allocates registers differently, and the
// shapes were chosen with it unsaid).
template <int kBatchT, int kUnrollT, bool kStreamingT, int kMinBlocksT = 0>
struct ShapeParams {
  static constexpr int kBatch = kBatchT;
  static constexpr int kUnroll = kUnrollT;
  static constexpr bool kStreaming = kStreamingT;
  static constexpr int kMinBlocks = kMinBlocksT;
};

// Calls launch(ShapeParams<…>{}) with `shape`'s parameters: the one table of what each shape
// is, shared by the aligned and the realigned kernels' launches.
template <typename Launch>
void with_shape(detail::FoldShape shape, Launch&& launch) {
  switch (shape) {
    case detail::FoldShape::kBatch8Unroll1:
      return launch(ShapeParams<8, 1, false>{});
    case detail::FoldShape::kBatch4Unroll2:
      return launch(ShapeParams<4, 2, false>{});
    case detail::FoldShape::kBatch2Unroll4:
      return launch(ShapeParams<2, 4, false>{});
    case detail::FoldShape::kBatch8Unroll1Streaming:
      return launch(ShapeParams<8, 1, true>{});
    case detail::FoldShape::kBatch4Unroll1:
      return launch(ShapeParams<4, 1, false>{});
    case detail::FoldShape::kBatch2Unroll2:
      return launch(ShapeParams<2, 2, false>{});
    case detail::FoldShape::kBatch2Unroll1:
      return launch(ShapeParams<2, 1, false>{});
    case detail::FoldShape::kBatch4Unroll1FourBlocks:
      return launch(ShapeParams<4, 1, false, 4>{});
  }
  throw InternalError("unknown fold shape");
}

// The realigned kernel (fold_realign_kernel.cu) under one shape and realignment.
void launch_realigned(const FoldArgs& args, detail::FoldShape shape, detail::FoldRealign realign,
                      cudaStream_t stream);

}  // namespace rv::fold_kernel_detail

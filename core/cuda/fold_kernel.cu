// The fold kernel. One launch does the whole fold (no extra passes): a grid sized to the
// device strides over 16-byte units of the output; per unit it loads a batch of slots at
// once (so several loads are in flight before the first addition needs one) and adds them
// in ascending slot order, then writes mean scale and canonical NaNs. The few elements
// before the first aligned unit and after the last one are done by scalar threads in the
// same launch.
//
// Why the order of loads may differ from the order of additions: the contract fixes only
// the association ((x_0 + x_1) + x_2) + …; when a value arrives in a register does not
// change any rounding. __fadd_rn / __fmul_rn keep each operation a separately rounded
// binary32 operation whatever the compiler flags (no contraction into an FMA).
#include "core/cuda/fold_kernel.h"

#include <cstdint>
#include <string>

#include "core/cuda/cuda_check.h"
#include "core/cuda/launch_grid.h"
#include "core/error.h"
#include "core/fold_law.h"

namespace rv {
namespace {

constexpr int kThreads = 256;

struct FoldArgs {
  const float* stacked;
  float* out;
  std::size_t stride;  // elements between slots
  std::size_t n;       // elements per slot
  std::size_t head;    // scalar elements before the first unit
  std::size_t units;   // units (float or float4) after the head
  std::uint32_t world;
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

// One element, every slot in turn: the head and tail of the vector path.
__device__ float fold_element(const FoldArgs& a, std::size_t i) {
  float sum = a.stacked[i];
  for (std::uint32_t r = 1; r < a.world; ++r) sum = add(sum, a.stacked[r * a.stride + i]);
  return finish(sum, a);
}

template <typename Unit, int kBatch, int kUnroll, bool kStreaming>
__global__ void __launch_bounds__(kThreads) fold_kernel(FoldArgs a) {
  constexpr std::size_t kWidth = sizeof(Unit) / sizeof(float);
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const float* base = a.stacked + a.head;
  float* out = a.out + a.head;

  for (std::size_t first = thread; first < a.units; first += threads * kUnroll) {
    // Units first, first + threads, …: neighbouring threads read neighbouring units, so
    // every load of a warp is one contiguous, coalesced span.
    Unit sum[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::size_t unit = first + u * threads;
      if (unit < a.units) sum[u] = load<Unit, kStreaming>(base + kWidth * unit);
    }
    for (std::uint32_t r = 1; r < a.world; r += kBatch) {
      Unit addend[kUnroll][kBatch];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const std::size_t unit = first + u * threads;
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          if (unit < a.units && r + b < a.world) {
            addend[u][b] = load<Unit, kStreaming>(base + (r + b) * a.stride + kWidth * unit);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const std::size_t unit = first + u * threads;
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {  // ascending slots: the contract's association
          if (unit < a.units && r + b < a.world) sum[u] = add(sum[u], addend[u][b]);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::size_t unit = first + u * threads;
      if (unit < a.units) store<Unit, kStreaming>(out + kWidth * unit, finish(sum[u], a));
    }
  }

  // The scalar edges of the vector path (at most 3 elements on each side).
  if (thread < a.head) a.out[thread] = fold_element(a, thread);
  const std::size_t tail_begin = a.head + kWidth * a.units;
  if (thread < a.n - tail_begin) a.out[tail_begin + thread] = fold_element(a, tail_begin + thread);
}

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

bool ranges_overlap(const float* a, const float* b, std::size_t n) {
  return address(a) < address(b + n) && address(b) < address(a + n);
}

void check_fold_arguments(const float* stacked, std::uint32_t world, std::size_t stride,
                          std::size_t n, const float* out) {
  RV_ENFORCE_GE(InputError, world, 1u, "the fold needs at least one slot");
  if (n == 0) return;
  if (stacked == nullptr || out == nullptr) {
    throw InputError("launch_fold_stacked: null device pointer for " + std::to_string(n) +
                     " elements");
  }
  for (std::uint32_t r = 0; r < world; ++r) {
    const float* slot = stacked + static_cast<std::size_t>(r) * stride;
    if (r == 0 && slot == out) continue;  // in place into slot 0: each element is read first
    if (ranges_overlap(slot, out, n)) {
      throw InputError("launch_fold_stacked: the output overlaps slot " + std::to_string(r) +
                       " (only an exact in-place fold into slot 0 is allowed)");
    }
  }
}

template <typename Unit, int kBatch, int kUnroll, bool kStreaming>
void launch_shape(const FoldArgs& args, cudaStream_t stream) {
  const auto kernel = fold_kernel<Unit, kBatch, kUnroll, kStreaming>;
  const std::size_t per_block = static_cast<std::size_t>(kThreads) * kUnroll;
  const std::size_t needed = (args.units + per_block - 1) / per_block;
  const unsigned blocks =
      cuda_detail::resident_grid(reinterpret_cast<const void*>(kernel), kThreads, needed);
  kernel<<<blocks, kThreads, 0, stream>>>(args);
  RV_CUDA_CHECK_LAUNCH("fold_kernel");
}

template <typename Unit>
void launch_unit(detail::FoldShape shape, const FoldArgs& args, cudaStream_t stream) {
  switch (shape) {
    case detail::FoldShape::kBatch8Unroll1:
      return launch_shape<Unit, 8, 1, false>(args, stream);
    case detail::FoldShape::kBatch4Unroll2:
      return launch_shape<Unit, 4, 2, false>(args, stream);
    case detail::FoldShape::kBatch2Unroll4:
      return launch_shape<Unit, 2, 4, false>(args, stream);
    case detail::FoldShape::kBatch8Unroll1Streaming:
      return launch_shape<Unit, 8, 1, true>(args, stream);
  }
  throw InternalError("unknown fold shape");
}

}  // namespace

namespace detail {

// Measured on an H200 (bench/results/cuda-fold-h200.json): batch8x1 is the fastest or
// within noise of it at every W, and needs the fewest registers (60: 4 blocks per SM).
FoldShape default_fold_shape() { return FoldShape::kBatch8Unroll1; }

const char* to_string(FoldShape shape) {
  switch (shape) {
    case FoldShape::kBatch8Unroll1:
      return "batch8x1";
    case FoldShape::kBatch4Unroll2:
      return "batch4x2";
    case FoldShape::kBatch2Unroll4:
      return "batch2x4";
    case FoldShape::kBatch8Unroll1Streaming:
      return "batch8x1-streaming";
  }
  return "unknown";
}

FoldPath fold_path(const float* stacked, std::uint32_t world, std::size_t stride, std::size_t n,
                   const float* out) {
  // A float4 unit of element i is aligned in every slot and in the output only if they all
  // sit at one offset modulo 16 bytes: the same alignment for slot 0 and out, and a stride
  // that is a whole number of units (or one slot only).
  const bool float_aligned =
      address(stacked) % sizeof(float) == 0 && address(out) % sizeof(float) == 0;
  const bool same_phase = address(stacked) % 16 == address(out) % 16;
  const bool stride_whole = world == 1 || stride % 4 == 0;
  return (n >= 8 && float_aligned && same_phase && stride_whole) ? FoldPath::kVector
                                                                 : FoldPath::kScalar;
}

void launch_fold_stacked_shaped(const float* stacked, std::uint32_t world, std::size_t stride,
                                std::size_t n, Op op, float* out, void* cuda_stream,
                                FoldShape shape) {
  check_fold_arguments(stacked, world, stride, n, out);
  if (n == 0) return;
  FoldArgs args{stacked, out, stride, n, 0, n, world, mean_scale(world), op == Op::kMean};
  const auto stream = static_cast<cudaStream_t>(cuda_stream);
  if (fold_path(stacked, world, stride, n, out) == FoldPath::kVector) {
    const std::size_t misalignment = (address(stacked) % 16) / sizeof(float);
    args.head = misalignment == 0 ? 0 : 4 - misalignment;
    args.units = (n - args.head) / 4;
    launch_unit<float4>(shape, args, stream);
  } else {
    launch_unit<float>(shape, args, stream);
  }
}

}  // namespace detail

void launch_fold_stacked(const float* d_stacked, std::uint32_t world, std::size_t slot_stride,
                         std::size_t n, Op op, float* d_out, void* cuda_stream) {
  detail::launch_fold_stacked_shaped(d_stacked, world, slot_stride, n, op, d_out, cuda_stream,
                                     detail::default_fold_shape());
}

}  // namespace rv

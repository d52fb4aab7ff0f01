// The fixed-order fold of bf16/f16 stacked slots (cuda_fold_stacked_half, half_stacked_kernel.h):
// one launch, 2 bytes read per element and slot, 2 written per element. A grid sized to the
// device strides over the output's 16-byte units (half_kernel_detail.h); per unit it loads a
// batch of slots at once (several loads in flight before the first addition needs one),
// widens each element to binary32 and adds it in ascending slot order, then scales the mean
// and rounds once to the dtype. The few elements before the first unit and after the last are
// folded one per thread in the same launch.
//
// Two kernels (detail::HalfFoldShape). fold_half_kernel, the first: slot 0's unit loaded and
// widened before the batches, each misaligned slot realigned as soon as its loads are issued
// (load_unit), so a realigned slot costs a memory latency of its own; the edges after the
// units, their W addends read one after another. fold_units_kernel (issue 37), after the f32
// kernels: slot 0 in the first batch, every chunk of a batch requested before any is shifted
// (load_chunks, then realign), B slots × U units a batch, the narrowing two elements at a time,
// the edges on the grid's last threads with their addends requested 8 at a time.
//
// Every arithmetic step is the CPU's (core/fold.cc over the widened values, then
// core/dtype_law.h's rounding, docs/DESIGN.md §2.5): __fadd_rn from slot 0 itself in
// ascending order, __fmul_rn by mean_scale(W), one narrowing; the intrinsics keep each a
// separately rounded binary32 operation whatever the flags (no FMA contraction). When a value
// reaches a register, or through which load, changes no rounding.
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/cuda/fixed_order/fold_kernel.h"
#include "core/cuda/half_kernel_detail.h"
#include "core/cuda/half_stacked_kernel.h"
#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/fold_law.h"

namespace rv {
namespace {

using half_kernel_detail::HalfTable;
using half_kernel_detail::kThreads;
using half_kernel_detail::kUnit;
using half_kernel_detail::Unit;

// Slots loaded per batch. 8 × 16 bytes in flight per thread before the first addition: at
// W = 2 only one slot after slot 0 is loaded, so larger batches cost nothing there.
constexpr int kBatch = 8;

struct FoldFinish {
  float scale;  // mean_scale(W), used when mean
  bool mean;
};

template <bool kF16>
__device__ __forceinline__ std::uint16_t finish(float sum, const FoldFinish& f) {
  return half_kernel_detail::narrow<kF16>(f.mean ? __fmul_rn(sum, f.scale) : sum);
}

// One element, every slot in turn: the edges and the scalar path.
template <bool kF16>
__device__ __forceinline__ std::uint16_t fold_element(const HalfTable& t, const FoldFinish& f,
                                                      std::size_t i) {
  using half_kernel_detail::load_element;
  using half_kernel_detail::widen;
  float sum = widen<kF16>(load_element(t, 0, i));
  for (std::uint32_t r = 1; r < t.world; ++r) {
    sum = __fadd_rn(sum, widen<kF16>(load_element(t, r, i)));
  }
  return finish<kF16>(sum, f);
}

template <bool kF16>
__global__ void __launch_bounds__(kThreads) fold_half_kernel(HalfTable t, FoldFinish f) {
  using half_kernel_detail::half_of;
  using half_kernel_detail::load_unit;
  using half_kernel_detail::widen;
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;

  for (std::size_t u = thread; u < t.units; u += threads) {
    // Neighbouring threads take neighbouring units: every load of a warp is one span.
    float sum[kUnit];
    const Unit first = load_unit(t, 0, u);
#pragma unroll
    for (int k = 0; k < static_cast<int>(kUnit); ++k) sum[k] = widen<kF16>(half_of(first, k));
    for (std::uint32_t r = 1; r < t.world; r += kBatch) {
      Unit held[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        if (r + b < t.world) held[b] = load_unit(t, r + b, u);
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {  // ascending slots: the contract's association
        if (r + b >= t.world) break;
#pragma unroll
        for (int k = 0; k < static_cast<int>(kUnit); ++k) {
          sum[k] = __fadd_rn(sum[k], widen<kF16>(half_of(held[b], k)));
        }
      }
    }
    Unit result;
#pragma unroll
    for (int k = 0; k < static_cast<int>(kUnit); ++k) {
      half_kernel_detail::pack(result, k, finish<kF16>(sum[k], f));
    }
    half_kernel_detail::store_unit(t, u, result);
  }

  // The head and the tail (at most 14 and 14 elements on a unit path; every element on the
  // scalar path), one element per thread.
  for (std::size_t i = thread; i < t.head; i += threads) {
    half_kernel_detail::store_element(t, i, fold_element<kF16>(t, f, i));
  }
  const std::size_t tail = t.head + kUnit * t.units;
  for (std::size_t i = tail + thread; i < t.n; i += threads) {
    half_kernel_detail::store_element(t, i, fold_element<kF16>(t, f, i));
  }
}

// ---- The units kernel ----------------------------------------------------------------

// One unit of one slot added into the unit's sums (kFirst: slot 0, which starts them).
template <bool kF16, bool kFirst>
__device__ __forceinline__ void fold_unit(float (&sum)[kUnit], const Unit& x) {
#pragma unroll
  for (int j = 0; j < static_cast<int>(kUnit / 2); ++j) {
    const float2 v = half_kernel_detail::widen_pair<kF16>(x.w[j]);
    if constexpr (kFirst) {
      sum[2 * j] = v.x;
      sum[2 * j + 1] = v.y;
    } else {
      sum[2 * j] = __fadd_rn(sum[2 * j], v.x);
      sum[2 * j + 1] = __fadd_rn(sum[2 * j + 1], v.y);
    }
  }
}

// Slots r … r + kBatch − 1 (those below W) of the thread's units first, first + threads, …:
// every chunk requested, then each realigned and added in ascending slot order. kFirst: the
// batch from slot 0.
template <bool kF16, int kBatch, int kUnits, bool kFirst>
__device__ __forceinline__ void fold_batch(const HalfTable& t, std::uint32_t r, std::size_t first,
                                           std::size_t threads, float (&sum)[kUnits][kUnit]) {
  std::uint32_t phase[kBatch];
  half_kernel_detail::Chunks held[kBatch][kUnits];
  half_kernel_detail::load_round(t, r, first, threads, phase, held);
#pragma unroll
  for (int b = 0; b < kBatch; ++b) {  // ascending slots: the contract's association
    if (r + b >= t.world) break;
#pragma unroll
    for (int v = 0; v < kUnits; ++v) {
      if (first + v * threads < t.units) {
        const Unit x = half_kernel_detail::realign(held[b][v], phase[b]);
        if (kFirst && b == 0) {
          fold_unit<kF16, true>(sum[v], x);
        } else {
          fold_unit<kF16, false>(sum[v], x);
        }
      }
    }
  }
}

// A unit's sums finished (the mean scale) and rounded once to the dtype, two at a time; a NaN
// element (rare) written as the law's canonical NaN through narrow().
template <bool kF16>
__device__ __forceinline__ Unit finish_unit(float (&sum)[kUnit], const FoldFinish& f) {
  if (f.mean) {
#pragma unroll
    for (int k = 0; k < static_cast<int>(kUnit); ++k) sum[k] = __fmul_rn(sum[k], f.scale);
  }
  Unit out;
  std::uint32_t largest = 0;
#pragma unroll
  for (int j = 0; j < static_cast<int>(kUnit / 2); ++j) {
    out.w[j] = half_kernel_detail::narrow_pair<kF16>(sum[2 * j], sum[2 * j + 1]);
    largest = __vmaxu2(largest, out.w[j] & 0x7FFF7FFFu);
  }
  if (half_kernel_detail::any_nan_lane<kF16>(largest)) {
#pragma unroll
    for (int j = 0; j < static_cast<int>(kUnit / 2); ++j) {
      out.w[j] =
          static_cast<std::uint32_t>(half_kernel_detail::narrow<kF16>(sum[2 * j])) |
          (static_cast<std::uint32_t>(half_kernel_detail::narrow<kF16>(sum[2 * j + 1])) << 16);
    }
  }
  return out;
}

// One edge element, its W addends requested 8 at a time.
template <bool kF16>
__device__ __forceinline__ std::uint16_t fold_edge(const HalfTable& t, const FoldFinish& f,
                                                   std::size_t i) {
  constexpr std::uint32_t kLoads = 8;
  float sum = 0.0f;
  for (std::uint32_t r = 0; r < t.world; r += kLoads) {
    std::uint16_t h[kLoads];
#pragma unroll
    for (std::uint32_t b = 0; b < kLoads; ++b) {
      if (r + b < t.world) h[b] = half_kernel_detail::load_element(t, r + b, i);
    }
#pragma unroll
    for (std::uint32_t b = 0; b < kLoads; ++b) {
      if (r + b >= t.world) break;
      const float x = half_kernel_detail::widen<kF16>(h[b]);
      sum = r + b == 0 ? x : __fadd_rn(sum, x);
    }
  }
  return finish<kF16>(sum, f);
}

template <bool kF16, int kBatch, int kUnits>
__global__ void __launch_bounds__(kThreads) fold_units_kernel(HalfTable t, FoldFinish f) {
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;

  for (std::size_t first = thread; first < t.units; first += threads * kUnits) {
    // Units first, first + threads, …: a warp's requests of a slot are contiguous spans.
    float sum[kUnits][kUnit];
    fold_batch<kF16, kBatch, kUnits, true>(t, 0, first, threads, sum);
    for (std::uint32_t r = kBatch; r < t.world; r += kBatch) {
      fold_batch<kF16, kBatch, kUnits, false>(t, r, first, threads, sum);
    }
#pragma unroll
    for (int v = 0; v < kUnits; ++v) {
      const std::size_t u = first + v * threads;
      if (u < t.units) half_kernel_detail::store_unit(t, u, finish_unit<kF16>(sum[v], f));
    }
  }

  // The edges on the last threads of the grid, which have the fewest units when the units do
  // not divide evenly (every element on the scalar path).
  const std::size_t edges = half_kernel_detail::edge_count(t);
  for (std::size_t e = threads - 1 - thread; e < edges; e += threads) {
    const std::size_t i = half_kernel_detail::edge_element(t, e);
    half_kernel_detail::store_element(t, i, fold_edge<kF16>(t, f, i));
  }
}

// The staged kernel: the units kernel's work with the loads staged through shared memory
// (half_kernel_detail::staged_units), kSlots slots a round, kStages − 1 rounds in flight.
template <bool kF16, int kSlots, int kStages>
__global__ void __launch_bounds__(kThreads) fold_staged_kernel(HalfTable t, FoldFinish f) {
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  __shared__ half_kernel_detail::WarpStages<kSlots, kStages> stages[half_kernel_detail::kWarps];
  float sum[kUnit];
  unsigned none = 0;
  half_kernel_detail::staged_units<kSlots, kStages, false>(
      t,
      half_kernel_detail::StagedJob{blockIdx.x * half_kernel_detail::kWarps + threadIdx.x / 32, 0},
      stages[threadIdx.x / 32], nullptr, none,
      [&](const Unit& x, bool first) {
        if (first) {
          fold_unit<kF16, true>(sum, x);
        } else {
          fold_unit<kF16, false>(sum, x);
        }
      },
      [&](std::size_t u) {
        half_kernel_detail::store_unit(t, u, finish_unit<kF16>(sum, f));
        return false;
      });
  const std::size_t edges = half_kernel_detail::edge_count(t);
  for (std::size_t e = threads - 1 - thread; e < edges; e += threads) {
    const std::size_t i = half_kernel_detail::edge_element(t, e);
    half_kernel_detail::store_element(t, i, fold_edge<kF16>(t, f, i));
  }
}

// The vector kernel: aligned tables only (HalfPath::kVector), where no slot needs realigning.
// One unit a thread over a grid that covers every unit (no grid-stride loop), kSlots slots'
// 16-byte loads issued before any is added.
template <bool kF16, int kSlots>
__global__ void __launch_bounds__(kThreads) fold_vector_kernel(HalfTable t, FoldFinish f) {
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t u = thread; u < t.units; u += threads) {
    const unsigned char* base = half_kernel_detail::unit_base(t, u);
    float sum[kUnit];
    for (std::uint32_t r = 0; r < t.world; r += kSlots) {
      Unit held[kSlots];
      half_kernel_detail::load_aligned_round<kSlots>(t, base, r, held);
#pragma unroll
      for (int b = 0; b < kSlots; ++b) {  // ascending slots: the contract's association
        if (r + b >= t.world) break;
        const Unit& x = held[b];
        if (r + b == 0) {
          fold_unit<kF16, true>(sum, x);
        } else {
          fold_unit<kF16, false>(sum, x);
        }
      }
    }
    half_kernel_detail::store_unit(t, u, finish_unit<kF16>(sum, f));
  }
  const std::size_t edges = half_kernel_detail::edge_count(t);
  for (std::size_t e = threads - 1 - thread; e < edges; e += threads) {
    const std::size_t i = half_kernel_detail::edge_element(t, e);
    half_kernel_detail::store_element(t, i, fold_edge<kF16>(t, f, i));
  }
}

// The units kernel's shapes: slots a batch, units a thread.
template <typename Launch>
void with_fold_shape(detail::HalfFoldShape shape, Launch&& launch) {
  switch (shape) {
    case detail::HalfFoldShape::kBatch8:
      return launch(std::integral_constant<int, 8>{}, std::integral_constant<int, 1>{});
    case detail::HalfFoldShape::kBatch4:
      return launch(std::integral_constant<int, 4>{}, std::integral_constant<int, 1>{});
    case detail::HalfFoldShape::kBatch4x2:
      return launch(std::integral_constant<int, 4>{}, std::integral_constant<int, 2>{});
    case detail::HalfFoldShape::kBatch2x2:
      return launch(std::integral_constant<int, 2>{}, std::integral_constant<int, 2>{});
    case detail::HalfFoldShape::kInline:
    case detail::HalfFoldShape::kStaged2x4:
    case detail::HalfFoldShape::kStaged4x2:
    case detail::HalfFoldShape::kVector4:
      break;
  }
  throw InternalError("with_fold_shape: not a units shape");
}

template <bool kF16>
void launch_fold(const HalfTable& table, const FoldFinish& finish, cudaStream_t stream,
                 detail::HalfFoldShape shape) {
  if (shape == detail::HalfFoldShape::kInline) {
    const auto kernel = fold_half_kernel<kF16>;
    kernel<<<half_kernel_detail::grid_for(kernel, table), kThreads, 0, stream>>>(table, finish);
    RV_CUDA_CHECK_LAUNCH("fold_half_kernel");
    return;
  }
  const auto staged = [&](auto kernel) {
    half_kernel_detail::prefer_shared_memory(reinterpret_cast<const void*>(kernel));
    // One group of 32 units a warp at a time: a thread's work is a unit.
    kernel<<<half_kernel_detail::grid_for_units(kernel, table, 1), kThreads, 0, stream>>>(table,
                                                                                          finish);
    RV_CUDA_CHECK_LAUNCH("fold_staged_kernel");
  };
  if (shape == detail::HalfFoldShape::kVector4) {
    // Aligned tables only; any other takes the units kernel's b4x1.
    if (!half_kernel_detail::aligned_units(table)) {
      return launch_fold<kF16>(table, finish, stream, detail::HalfFoldShape::kBatch4);
    }
    const auto kernel = fold_vector_kernel<kF16, 4>;
    kernel<<<static_cast<unsigned>((table.units + kThreads - 1) / kThreads), kThreads, 0,
             stream>>>(table, finish);
    RV_CUDA_CHECK_LAUNCH("fold_vector_kernel");
    return;
  }
  if (shape == detail::HalfFoldShape::kStaged2x4) return staged(fold_staged_kernel<kF16, 2, 4>);
  if (shape == detail::HalfFoldShape::kStaged4x2) return staged(fold_staged_kernel<kF16, 4, 2>);
  with_fold_shape(shape, [&](auto batch, auto units) {
    const auto kernel = fold_units_kernel<kF16, decltype(batch)::value, decltype(units)::value>;
    kernel<<<half_kernel_detail::grid_for_units(kernel, table, decltype(units)::value), kThreads, 0,
             stream>>>(table, finish);
    RV_CUDA_CHECK_LAUNCH("fold_units_kernel");
  });
}

}  // namespace

namespace half_kernel_detail {

void check_half_table(const char* who, const void* stacked, std::uint32_t world, std::size_t stride,
                      std::size_t n, const void* out) {
  const std::string name(who);
  RV_ENFORCE_GE(InputError, world, 1u, name + ": world size");
  RV_ENFORCE_LE(InputError, world, exact::kMaxWorld, name + ": the largest world is 2^20");
  if (world > 1) {
    RV_ENFORCE_GE(InputError, stride, n, name + ": the slot stride is shorter than a slot");
  }
  if (n == 0) return;
  if (stacked == nullptr) throw InputError(name + ": null device pointer for the stacked addends");
  if (out == nullptr) throw InputError(name + ": null device pointer for the output");
  const std::uintptr_t out_begin = address(out), out_end = out_begin + 2 * n;
  for (std::uint32_t r = 0; r < world; ++r) {
    const std::uintptr_t begin = address(stacked) + 2 * static_cast<std::uintptr_t>(r) * stride;
    if (r == 0 && begin == out_begin) continue;  // in place into slot 0: each element read first
    if (begin < out_end && out_begin < begin + 2 * n) {
      throw InputError(name + ": the output overlaps slot " + std::to_string(r) +
                       " (only an exact in-place reduction into slot 0 is allowed)");
    }
  }
}

}  // namespace half_kernel_detail

namespace detail {

HalfPath half_path(const void* d_stacked, std::uint32_t world, std::size_t slot_stride,
                   std::size_t n, const void* d_out) {
  return half_kernel_detail::path_of(d_stacked, world, slot_stride, n, d_out);
}

// vector-s4 on aligned tables and b4x1 on every other: the shapes with the highest worst case
// over W = 2 … 16, sum and mean, at 16 Mi and 128 Mi elements, for aligned tables and for the
// other layouts (docs/results.md, "Decisions behind the code"); every shape gives the same bits
// (gpu_half_stacked_kernel_test).
HalfFoldShape default_half_fold_shape(HalfPath path, std::uint32_t /*world*/) {
  return path == HalfPath::kVector ? HalfFoldShape::kVector4 : HalfFoldShape::kBatch4;
}

const char* to_string(HalfFoldShape shape) {
  switch (shape) {
    case HalfFoldShape::kInline:
      return "inline";
    case HalfFoldShape::kBatch8:
      return "b8x1";
    case HalfFoldShape::kBatch4:
      return "b4x1";
    case HalfFoldShape::kBatch4x2:
      return "b4x2";
    case HalfFoldShape::kBatch2x2:
      return "b2x2";
    case HalfFoldShape::kStaged2x4:
      return "staged-s2x4";
    case HalfFoldShape::kStaged4x2:
      return "staged-s4x2";
    case HalfFoldShape::kVector4:
      return "vector-s4";
  }
  return "unknown";
}

const char* to_string(HalfPath path) {
  switch (path) {
    case HalfPath::kVector:
      return "vector";
    case HalfPath::kRealigned:
      return "realigned";
    case HalfPath::kScalar:
      return "scalar";
  }
  return "unknown";
}

}  // namespace detail

void detail::cuda_fold_stacked_half_shaped(const void* d_stacked, std::uint32_t world,
                                           std::size_t slot_stride, std::size_t n, Op op,
                                           DType dtype, void* d_out, void* cuda_stream,
                                           HalfFoldShape shape) {
  if (dtype == DType::kF32) {
    return launch_fold_stacked(static_cast<const float*>(d_stacked), world, slot_stride, n, op,
                               static_cast<float*>(d_out), cuda_stream);
  }
  half_kernel_detail::check_half_table("cuda_fold_stacked_half", d_stacked, world, slot_stride, n,
                                       d_out);
  if (n == 0) return;
  const HalfTable table = half_kernel_detail::table_of(d_stacked, world, slot_stride, n, d_out);
  const FoldFinish finish{mean_scale(world), op == Op::kMean};
  const auto stream = static_cast<cudaStream_t>(cuda_stream);
  if (dtype == DType::kF16) {
    launch_fold<true>(table, finish, stream, shape);
  } else {
    launch_fold<false>(table, finish, stream, shape);
  }
}

void cuda_fold_stacked_half(const void* d_stacked, std::uint32_t world, std::size_t slot_stride,
                            std::size_t n, Op op, DType dtype, void* d_out, void* cuda_stream) {
  const detail::HalfPath path = detail::half_path(d_stacked, world, slot_stride, n, d_out);
  detail::cuda_fold_stacked_half_shaped(d_stacked, world, slot_stride, n, op, dtype, d_out,
                                        cuda_stream, detail::default_half_fold_shape(path, world));
}

}  // namespace rv

// The fixed-order fold of bf16/f16 stacked slots (cuda_fold_stacked_half, half_stacked_kernel.h):
// one launch, 2 bytes read per element and slot, 2 written per element. A grid sized to the
// device strides over the output's 16-byte units (half_kernel_detail.h); per unit it loads a
// batch of slots at once (several loads in flight before the first addition needs one),
// widens each element to binary32 and adds it in ascending slot order, then scales the mean
// and rounds once to the dtype. The few elements before the first unit and after the last are
// folded one per thread in the same launch.
//
// Every arithmetic step is the CPU's (core/fold.cc over the widened values, then
// core/dtype_law.h's rounding, docs/DESIGN.md §2.5): __fadd_rn from slot 0 itself in
// ascending order, __fmul_rn by mean_scale(W), one narrowing; the intrinsics keep each a
// separately rounded binary32 operation whatever the flags (no FMA contraction). When a value
// reaches a register, or through which load, changes no rounding.
#include <cstdint>
#include <string>

#include "core/cuda/fold_kernel.h"
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

void cuda_fold_stacked_half(const void* d_stacked, std::uint32_t world, std::size_t slot_stride,
                            std::size_t n, Op op, DType dtype, void* d_out, void* cuda_stream) {
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
  const auto launch = [&](auto kernel) {
    kernel<<<half_kernel_detail::grid_for(kernel, table), kThreads, 0, stream>>>(table, finish);
    RV_CUDA_CHECK_LAUNCH("fold_half_kernel");
  };
  if (dtype == DType::kF16) {
    launch(fold_half_kernel<true>);
  } else {
    launch(fold_half_kernel<false>);
  }
}

}  // namespace rv

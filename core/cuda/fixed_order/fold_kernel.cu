// The fold kernels: one launch does the whole fold (no extra passes). A grid sized to the
// device strides over 16-byte units of the output; per unit it loads a batch of slots at
// once (so several loads are in flight before the first addition needs one) and adds them
// in ascending slot order, then writes mean scale and canonical NaNs. The few elements
// before the first unit and after the last one are done by scalar threads in the same launch.
// This file: the kernel for slots that share the output's 16-byte phase (and, with float
// units, the scalar fallback), the path choice and the entry points; slots at other phases
// go to the realigned kernel (fold_realign_kernel.cu).
//
// Why the order of loads may differ from the order of additions: the contract fixes only
// the association ((x_0 + x_1) + x_2) + …; when a value arrives in a register does not
// change any rounding. __fadd_rn / __fmul_rn keep each operation a separately rounded
// binary32 operation whatever the compiler flags (no contraction into an FMA).
#include "core/cuda/fixed_order/fold_kernel.h"

#include <cstdint>
#include <string>

#include "core/cuda/fixed_order/fold_kernel_detail.h"
#include "core/error.h"
#include "core/fold_law.h"

namespace rv {
namespace {

using fold_kernel_detail::add;
using fold_kernel_detail::finish;
using fold_kernel_detail::fold_edges;
using fold_kernel_detail::FoldArgs;
using fold_kernel_detail::kThreads;
using fold_kernel_detail::load;
using fold_kernel_detail::store;

// Fewest elements for each float4 path: below these a unit or two would be all the body,
// and the scalar kernel is as fast.
constexpr std::size_t kVectorMinimum = 8;
constexpr std::size_t kRealignedMinimum = 16;

template <typename Unit, int kBatch, int kUnroll, bool kStreaming, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks) fold_kernel(FoldArgs a) {
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
  fold_edges(a, thread, kWidth);
}

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// The phase of a float-aligned pointer within its 16-byte unit, in floats.
std::uint32_t float_phase(const float* p) {
  return static_cast<std::uint32_t>(address(p) / sizeof(float) % 4);
}

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

template <typename Unit>
void launch_unit(detail::FoldShape shape, const FoldArgs& args, cudaStream_t stream) {
  fold_kernel_detail::with_shape(shape, [&](auto p) {
    using P = decltype(p);
    fold_kernel_detail::launch_resident(
        fold_kernel<Unit, P::kBatch, P::kUnroll, P::kStreaming, P::kMinBlocks>, args,
        static_cast<std::size_t>(kThreads) * P::kUnroll, stream, "fold_kernel");
  });
}

}  // namespace

namespace detail {

// The shapes chosen are the fastest per W (docs/results.md, "Decisions behind the code"). The vector path: batch8x1 at
// every W. The realigned path depends on W in a way no simple rule captured (occupancy,
// register allocation and the second, cache-hit load per misaligned chunk pull in different
// directions): batch4x1 at W = 2 and 5, at W = 3 batch4x1 compiled for 4 resident blocks per
// SM (53 registers instead of 47, so 4 blocks instead of 5), batch8x1 at W = 4 and from 6 up.
FoldShape default_fold_shape(FoldPath path, std::uint32_t world) {
  if (path != FoldPath::kRealigned) return FoldShape::kBatch8Unroll1;
  if (world == 3) return FoldShape::kBatch4Unroll1FourBlocks;
  if (world < 4 || world == 5) return FoldShape::kBatch4Unroll1;
  return FoldShape::kBatch8Unroll1;
}

// Warp shuffles are slower than the second, mostly cache-hit load of overlapping loads at
// almost every W (docs/results.md, "Decisions behind the code"), so every lane loads both
// chunks itself.
FoldRealign default_fold_realign() { return FoldRealign::kOverlappingLoads; }

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
    case FoldShape::kBatch4Unroll1:
      return "batch4x1";
    case FoldShape::kBatch2Unroll2:
      return "batch2x2";
    case FoldShape::kBatch2Unroll1:
      return "batch2x1";
    case FoldShape::kBatch4Unroll1FourBlocks:
      return "batch4x1-4blocks";
  }
  return "unknown";
}

const char* to_string(FoldRealign realign) {
  switch (realign) {
    case FoldRealign::kShuffle:
      return "shuffle";
    case FoldRealign::kOverlappingLoads:
      return "overlapping-loads";
  }
  return "unknown";
}

const char* to_string(FoldPath path) {
  switch (path) {
    case FoldPath::kVector:
      return "vector";
    case FoldPath::kRealigned:
      return "realigned";
    case FoldPath::kScalar:
      return "scalar";
  }
  return "unknown";
}

FoldPath fold_path(const float* stacked, std::uint32_t world, std::size_t stride, std::size_t n,
                   const float* out) {
  if (address(stacked) % sizeof(float) != 0 || address(out) % sizeof(float) != 0) {
    return FoldPath::kScalar;  // no float4 unit of such a pointer is aligned
  }
  // A float4 unit of element i is aligned in every slot and in the output only if they all
  // sit at one offset modulo 16 bytes: the same phase for slot 0 and out, and a stride that
  // is a whole number of units (or one slot only).
  const bool same_phase = float_phase(stacked) == float_phase(out);
  const bool stride_whole = world == 1 || stride % 4 == 0;
  if (same_phase && stride_whole) {
    return n >= kVectorMinimum ? FoldPath::kVector : FoldPath::kScalar;
  }
  return n >= kRealignedMinimum ? FoldPath::kRealigned : FoldPath::kScalar;
}

void launch_fold_stacked_shaped(const float* stacked, std::uint32_t world, std::size_t stride,
                                std::size_t n, Op op, float* out, void* cuda_stream,
                                FoldShape shape, FoldRealign realign) {
  check_fold_arguments(stacked, world, stride, n, out);
  if (n == 0) return;
  FoldArgs args{stacked, out, stride, n, 0, n, world, 0, 0, mean_scale(world), op == Op::kMean};
  const auto stream = static_cast<cudaStream_t>(cuda_stream);
  // The units are the output's aligned float4s: element `head` of the output starts one.
  const std::size_t out_head = (4 - float_phase(out)) % 4;
  switch (fold_path(stacked, world, stride, n, out)) {
    case FoldPath::kVector:
      args.head = out_head;
      args.units = (n - args.head) / 4;
      return launch_unit<float4>(shape, args, stream);
    case FoldPath::kRealigned:
      // A unit of a slot at phase p > 0 is read as the two aligned chunks around it, which
      // reach p elements before the unit and 4 − p after it. A head of at least 3 and a
      // tail of at least 3 elements keep both inside the slot, so no load touches the gaps
      // between slots or memory past either end of the table (the head stays at the
      // output's phase: 3, or 4 + 0…2).
      args.head = out_head >= 3 ? out_head : out_head + 4;
      args.units = (n - args.head - 3) / 4;
      args.phase0 = static_cast<std::uint32_t>((float_phase(stacked) + args.head) % 4);
      args.stride_phase = static_cast<std::uint32_t>(stride % 4);
      return fold_kernel_detail::launch_realigned(args, shape, realign, stream);
    case FoldPath::kScalar:
      return launch_unit<float>(shape, args, stream);
  }
  throw InternalError("unknown fold path");
}

}  // namespace detail

void launch_fold_stacked(const float* d_stacked, std::uint32_t world, std::size_t slot_stride,
                         std::size_t n, Op op, float* d_out, void* cuda_stream) {
  const detail::FoldPath path = detail::fold_path(d_stacked, world, slot_stride, n, d_out);
  detail::launch_fold_stacked_shaped(d_stacked, world, slot_stride, n, op, d_out, cuda_stream,
                                     detail::default_fold_shape(path, world),
                                     detail::default_fold_realign());
}

}  // namespace rv

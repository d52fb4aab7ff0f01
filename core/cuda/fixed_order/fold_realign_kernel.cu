// The realigned fold kernel: the fold of fold_kernel.cu when the slots do not all share the
// output's 16-byte phase. Users' tensors start at any float, and a slot stride that is not a
// whole number of float4s puts neighbouring slots at different phases; folding those one
// float at a time fell well short of a device-to-device copy, where the aligned float4
// kernel reaches it (docs/results.md, "Decisions behind the code").
//
// Design. The units are the output's aligned float4s (a scalar head and tail in the same
// launch, fold_kernel_detail::fold_edges), so every store is a 16-byte vector store and
// every warp's stores one contiguous span, as on the aligned path. A slot at phase p (floats
// modulo 4, relative to the output; slot r's is (phase0 + r × stride) mod 4) holds a unit's
// 4 elements across two aligned chunks of its own: the last 4 − p floats of the lane's chunk
// and the first p of the next one. Every lane loads its own chunk as one aligned float4, so
// a warp's loads of a slot are one contiguous 512-byte span of 16-byte loads, and:
//   kShuffle: the next chunk is the next lane's own chunk: p ≤ 3 shuffles bring its first p
//     floats over. Only the warp's last lane, and the lane holding the last unit, load it
//     themselves (it belongs to the next warp). Each byte is requested once (1/32 twice).
//   kOverlappingLoads: every lane loads both chunks; the second request of each chunk is
//     usually an L1 or L2 hit, but the requests to L1 and L2 double for such a slot.
// Slots at phase 0 (slot 0 of an in-place fold, or every other slot of an even stride) are
// loaded and used as they are. The phase is the same for every lane of the grid, so the
// branches on it never split a warp. Rejected: a staged copy through shared memory (one
// more pass over every byte and a barrier per batch), and one float per lane (the 0.64–0.83
// above: four times the load instructions, 4-byte requests).
//
// Arithmetic. Realignment moves values between registers and lanes only: every element still
// gets sum = slot 0, then sum = __fadd_rn(sum, slot r) for r = 1, 2, … in ascending order,
// then finish(), as the aligned kernel and core/fold.h do (docs/DESIGN.md §2.2). The batches
// here start at slot 0 (slots 0…7, 8…15, …, so slot 0's load is in flight with the others);
// batching decides only when values arrive, never the association.
#include <cstdint>

#include "core/cuda/fixed_order/fold_kernel.h"
#include "core/cuda/fixed_order/fold_kernel_detail.h"
#include "core/error.h"

namespace rv::fold_kernel_detail {
namespace {

using detail::FoldRealign;

constexpr unsigned kFullWarp = 0xFFFFFFFFu;
constexpr unsigned kLastLane = 31;

// A slot's aligned chunks around one output unit: the lane's own, and the next one where
// this lane loaded it from memory. Zero where not loaded: idle lanes still take part in the
// shuffles, and their values are never used.
struct Chunks {
  float4 own = {0.0f, 0.0f, 0.0f, 0.0f};
  float4 next = {0.0f, 0.0f, 0.0f, 0.0f};
};

// The unit's 4 elements: the last 4 − phase floats of `own`, then the first `phase` of `next`.
__device__ __forceinline__ float4 splice(float4 own, float4 next, std::uint32_t phase) {
  switch (phase) {
    case 1:
      return make_float4(own.y, own.z, own.w, next.x);
    case 2:
      return make_float4(own.z, own.w, next.x, next.y);
    default:
      return make_float4(own.w, next.x, next.y, next.z);
  }
}

// The output unit's 4 values of one slot. Every lane of the warp must call it (the shuffles),
// with the slot's phase, which is the same for all of them.
template <FoldRealign kRealign>
__device__ __forceinline__ float4 realigned(const Chunks& chunks, std::uint32_t phase,
                                            bool loaded_next) {
  if (phase == 0) return chunks.own;
  if constexpr (kRealign == FoldRealign::kShuffle) {
    // The next lane's own chunk is this lane's next one; only its first `phase` floats count.
    float4 next = make_float4(__shfl_down_sync(kFullWarp, chunks.own.x, 1), 0.0f, 0.0f, 0.0f);
    if (phase >= 2) next.y = __shfl_down_sync(kFullWarp, chunks.own.y, 1);
    if (phase == 3) next.z = __shfl_down_sync(kFullWarp, chunks.own.z, 1);
    return splice(chunks.own, loaded_next ? chunks.next : next, phase);
  } else {
    return splice(chunks.own, chunks.next, phase);
  }
}

// Slot r's phase at the output's first unit, in floats: r × stride ≡ r × (stride mod 4)
// modulo 4, so 32-bit arithmetic on the reduced stride gives it exactly.
__device__ __forceinline__ std::uint32_t slot_phase(const FoldArgs& a, std::uint32_t r) {
  return (a.phase0 + r * a.stride_phase) & 3u;
}

template <int kBatch, int kUnroll, bool kStreaming, FoldRealign kRealign, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks) fold_realigned_kernel(FoldArgs a) {
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const unsigned lane = threadIdx.x % 32;
  float* out = a.out + a.head;  // 16-byte aligned: the units are the output's

  // `first - lane` is the warp's first unit of the sweep: the loop runs while the warp has
  // work, so all 32 lanes run every iteration (the shuffles need them) and lanes past the
  // last unit are predicated off inside.
  for (std::size_t first = thread; first - lane < a.units; first += threads * kUnroll) {
    std::size_t unit[kUnroll];
    bool active[kUnroll];
    bool loads_next[kUnroll];  // whether this lane loads the next chunk from memory
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      unit[u] = first + u * threads;
      active[u] = unit[u] < a.units;
      // Under kShuffle, the lane whose next lane holds no chunk of this sweep: the warp's
      // last lane, and the lane of the last unit (the lanes after it are idle).
      loads_next[u] = active[u] && (kRealign == FoldRealign::kOverlappingLoads ||
                                    lane == kLastLane || unit[u] + 1 == a.units);
    }
    float4 sum[kUnroll];
    for (std::uint32_t r = 0; r < a.world; r += kBatch) {
      std::uint32_t phase[kBatch];
      Chunks chunks[kUnroll][kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) phase[b] = slot_phase(a, r + b);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          if (active[u] && r + b < a.world) {
            // The aligned chunk holding the unit's first element; head ≥ 3 ≥ phase keeps it
            // inside the slot (and the tail keeps the next one inside: fold_kernel.cu).
            const float* chunk = a.stacked + (r + b) * a.stride + a.head - phase[b] + 4 * unit[u];
            chunks[u][b].own = load<float4, kStreaming>(chunk);
            if (phase[b] != 0 && loads_next[u]) {
              chunks[u][b].next = load<float4, kStreaming>(chunk + 4);
            }
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {  // ascending slots: the contract's association
          if (r + b < a.world) {            // the same for the whole warp
            const float4 value = realigned<kRealign>(chunks[u][b], phase[b], loads_next[u]);
            if (active[u]) sum[u] = r + b == 0 ? value : add(sum[u], value);
          }
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (active[u]) store<float4, kStreaming>(out + 4 * unit[u], finish(sum[u], a));
    }
  }

  // The scalar edges: 3 to 6 elements on each side.
  fold_edges(a, thread, 4);
}

}  // namespace

void launch_realigned(const FoldArgs& args, detail::FoldShape shape, FoldRealign realign,
                      cudaStream_t stream) {
  with_shape(shape, [&](auto p) {
    using P = decltype(p);
    const std::size_t per_block = static_cast<std::size_t>(kThreads) * P::kUnroll;
    switch (realign) {
      case FoldRealign::kShuffle:
        return launch_resident(fold_realigned_kernel<P::kBatch, P::kUnroll, P::kStreaming,
                                                     FoldRealign::kShuffle, P::kMinBlocks>,
                               args, per_block, stream, "fold_realigned_kernel<shuffle>");
      case FoldRealign::kOverlappingLoads:
        return launch_resident(
            fold_realigned_kernel<P::kBatch, P::kUnroll, P::kStreaming,
                                  FoldRealign::kOverlappingLoads, P::kMinBlocks>,
            args, per_block, stream, "fold_realigned_kernel<overlapping-loads>");
    }
    throw InternalError("unknown fold realignment");
  });
}

}  // namespace rv::fold_kernel_detail

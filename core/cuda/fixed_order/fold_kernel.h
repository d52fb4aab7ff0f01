// The fixed-order fold of docs/DESIGN.md §2 on a GPU: W stacked slots (slot r = the copy that
// came from rank r, at stacked + r × slot_stride), summed per element in ascending slot
// order starting from slot 0 itself, then the mean scale and the NaN rule. The element law
// is core/fold_law.h, compiled by nvcc for the device, so the bits equal core/fold.h's
// fold_stacked on every input. This header has no CUDA types: host code of any target can
// include it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/contract.h"

namespace rv {

// Enqueues the fold on `cuda_stream` (a cudaStream_t of the current device; nullptr for the
// default stream) and returns. All pointers are device pointers of the current device.
// d_out may be exactly slot 0 (an in-place fold) and must not overlap any other slot.
// No alignment is required of anything: the output is written in 16-byte units at its own
// phase, and every slot is read in 16-byte units, realigned to the output's phase in
// registers where the slot's phase differs (detail::FoldPath). Only pointers that are not
// even float-aligned, and very short shards, are folded one float at a time. Throws
// InputError for bad arguments, RuntimeFailure when the launch fails.
void launch_fold_stacked(const float* d_stacked, std::uint32_t world, std::size_t slot_stride,
                         std::size_t n, Op op, float* d_out, void* cuda_stream);

namespace detail {

// The per-thread shapes the benchmark compares: slots loaded per batch (all loads of a
// batch are in flight before the first addition) × 16-byte units per thread and batch,
// and whether the loads and stores carry the streaming (evict-first) cache hint.
enum class FoldShape : std::uint8_t {
  kBatch8Unroll1,
  kBatch4Unroll2,
  kBatch2Unroll4,
  kBatch8Unroll1Streaming,
  kBatch4Unroll1,
  kBatch2Unroll2,
  kBatch2Unroll1,
  // batch4x1 compiled for at least 4 resident blocks per SM (__launch_bounds__): more
  // registers per thread, fewer threads per SM than plain batch4x1.
  kBatch4Unroll1FourBlocks,
};
inline constexpr FoldShape kAllFoldShapes[] = {
    FoldShape::kBatch8Unroll1,          FoldShape::kBatch4Unroll2, FoldShape::kBatch2Unroll4,
    FoldShape::kBatch8Unroll1Streaming, FoldShape::kBatch4Unroll1, FoldShape::kBatch2Unroll2,
    FoldShape::kBatch2Unroll1,          FoldShape::kBatch4Unroll1FourBlocks};
const char* to_string(FoldShape shape);

// How the realigned path gets the 4 elements of an output unit from a slot at another phase:
// they straddle two aligned 16-byte chunks of the slot, the lane's own chunk and the next.
//   kShuffle: each lane loads its own chunk once; the next chunk is the neighbouring lane's,
//     taken with warp shuffles (the warp's last lane, and the last unit, load it themselves),
//     so the slot's bytes are requested from memory once, as on the aligned path;
//   kOverlappingLoads: each lane loads both chunks, so every chunk is requested twice (the
//     second request usually an L1 or L2 hit).
enum class FoldRealign : std::uint8_t { kShuffle, kOverlappingLoads };
inline constexpr FoldRealign kAllFoldRealigns[] = {FoldRealign::kShuffle,
                                                   FoldRealign::kOverlappingLoads};
// The realignment launch_fold_stacked uses.
FoldRealign default_fold_realign();
const char* to_string(FoldRealign realign);

// Which path a call takes:
//   kVector: every slot and the output share one 16-byte phase: plain float4 units;
//   kRealigned: float4 units at the output's phase, slots at other phases realigned;
//   kScalar: one float per thread (a pointer not float-aligned, or fewer elements than
//     kVector needs, 8, or kRealigned, 16).
// The vector paths fold the few elements before the first and after the last unit with
// scalar threads in the same launch.
enum class FoldPath : std::uint8_t { kVector, kRealigned, kScalar };
FoldPath fold_path(const float* d_stacked, std::uint32_t world, std::size_t slot_stride,
                   std::size_t n, const float* d_out);
const char* to_string(FoldPath path);

// The shape launch_fold_stacked uses on `path` for a world of `world` slots.
FoldShape default_fold_shape(FoldPath path, std::uint32_t world);

void launch_fold_stacked_shaped(const float* d_stacked, std::uint32_t world,
                                std::size_t slot_stride, std::size_t n, Op op, float* d_out,
                                void* cuda_stream, FoldShape shape,
                                FoldRealign realign = default_fold_realign());

}  // namespace detail
}  // namespace rv

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
// No alignment is required of anything: 16-byte vector loads are used when slot 0, every
// slot and d_out share one alignment, scalar ones otherwise. Throws InputError for bad
// arguments, RuntimeFailure when the launch fails.
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
};
inline constexpr FoldShape kAllFoldShapes[] = {FoldShape::kBatch8Unroll1, FoldShape::kBatch4Unroll2,
                                               FoldShape::kBatch2Unroll4,
                                               FoldShape::kBatch8Unroll1Streaming};
// The shape launch_fold_stacked uses.
FoldShape default_fold_shape();
const char* to_string(FoldShape shape);

// Which path a call takes: float4 units with a scalar head and tail, or scalars throughout.
enum class FoldPath : std::uint8_t { kVector, kScalar };
FoldPath fold_path(const float* d_stacked, std::uint32_t world, std::size_t slot_stride,
                   std::size_t n, const float* d_out);

void launch_fold_stacked_shaped(const float* d_stacked, std::uint32_t world,
                                std::size_t slot_stride, std::size_t n, Op op, float* d_out,
                                void* cuda_stream, FoldShape shape);

}  // namespace detail
}  // namespace rv

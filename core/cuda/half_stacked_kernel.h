// The fixed-order and the exact contract over W stacked slots of bf16 or f16 elements in one
// device's memory, reading and writing the format's own 2-byte values (docs/DESIGN.md §2.5):
// the native half-precision kernels, for callers that hold every addend themselves (the C
// ABI, the DDP hooks' shards). Slot r (the copy from rank r) is at d_stacked + r × slot_stride
// elements; n elements each; the results are n elements of the same dtype at d_out.
//
//   cuda_fold_stacked_half: each element's addends widened to binary32 (exact), folded in
//     ascending slot order from slot 0 itself with separately rounded binary32 additions (no
//     FMA contraction), the mean scaled by 1.0f / W in binary32, then rounded once to the
//     dtype (every NaN its canonical NaN): core/fold.h's fold_stacked over the widened
//     values followed by core/dtype_law.h's narrowing, bit for bit.
//   cuda_exact_stacked_half: each element the value of the dtype nearest the exact sum (mean:
//     exact sum / W), rounded once, never through binary32; the special-value law of §2.4:
//     core/exact/exact_reduction.h's exact_reduce_stacked(…, dtype) over the widened values,
//     narrowed (exact, the result being of the dtype), bit for bit.
//
// Both take DType::kF32 too and then are launch_fold_stacked / launch_exact_reduce_stacked
// on float pointers (4-byte elements; their own requirements apply). Any alignment of d_stacked
// and d_out is taken (slot_stride is in elements, so every slot shares slot 0's byte parity);
// a pointer that is not even 2-byte aligned is read and written bytewise, one element per
// thread. d_out may be exactly slot 0 (in place) and must overlap no other slot.
// 1 ≤ world ≤ 2^20; slot_stride ≥ n when world > 1. Enqueued on `cuda_stream` (a cudaStream_t
// of the current device; nullptr for the default stream); all pointers are device pointers of
// the current device. Throws InputError for bad arguments (naming the function and the
// argument), RuntimeFailure when a launch fails. No CUDA types here: host code of any target
// can include it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/contract.h"
#include "core/dtype.h"

namespace rv {

void cuda_fold_stacked_half(const void* d_stacked, std::uint32_t world, std::size_t slot_stride,
                            std::size_t n, Op op, DType dtype, void* d_out, void* cuda_stream);

void cuda_exact_stacked_half(const void* d_stacked, std::uint32_t world, std::size_t slot_stride,
                             std::size_t n, Op op, DType dtype, void* d_out, void* cuda_stream);

namespace detail {

// How a half-precision call reads its table (for the tests and the benchmark's labels):
//   kVector: every slot and the output share one 16-byte phase: 8 elements per 16-byte load;
//   kRealigned: 16-byte units at the output's phase; a slot at another phase is read as the
//     two aligned 16-byte chunks around each unit and shifted into place in registers;
//   kScalar: one element per thread (a pointer not 2-byte aligned, or too few elements for
//     the units: below 16, or 32 when realigned).
// The unit paths fold the few elements before the first and after the last unit one per
// thread, in the same launch.
enum class HalfPath : std::uint8_t { kVector, kRealigned, kScalar };
HalfPath half_path(const void* d_stacked, std::uint32_t world, std::size_t slot_stride,
                   std::size_t n, const void* d_out);
const char* to_string(HalfPath path);

// How the exact kernel's threads take the table: one 8-element unit at a time (4 slots' loads
// in flight), or two units (2 slots' loads of both in flight: twice the bytes in flight at
// W = 2, with fewer resident threads). The same bits; the benchmark compares them.
enum class HalfExactShape : std::uint8_t { kOneUnit, kTwoUnits };
inline constexpr HalfExactShape kAllHalfExactShapes[] = {HalfExactShape::kOneUnit,
                                                         HalfExactShape::kTwoUnits};
HalfExactShape default_half_exact_shape(std::uint32_t world);
const char* to_string(HalfExactShape shape);
void cuda_exact_stacked_half_shaped(const void* d_stacked, std::uint32_t world,
                                    std::size_t slot_stride, std::size_t n, Op op, DType dtype,
                                    void* d_out, void* cuda_stream, HalfExactShape shape);

}  // namespace detail
}  // namespace rv

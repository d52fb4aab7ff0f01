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

// How the fold kernel's threads take the table (issue 37: the same bits, the benchmark
// compares them, the tests hold each to the host):
//   kInline: the first kernel. Slot 0's unit is loaded and widened before the batches of 8
//     slots; a misaligned slot is realigned right after its loads, so the next slot's loads
//     wait for them (one memory latency per realigned slot); the head and tail elements read
//     their W addends one after another.
//   kBatch8, kBatch4, kBatch4x2, kBatch2x2 (the "units" kernel, after the f32 fold): slot 0 in
//     the first batch; every chunk of a batch (both of a misaligned slot, for each of the
//     thread's units) requested before any is realigned (a uniform branch on the slot's phase)
//     or added; two elements narrowed by one conversion; the head and tail elements on the
//     grid's last threads, their addends requested 8 at a time. kBatchBxU: B slots a batch,
//     U units a thread (x1 when not said).
//   kStaged2x4, kStaged4x2 (the "staged" kernel): the units kernel's arithmetic with the loads
//     staged through shared memory by asynchronous copies (cp.async), a warp's 32 units at a
//     time: kStagedSxK copies rounds of S slots, K − 1 rounds ahead of the one it adds, so the
//     data in flight occupies no registers and each byte is requested once.
//   kVector4 (the "vector" kernel): aligned tables only (HalfPath::kVector; any other is
//     folded by kBatch4): one unit a thread over a grid covering every unit, 4 slots' 16-byte
//     loads in registers before they are added.
enum class HalfFoldShape : std::uint8_t {
  kInline,
  kBatch8,
  kBatch4,
  kBatch4x2,
  kBatch2x2,
  kStaged2x4,
  kStaged4x2,
  kVector4
};
inline constexpr HalfFoldShape kAllHalfFoldShapes[] = {
    HalfFoldShape::kInline,    HalfFoldShape::kBatch8,   HalfFoldShape::kBatch4,
    HalfFoldShape::kBatch4x2,  HalfFoldShape::kBatch2x2, HalfFoldShape::kStaged2x4,
    HalfFoldShape::kStaged4x2, HalfFoldShape::kVector4};
HalfFoldShape default_half_fold_shape(HalfPath path, std::uint32_t world);
const char* to_string(HalfFoldShape shape);
void cuda_fold_stacked_half_shaped(const void* d_stacked, std::uint32_t world,
                                   std::size_t slot_stride, std::size_t n, Op op, DType dtype,
                                   void* d_out, void* cuda_stream, HalfFoldShape shape);

// How the exact kernel's threads take the table (issue 37: the same bits, the benchmark
// compares them, the tests hold each to the host):
//   kOneUnit, kTwoUnits: the first kernel: one 8-element unit at a time (4 slots' loads in
//     flight), or two units (2 slots' loads of both in flight); realigned as the fold's
//     kInline; every addend widened to binary32 and converted to double (cvt.f64.f32, a
//     quarter-rate instruction on sm_90), the window kept per element (largest and smallest
//     magnitude), the result rounded to odd in binary32 and then to the dtype.
//   kSlots4, kSlots2Pipelined (the "units" kernel): the loads as the fold's units kernel
//     (kSlots4: 4 slots a round; kSlots2Pipelined: 2 slots, the next round's or unit's loads
//     issued before this round is added); the window kept on packed pairs of magnitudes
//     (16-bit SIMD max and add-min: 1.5 instructions an element instead of 3) and checked a
//     unit at a time (a unit with a special or too wide a window goes element by element,
//     where the law takes over); the result rounded straight from the double to the dtype
//     (one cvt.rn.bf16.f64 / cvt.rn.f16.f64 on sm_90).
//   kStaged2x4, kStaged2x4Hybrid, kStaged2x4Integer, kStaged4x2, kStaged2x4Deferred (the
//     "staged" kernel): the
//     units kernel's arithmetic with the fold's staged loads (shared memory, cp.async).
//     Hybrid: the odd element of each pair converted to double by integer instructions (the
//     bits of x × 2^-896, or 2^-1008 for f16, rescaled once at the end) instead of
//     cvt.f64.f32, halving the quarter-rate conversions; Integer: both elements so.
//     Deferred: kStaged2x4 with a unit that must go element by element set aside (a queue of
//     64 a warp in shared memory) and finished out of the loop, so that it fits 3 blocks of
//     256 threads an SM (80 registers) instead of 2.
//   kVector4 (the "vector" kernel): aligned tables only (HalfPath::kVector; any other is
//     reduced by kStaged4x2): one unit a thread, 4 slots' 16-byte loads in registers before
//     they are added, the units and staged kernels' arithmetic; 80 registers, 3 resident
//     blocks of 256 threads an SM. kVector4Blocks4: the same capped at 64 registers for 4
//     blocks (ptxas spills 76 bytes a thread).
// The units and staged shapes keep no window for f16, whose sums are exact in double below
// W = 2^13: an f16 world above that takes kOneUnit.
enum class HalfExactShape : std::uint8_t {
  kOneUnit,
  kTwoUnits,
  kSlots4,
  kSlots2Pipelined,
  kStaged2x4,
  kStaged2x4Hybrid,
  kStaged4x2,
  kStaged2x4Integer,
  kStaged2x4Deferred,
  kVector4,
  kVector4Blocks4
};
inline constexpr HalfExactShape kAllHalfExactShapes[] = {HalfExactShape::kOneUnit,
                                                         HalfExactShape::kTwoUnits,
                                                         HalfExactShape::kSlots4,
                                                         HalfExactShape::kSlots2Pipelined,
                                                         HalfExactShape::kStaged2x4,
                                                         HalfExactShape::kStaged2x4Hybrid,
                                                         HalfExactShape::kStaged4x2,
                                                         HalfExactShape::kStaged2x4Integer,
                                                         HalfExactShape::kStaged2x4Deferred,
                                                         HalfExactShape::kVector4,
                                                         HalfExactShape::kVector4Blocks4};
HalfExactShape default_half_exact_shape(std::uint32_t world);
const char* to_string(HalfExactShape shape);
void cuda_exact_stacked_half_shaped(const void* d_stacked, std::uint32_t world,
                                    std::size_t slot_stride, std::size_t n, Op op, DType dtype,
                                    void* d_out, void* cuda_stream, HalfExactShape shape);

}  // namespace detail
}  // namespace rv

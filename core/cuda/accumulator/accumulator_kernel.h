// The exact gradient accumulator's kernels (docs/DESIGN.md §11): a micro-batch's add into
// the device's one-digit blocks, their export to an agreed one-limb window, and the one-limb
// finish. Blocks the device cannot keep in one digit (a window past 62 bits, NaN, ±Inf or −0)
// are marked for the host (core/cuda/accumulator/cuda_accumulator.h keeps them in an
// ExactAccumulator), bit for bit the host's law (core/exact/exact_accumulator.h). No CUDA types
// here; every pointer is a device pointer of the current device, every launch on `cuda_stream`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace rv {

// The device's accumulator state: per element a digit, per block of exact::kBlock elements
// its bottom (exact::kNoBottom before a nonzero value), the bit length of its largest |digit|,
// the prefix its adds covered and where it lives (kOnDevice, kOnHost, or kToHost: marked by
// the add kernel, which then left the block untouched, for the host to take over).
struct DeviceAccumulatorState {
  std::int64_t* digits = nullptr;
  std::int32_t* bottom = nullptr;
  std::int32_t* magnitude_bits = nullptr;
  std::uint32_t* covered = nullptr;
  std::uint32_t* residence = nullptr;
  std::uint32_t* host_needed = nullptr;  // one word, set to 1 when any block needs the host
  std::size_t count = 0;
};
inline constexpr std::uint32_t kOnDevice = 0, kOnHost = 1, kToHost = 2;

// Adds `rows` rows of n values, row r at d_values + r × row_stride, to elements
// [offset, offset + n) (offset a multiple of exact::kBlock) in every block on the device that
// can take all of them; sets *host_needed for any other (left untouched, every row).
void launch_accumulator_add(const DeviceAccumulatorState& state, const float* d_values,
                            std::size_t row_stride, std::size_t rows, std::size_t offset,
                            std::size_t n, void* cuda_stream);

// What the export and the finish do with a block: kSkip (the host writes it), kZero (no limb,
// nothing special: finish writes +0), kOneLimb (export shifts the digit to the agreed bottom;
// finish rounds the summed digit).
inline constexpr std::uint8_t kSkip = 0, kZero = 1, kOneLimb = 2;
struct DeviceAccumulatorPlan {
  const std::uint8_t* kind = nullptr;     // per block
  const std::int32_t* bottom = nullptr;   // per block, the agreed bottom
  const std::uint64_t* offset = nullptr;  // per block, into the digit words
  std::size_t blocks = 0;
};

// Every block's bottom back to exact::kNoBottom (clear), with no host buffer to keep alive.
// Clear does not zero the digits: a block whose magnitude_bits is 0 holds zero digits whatever
// its memory says, and no kernel reads them (the add writes the whole block when it first
// stores a nonzero digit).
void launch_accumulator_reset_bottoms(std::int32_t* bottom, std::size_t blocks, void* cuda_stream);

// Export of the kOneLimb blocks that live on the device (the host exports the others).
void launch_accumulator_export(const DeviceAccumulatorState& state,
                               const DeviceAccumulatorPlan& plan, std::int64_t* d_words,
                               void* cuda_stream);

// Results of the kZero and kOneLimb blocks from the summed words: RN(S), or RN(S / divisor)
// when mean (1 ≤ divisor ≤ 2^20), rounded once to `dtype` (docs/DESIGN.md §2.5), into d_out:
// elements of that dtype (4 bytes for f32, 2 for bf16 and f16).
void launch_accumulator_finish(const DeviceAccumulatorPlan& plan, const std::int64_t* d_summed,
                               std::size_t count, bool mean, std::uint32_t divisor, DType dtype,
                               void* d_out, void* cuda_stream);

// A world of one, with no plan: the results of every block that lives on the device from its
// own digits and bottom, read in place (a block's one digit an element is its own one-limb
// window, the window a plan of its own agreement words would export); the blocks marked for or
// living on the host are left to it.
void launch_accumulator_finish_alone(const DeviceAccumulatorState& state, bool mean,
                                     std::uint32_t divisor, DType dtype, void* d_out,
                                     void* cuda_stream);

}  // namespace rv

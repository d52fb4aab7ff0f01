// The exact contract's element work on a GPU (docs/DESIGN.md §2.4): the agreement words, the
// digits under a plan and the rounding, computing on device memory exactly what
// core/exact/host_exact.h computes on the host, bit for bit, with the same element laws
// (core/exact/exact_law.h, compiled by nvcc for the device). Also the integer combination of
// W word buffers (sum or max) that the library's int64 all-reduce does, for the one-GPU
// loopback world and for tests. This header has no CUDA types: host code of any target can
// include it.
//
// Every function enqueues on `cuda_stream` (a cudaStream_t of the current device; nullptr for
// the default stream) and returns; all pointers are device pointers of the current device.
// Throws InputError for bad arguments, RuntimeFailure when a launch fails.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/contract.h"
#include "core/dtype.h"
#include "core/exact/exact_plan.h"
#include "core/int_reduction.h"

namespace rv {

// An ExactPlan as the kernels read it: the block slots in device memory (an upload of
// plan.blocks), the rest by value.
struct ExactPlanView {
  const ExactBlockSlot* blocks = nullptr;  // device pointer, block_count entries
  std::size_t block_count = 0;
  std::size_t count = 0;  // elements covered (plan.count)
  std::uint32_t world = 1;
  int limb_bits = 62;
  std::size_t words = 0;        // int64 words of the plan's buffer (plan.words)
  bool general_blocks = false;  // some block has several limbs or special words
};
// The view of `plan` whose slots were uploaded to d_blocks.
ExactPlanView view_of(const ExactPlan& plan, const ExactBlockSlot* d_blocks);

// exact_agreement_words: exact_block_count(n) × exact::kAgreementWords words at d_words.
void launch_exact_agreement_words(const float* d_values, std::size_t n, std::int64_t* d_words,
                                  void* cuda_stream);

// exact_encode: the plan's words (digits, zero digits included, and special words) of
// plan.count values at d_words; every word of the plan is written.
void launch_exact_encode(const float* d_values, const ExactPlanView& plan, std::int64_t* d_words,
                         void* cuda_stream);

// exact_round: plan.count results at d_out from the summed words at d_sums. d_out must not
// overlap d_sums.
void launch_exact_round(const std::int64_t* d_sums, const ExactPlanView& plan, Op op, float* d_out,
                        void* cuda_stream);
// The same, each result rounded once to `dtype` (docs/DESIGN.md §2.5: the exact sum or mean
// straight to bf16/f16, never through binary32) and written as its binary32 widening:
// host_exact.h's exact_round(…, dtype), bit for bit. f32 is the call above.
void launch_exact_round(const std::int64_t* d_sums, const ExactPlanView& plan, Op op, DType dtype,
                        float* d_out, void* cuda_stream);

// The exact contract over W slots in one device's memory (slot r at d_stacked + r ×
// slot_stride, n values each from a block-aligned start), in one launch and with no host
// synchronisation: what core/exact/exact_reduction.h's exact_reduce_stacked computes, bit for
// bit, for callers that hold every addend themselves (the C ABI, the DDP hooks' shards).
// 1 ≤ world ≤ 2^20, slot_stride ≥ n when world > 1; d_out may be exactly slot 0 (in place)
// and must overlap no other slot (capi/stacked_arguments.h checks that for the C ABI).
void launch_exact_reduce_stacked(const float* d_stacked, std::uint32_t world,
                                 std::size_t slot_stride, std::size_t n, Op op, float* d_out,
                                 void* cuda_stream);

// What the library's int64 all-reduce computes, over W slots in one device's memory: d_out[i]
// = the sum (or the maximum) of d_stacked[r × slot_stride + i] over r < slots. Integer
// addition is associative, so the order of the slots does not matter; the caller keeps every
// sum inside int64 (the exact contract's digits do, by construction). d_out may be exactly
// slot 0 (in place); a slot_stride of 0 adds slot 0 to itself `slots` times.
void launch_combine_words(const std::int64_t* d_stacked, std::uint32_t slots,
                          std::size_t slot_stride, std::size_t n, IntReduction op,
                          std::int64_t* d_out, void* cuda_stream);

namespace detail {

// How the agreement kernel reads an aligned arena's full blocks, one warp per block:
//   kPrefetchNext: each warp loads its next block while it reduces the current one;
//   kManyWarps (the default): one block per warp, streaming (evict-first) loads, no
//     prefetch, registers capped for 48 warps per SM (exact_agreement_kernel.cu).
// The same words (the tests hold each to host_exact.cc); the benchmark compares them.
enum class AgreementLoads : std::uint8_t { kPrefetchNext, kManyWarps };
inline constexpr AgreementLoads kAllAgreementLoads[] = {AgreementLoads::kPrefetchNext,
                                                        AgreementLoads::kManyWarps};
AgreementLoads default_agreement_loads();
const char* to_string(AgreementLoads loads);
void launch_exact_agreement_words_with(const float* d_values, std::size_t n, std::int64_t* d_words,
                                       void* cuda_stream, AgreementLoads loads);

// How the encode kernel knows the limb width: read from the plan at run time, or as a
// compile-time constant (one kernel per width 43 … 62), which turns exact::digits_of's
// division of a bit offset by the width into a multiply and a shift. The same bits; the
// benchmark compares them.
enum class LimbWidth : std::uint8_t { kRunTime, kCompileTime };
inline constexpr LimbWidth kAllLimbWidths[] = {LimbWidth::kRunTime, LimbWidth::kCompileTime};
LimbWidth default_limb_width();
const char* to_string(LimbWidth width);

void launch_exact_encode_with(const float* d_values, const ExactPlanView& plan,
                              std::int64_t* d_words, void* cuda_stream, LimbWidth width);

// How the one-limb mean divides |D| × 2^64 by W:
//   kLongDivision: exact::round_one_limb's long division in 64-bit integer divisions (a
//     software routine on the GPU);
//   kReciprocal: one multiply-high by a reciprocal of W precomputed on the host, on the top
//     53 bits of |D| (q keeps ≥ 33 bits and an exact sticky bit, as in exact::round_mean);
//   kPowerOfTwo (W = 2^k only): no division: |D| / 2^k is exact, so the mean is the sum's
//     rounding k bit positions lower, exact::round_one_limb(D, bottom − k, W, sum). Both
//     are the correctly rounded value of the same real number |D| × 2^(bottom − k − 149).
//   kScreenedDouble: the quotient in double, D × (1/W) × 2^(bottom − 149), within 3 units
//     in its last place of the true one, rounded to float unless a float midpoint may lie
//     that close (the 29 bits below the float's 24 within 8 of the midpoint pattern) or the
//     result is below 2^-125; those few take the long division (exact_round_kernel.cu).
//     Means of sums of a few floats are often exact float midpoints, and every one of those
//     takes the long division.
//   kDividedDouble: for |D| < 2^51, the correctly rounded double quotient D / (W ×
//     2^(149 − bottom)) converted to float, which is the law's single rounding (no float
//     rounding boundary lies between that quotient and the true mean: host_exact.cc argues
//     it for the host's divided mean, the same expression); wider sums as kScreenedDouble.
// All give the same bits (the tests hold each to host_exact.cc); the benchmark compares them.
enum class MeanDivision : std::uint8_t {
  kLongDivision,
  kReciprocal,
  kPowerOfTwo,
  kScreenedDouble,
  kDividedDouble
};
inline constexpr MeanDivision kAllMeanDivisions[] = {
    MeanDivision::kLongDivision, MeanDivision::kReciprocal, MeanDivision::kPowerOfTwo,
    MeanDivision::kScreenedDouble, MeanDivision::kDividedDouble};
// What launch_exact_round uses for a world: kPowerOfTwo where W is a power of two (W = 1
// included), kDividedDouble otherwise.
MeanDivision default_mean_division(std::uint32_t world);
bool applies_to(MeanDivision division, std::uint32_t world);
const char* to_string(MeanDivision division);

// Throws InputError for a division that does not apply to plan.world (kPowerOfTwo).
void launch_exact_round_with(const std::int64_t* d_sums, const ExactPlanView& plan, Op op,
                             float* d_out, void* cuda_stream, MeanDivision division);

// The reciprocal of a divisor 2 ≤ W ≤ 2^20 for dividends x < 2^53: floor(x / W) =
// mulhi64(x, magic) >> shift. Exposed for the tests.
struct Reciprocal {
  std::uint64_t magic = 0;
  int shift = 0;
  std::uint32_t divisor = 1;
};
Reciprocal reciprocal_of(std::uint32_t divisor);

}  // namespace detail
}  // namespace rv

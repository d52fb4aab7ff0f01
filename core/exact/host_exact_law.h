// The exact contract's CPU element work written as the element laws of exact_law.h and
// nothing else, one element at a time: the reference that host_exact.h's fast paths are
// tested against bit for bit (tests/exact/host_exact_fast_test.cc), and what they fall back
// to, block by block, where their exactness arguments do not reach.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/contract.h"
#include "core/dtype.h"
#include "core/exact/exact_plan.h"

namespace rv {
namespace detail {

// exact_agreement_words, exact_encode and exact_round of host_exact.h, by the law alone.
void exact_agreement_words_by_law(const float* values, std::size_t n, std::int64_t* words);
void exact_encode_by_law(const float* values, const ExactPlan& plan, std::int64_t* words);
// dtype: the format the results are rounded to, written as their binary32 widening
// (docs/DESIGN.md §2.5).
void exact_round_by_law(const std::int64_t* sums, const ExactPlan& plan, Op op, float* out,
                        DType dtype = DType::kF32);

// One block of a plan: `count` values at x (block b of the plan, whose slot is `slot`), its
// words at out = words + slot.offset.
void encode_block_by_law(const float* x, std::size_t count, const ExactBlockSlot& slot,
                         int limb_bits, std::int64_t* out);
// Only the special words of a block whose slot has them (they follow the limbs).
void encode_special_words_by_law(const float* x, std::size_t count, const ExactBlockSlot& slot,
                                 std::int64_t* out);
void round_block_by_law(const std::int64_t* in, std::size_t count, const ExactBlockSlot& slot,
                        int limb_bits, std::uint32_t world, bool mean, float* y,
                        DType dtype = DType::kF32);

}  // namespace detail
}  // namespace rv

#include "core/exact/exact_reduction.h"

#include <vector>

#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/exact/host_exact.h"

namespace rv {

void exact_reduce_stacked(const float* stacked, std::uint32_t world, std::size_t slot_stride,
                          std::size_t n, Op op, float* out) {
  const std::size_t agreement_words = exact_block_count(n) * exact::kAgreementWords;
  std::vector<std::int64_t> agreed(agreement_words), mine(agreement_words);
  for (std::uint32_t r = 0; r < world; ++r) {
    std::int64_t* target = r == 0 ? agreed.data() : mine.data();
    exact_agreement_words(stacked + r * slot_stride, n, target);
    if (r != 0) merge_agreement_words(agreed.data(), mine.data(), agreement_words);
  }
  const ExactPlan plan = plan_exact_blocks(agreed.data(), n, world);
  std::vector<std::int64_t> sums(plan.words), digits(plan.words);
  for (std::uint32_t r = 0; r < world; ++r) {
    std::int64_t* target = r == 0 ? sums.data() : digits.data();
    exact_encode(stacked + r * slot_stride, plan, target);
    if (r == 0) continue;
    for (std::size_t i = 0; i < plan.words; ++i) sums[i] += digits[i];
  }
  exact_round(sums.data(), plan, op, out);
}

std::vector<float> reference_exact(const std::vector<std::vector<float>>& arenas, Op op) {
  RV_ENFORCE_GE(InputError, arenas.size(), std::size_t{1}, "the exact reference needs a rank");
  const std::size_t n = arenas[0].size();
  for (std::size_t r = 0; r < arenas.size(); ++r) {
    RV_ENFORCE_EQ(InputError, arenas[r].size(), n, "arena length of rank", r,
                  "differs from rank 0");
  }
  const auto world = static_cast<std::uint32_t>(arenas.size());
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    exact::ExactSum s{};
    std::int64_t pos_inf = 0, neg_inf = 0, not_negative_zero = 0;
    for (const auto& arena : arenas) {
      const std::uint32_t bits = float_bits(arena[i]);
      if (bits != 0x80000000u) ++not_negative_zero;
      if (is_nan_bits(bits)) {
        ++pos_inf;
        ++neg_inf;
      } else if (bits == 0x7F800000u) {
        ++pos_inf;
      } else if (bits == 0xFF800000u) {
        ++neg_inf;
      } else {
        const exact::Magnitude m = exact::magnitude_of(bits);
        const auto k = static_cast<std::int64_t>(m.significand);
        exact::add_shifted(s, (bits >> 31) != 0 ? -k : k, m.shift);
      }
    }
    const std::int64_t special = pos_inf | (neg_inf << exact::kSpecialFieldBits) |
                                 (not_negative_zero << (2 * exact::kSpecialFieldBits));
    out[i] = float_from_bits(exact::round_exact_sum(s, 0, world, op == Op::kMean, true, special));
  }
  return out;
}

}  // namespace rv

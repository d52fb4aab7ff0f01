#include "core/exact/host_exact.h"

#include <algorithm>
#include <cstring>

#include "core/exact/exact_law.h"

namespace rv {

void exact_agreement_words(const float* values, std::size_t n, std::int64_t* words) {
  const std::size_t blocks = exact_block_count(n);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t begin = b * exact::kBlock;
    const std::size_t end = std::min(n, begin + exact::kBlock);
    exact::AgreementWords agreed;
    for (std::size_t i = begin; i < end; ++i) exact::widen_agreement(agreed, float_bits(values[i]));
    std::int64_t* w = words + b * exact::kAgreementWords;
    w[0] = agreed.top;
    w[1] = agreed.bottom_complement;
    w[2] = agreed.special;
  }
}

void merge_agreement_words(std::int64_t* into, const std::int64_t* other, std::size_t words) {
  for (std::size_t i = 0; i < words; ++i) into[i] = std::max(into[i], other[i]);
}

void exact_encode(const float* values, const ExactPlan& plan, std::int64_t* words) {
  for (std::size_t b = 0; b < plan.blocks.size(); ++b) {
    const ExactBlockSlot& slot = plan.blocks[b];
    const std::size_t count = plan.block_count(b);
    const float* x = values + b * exact::kBlock;
    std::int64_t* out = words + slot.offset;
    if (slot.limbs == 1) {  // the common case: one digit per element, no zeroing pass
      for (std::size_t i = 0; i < count; ++i) {
        out[i] = exact::digits_of(float_bits(x[i]), slot.bottom, plan.limb_bits).low;
      }
    } else if (slot.limbs > 1) {
      std::memset(out, 0, count * slot.limbs * sizeof *out);
      for (std::size_t i = 0; i < count; ++i) {
        const exact::Digits d = exact::digits_of(float_bits(x[i]), slot.bottom, plan.limb_bits);
        if (d.first_limb < 0) continue;
        out[static_cast<std::size_t>(d.first_limb) * count + i] = d.low;
        if (d.first_limb + 1 < slot.limbs) out[(d.first_limb + 1) * count + i] = d.high;
      }
    }
    if (slot.special) {
      std::int64_t* special = out + count * slot.limbs;
      for (std::size_t i = 0; i < count; ++i) special[i] = exact::special_word_of(float_bits(x[i]));
    }
  }
}

void exact_round(const std::int64_t* sums, const ExactPlan& plan, Op op, float* out) {
  const bool mean = op == Op::kMean;
  for (std::size_t b = 0; b < plan.blocks.size(); ++b) {
    const ExactBlockSlot& slot = plan.blocks[b];
    const std::size_t count = plan.block_count(b);
    const std::int64_t* in = sums + slot.offset;
    float* y = out + b * exact::kBlock;
    if (slot.limbs <= 1 && !slot.special) {
      for (std::size_t i = 0; i < count; ++i) {
        const std::int64_t d = slot.limbs == 1 ? in[i] : 0;
        y[i] = float_from_bits(exact::round_one_limb(d, slot.bottom, plan.world, mean));
      }
      continue;
    }
    if (slot.limbs == 2 && !slot.special) {
      for (std::size_t i = 0; i < count; ++i) {
        y[i] = float_from_bits(exact::round_two_limbs(in[i], in[count + i], plan.limb_bits,
                                                      slot.bottom, plan.world, mean));
      }
      continue;
    }
    const std::int64_t* special = in + count * slot.limbs;
    for (std::size_t i = 0; i < count; ++i) {
      exact::ExactSum s{};
      for (int j = 0; j < slot.limbs; ++j) {
        exact::add_shifted(s, in[static_cast<std::size_t>(j) * count + i], j * plan.limb_bits);
      }
      y[i] = float_from_bits(exact::round_exact_sum(s, slot.bottom, plan.world, mean,
                                                    slot.special != 0,
                                                    slot.special ? special[i] : 0));
    }
  }
}

}  // namespace rv

#include "core/exact/host_exact_law.h"

#include <algorithm>
#include <cstring>

#include "core/exact/exact_law.h"
#include "core/fold_law.h"

namespace rv {
namespace detail {

void exact_agreement_words_by_law(const float* values, std::size_t n, std::int64_t* words) {
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

void encode_special_words_by_law(const float* x, std::size_t count, const ExactBlockSlot& slot,
                                 std::int64_t* out) {
  std::int64_t* special = out + count * static_cast<std::size_t>(slot.limbs);
  for (std::size_t i = 0; i < count; ++i) special[i] = exact::special_word_of(float_bits(x[i]));
}

void encode_block_by_law(const float* x, std::size_t count, const ExactBlockSlot& slot,
                         int limb_bits, std::int64_t* out) {
  if (slot.limbs == 1) {  // one digit per element, no zeroing pass
    for (std::size_t i = 0; i < count; ++i) {
      out[i] = exact::digits_of(float_bits(x[i]), slot.bottom, limb_bits).low;
    }
  } else if (slot.limbs > 1) {
    std::memset(out, 0, count * slot.limbs * sizeof *out);
    for (std::size_t i = 0; i < count; ++i) {
      const exact::Digits d = exact::digits_of(float_bits(x[i]), slot.bottom, limb_bits);
      if (d.first_limb < 0) continue;
      out[static_cast<std::size_t>(d.first_limb) * count + i] = d.low;
      if (d.first_limb + 1 < slot.limbs) out[(d.first_limb + 1) * count + i] = d.high;
    }
  }
  if (slot.special) encode_special_words_by_law(x, count, slot, out);
}

void exact_encode_by_law(const float* values, const ExactPlan& plan, std::int64_t* words) {
  for (std::size_t b = 0; b < plan.blocks.size(); ++b) {
    const ExactBlockSlot& slot = plan.blocks[b];
    encode_block_by_law(values + b * exact::kBlock, plan.block_count(b), slot, plan.limb_bits,
                        words + slot.offset);
  }
}

namespace {

// The results as F's bits, written to y as their binary32 widening (the identity for f32).
template <class F>
void round_block_in(const std::int64_t* in, std::size_t count, const ExactBlockSlot& slot,
                    int limb_bits, std::uint32_t world, bool mean, float* y) {
  const auto widened = [](std::uint32_t bits) { return widen_format<F>(bits); };
  if (slot.limbs <= 1 && !slot.special) {
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t d = slot.limbs == 1 ? in[i] : 0;
      y[i] = widened(exact::round_one_limb<F>(d, slot.bottom, world, mean));
    }
    return;
  }
  if (slot.limbs == 2 && !slot.special) {
    for (std::size_t i = 0; i < count; ++i) {
      y[i] = widened(
          exact::round_two_limbs<F>(in[i], in[count + i], limb_bits, slot.bottom, world, mean));
    }
    return;
  }
  const std::int64_t* special = in + count * slot.limbs;
  for (std::size_t i = 0; i < count; ++i) {
    exact::ExactSum s{};
    for (int j = 0; j < slot.limbs; ++j) {
      exact::add_shifted(s, in[static_cast<std::size_t>(j) * count + i], j * limb_bits);
    }
    y[i] = widened(exact::round_exact_sum<F>(s, slot.bottom, world, mean, slot.special != 0,
                                                  slot.special ? special[i] : 0));
  }
}

}  // namespace

void round_block_by_law(const std::int64_t* in, std::size_t count, const ExactBlockSlot& slot,
                        int limb_bits, std::uint32_t world, bool mean, float* y, DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return round_block_in<Binary32Format>(in, count, slot, limb_bits, world, mean, y);
    case DType::kBF16:
      return round_block_in<BFloat16Format>(in, count, slot, limb_bits, world, mean, y);
    case DType::kF16:
      return round_block_in<Float16Format>(in, count, slot, limb_bits, world, mean, y);
  }
}

void exact_round_by_law(const std::int64_t* sums, const ExactPlan& plan, Op op, float* out,
                        DType dtype) {
  const bool mean = op == Op::kMean;
  for (std::size_t b = 0; b < plan.blocks.size(); ++b) {
    const ExactBlockSlot& slot = plan.blocks[b];
    round_block_by_law(sums + slot.offset, plan.block_count(b), slot, plan.limb_bits, plan.world,
                       mean, out + b * exact::kBlock, dtype);
  }
}

}  // namespace detail
}  // namespace rv

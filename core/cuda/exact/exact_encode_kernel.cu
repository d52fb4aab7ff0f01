// The encode kernels: each element's digits under the agreed plan (exact::digits_of) and the
// special words, in two kernels (exact_kernel_detail.h): one-limb blocks, instantiated per
// limb width, and the rest.
#include <array>
#include <cstdint>
#include <utility>

#include "core/cuda/cuda_check.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/cuda/exact/exact_kernel_detail.h"
#include "core/exact/exact_law.h"

namespace rv {
namespace {

using exact_kernel_detail::as_stream;
using exact_kernel_detail::check_plan;
using exact_kernel_detail::check_pointer;
using exact_kernel_detail::grid_for;
using exact_kernel_detail::kPairs;
using exact_kernel_detail::kThreads;
using exact_kernel_detail::load_pair;
using exact_kernel_detail::one_limb_slot;
using exact_kernel_detail::store_pair;

// Blocks of exactly one limb and no specials (the common case): one digit per element.
// kLimbBits > 0: the plan's limb width as a compile-time constant (exact::digits_of is
// inlined, so its division of the bit offset by the width becomes a multiply and a shift
// instead of a 32-bit division routine); 0: read from the plan at run time. Blocks without
// words (no limbs, no specials) are skipped; the rest are left to the general kernel.
template <int kLimbBits>
__global__ void __launch_bounds__(kThreads)
    encode_one_limb_kernel(const float* values, ExactPlanView plan, std::int64_t* words) {
  const int limb_bits = kLimbBits > 0 ? kLimbBits : plan.limb_bits;
  for (std::size_t b = blockIdx.x; b < plan.block_count; b += gridDim.x) {
    const ExactBlockSlot slot = plan.blocks[b];
    if (slot.limbs != 1 || slot.special != 0) continue;
    const std::size_t count =
        min(static_cast<std::size_t>(exact::kBlock), plan.count - b * exact::kBlock);
    const float* x = values + b * exact::kBlock;
    std::int64_t* out = words + slot.offset;
    // Every pair's load is issued before the first digit is computed: more bytes in flight.
    std::uint32_t bits[kPairs][2];
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
      const std::size_t e = 2 * threadIdx.x + k * (2 * kThreads);
      if (e < count) load_pair(x + e, count - e, bits[k]);
    }
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
      const std::size_t e = 2 * threadIdx.x + k * (2 * kThreads);
      if (e < count) {
        store_pair(out + e, count - e, exact::digits_of(bits[k][0], slot.bottom, limb_bits).low,
                   exact::digits_of(bits[k][1], slot.bottom, limb_bits).low);
      }
    }
  }
}

// Blocks of several limbs or with special words: every limb's word is written (a zero where
// the element has no digit), so no zero-filling pass is needed, then the special words.
__global__ void __launch_bounds__(kThreads)
    encode_general_kernel(const float* values, ExactPlanView plan, std::int64_t* words) {
  for (std::size_t b = blockIdx.x; b < plan.block_count; b += gridDim.x) {
    const ExactBlockSlot slot = plan.blocks[b];
    if (one_limb_slot(slot)) continue;
    const std::size_t count =
        min(static_cast<std::size_t>(exact::kBlock), plan.count - b * exact::kBlock);
    const float* x = values + b * exact::kBlock;
    std::int64_t* out = words + slot.offset;
    for (int k = 0; k < kPairs; ++k) {
      const std::size_t e = 2 * threadIdx.x + k * (2 * kThreads);
      if (e >= count) break;
      const std::size_t left = count - e;
      std::uint32_t bits[2];
      load_pair(x + e, left, bits);
      const exact::Digits d0 = exact::digits_of(bits[0], slot.bottom, plan.limb_bits);
      const exact::Digits d1 = exact::digits_of(bits[1], slot.bottom, plan.limb_bits);
      for (int j = 0; j < slot.limbs; ++j) {
        const auto digit = [j](const exact::Digits& d) -> std::int64_t {
          if (d.first_limb < 0) return 0;
          return j == d.first_limb ? d.low : j == d.first_limb + 1 ? d.high : 0;
        };
        store_pair(out + static_cast<std::size_t>(j) * count + e, left, digit(d0), digit(d1));
      }
      if (slot.special != 0) {
        store_pair(out + static_cast<std::size_t>(slot.limbs) * count + e, left,
                   exact::special_word_of(bits[0]), exact::special_word_of(bits[1]));
      }
    }
  }
}

// Every limb width a world of 1 … 2^20 ranks gets: 62 (W ≤ 2) down to 43 (W > 2^19).
constexpr int kWidestLimb = 62;
constexpr int kNarrowestLimb = 43;
using EncodeKernel = void (*)(const float*, ExactPlanView, std::int64_t*);
template <int... kOffsets>
constexpr std::array<EncodeKernel, sizeof...(kOffsets)> constant_width_encoders(
    std::integer_sequence<int, kOffsets...>) {
  return {&encode_one_limb_kernel<kNarrowestLimb + kOffsets>...};
}
constexpr auto kConstantWidthEncoders =
    constant_width_encoders(std::make_integer_sequence<int, kWidestLimb - kNarrowestLimb + 1>{});

}  // namespace

void launch_exact_encode(const float* d_values, const ExactPlanView& plan, std::int64_t* d_words,
                         void* cuda_stream) {
  detail::launch_exact_encode_with(d_values, plan, d_words, cuda_stream,
                                   detail::default_limb_width());
}

namespace detail {

LimbWidth default_limb_width() { return LimbWidth::kCompileTime; }

const char* to_string(LimbWidth width) {
  switch (width) {
    case LimbWidth::kRunTime:
      return "run-time-width";
    case LimbWidth::kCompileTime:
      return "compile-time-width";
  }
  return "unknown";
}

void launch_exact_encode_with(const float* d_values, const ExactPlanView& plan,
                              std::int64_t* d_words, void* cuda_stream, LimbWidth width) {
  check_plan(plan, "launch_exact_encode");
  if (plan.count == 0) return;
  check_pointer(d_values, "launch_exact_encode", "the values");
  check_pointer(d_words, "launch_exact_encode", "the words");
  static_assert(exact::kMaxWorld == (1u << 20), "the constant widths cover W <= 2^20");
  EncodeKernel kernel = &encode_one_limb_kernel<0>;
  if (width == LimbWidth::kCompileTime) {
    kernel = kConstantWidthEncoders[static_cast<std::size_t>(plan.limb_bits - kNarrowestLimb)];
  }
  const auto stream = as_stream(cuda_stream);
  kernel<<<grid_for(kernel, plan.block_count), kThreads, 0, stream>>>(d_values, plan, d_words);
  RV_CUDA_CHECK_LAUNCH("encode_one_limb_kernel");
  if (plan.general_blocks) {
    encode_general_kernel<<<grid_for(encode_general_kernel, plan.block_count), kThreads, 0,
                            stream>>>(d_values, plan, d_words);
    RV_CUDA_CHECK_LAUNCH("encode_general_kernel");
  }
}

}  // namespace detail
}  // namespace rv

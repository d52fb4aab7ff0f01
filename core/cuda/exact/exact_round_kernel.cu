// The round kernels: each element's result from the summed words (exact::round_one_limb,
// exact::round_exact_sum), in two kernels (exact_kernel_detail.h): one-limb blocks,
// instantiated per op and mean division, and the rest.
#include <cstdint>
#include <string>

#include "core/cuda/cuda_check.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/cuda/exact/exact_kernel_detail.h"
#include "core/error.h"
#include "core/exact/exact_law.h"

namespace rv {
namespace {

using detail::MeanDivision;
using detail::Reciprocal;
using exact_kernel_detail::address;
using exact_kernel_detail::as_stream;
using exact_kernel_detail::check_plan;
using exact_kernel_detail::check_pointer;
using exact_kernel_detail::grid_for;
using exact_kernel_detail::kPairs;
using exact_kernel_detail::kThreads;
using exact_kernel_detail::load_pair;
using exact_kernel_detail::log2_if_power_of_two;
using exact_kernel_detail::one_limb_slot;
using exact_kernel_detail::round_one_limb_mean_divided;
using exact_kernel_detail::round_one_limb_mean_screened;
using exact_kernel_detail::round_one_limb_sum;
using exact_kernel_detail::store_pair;

// exact::round_one_limb for a mean, with one multiply-high instead of a division: as in
// exact::round_mean, but from the top 53 bits T of |D| (the reciprocal's dividend range):
// q = floor(T / W) ≥ 2^52 / 2^20 keeps at least 33 bits, more than the 24 kept plus the round
// bit, and "T mod W ≠ 0 or a bit of |D| below T is set" is an exact sticky bit; so rounding
// (q, sticky) rounds the true quotient |D| / W: the law's bits.
__device__ __forceinline__ std::uint32_t round_one_limb_mean(std::int64_t d, int bottom,
                                                             const Reciprocal& w) {
  if (d == 0) return 0u;
  const std::uint32_t sign = d < 0 ? 0x80000000u : 0u;
  const std::uint64_t magnitude =
      d < 0 ? 0 - static_cast<std::uint64_t>(d) : static_cast<std::uint64_t>(d);
  const int t = (64 - __clzll(static_cast<long long>(magnitude))) - 53;
  std::uint64_t top;
  bool below = false;
  if (t <= 0) {
    top = magnitude << (-t);
  } else {
    top = magnitude >> t;
    below = (magnitude & ((std::uint64_t{1} << t) - 1)) != 0;
  }
  const std::uint64_t q = __umul64hi(top, w.magic) >> w.shift;
  const bool sticky = below || top - q * w.divisor != 0;
  return sign | exact::round_magnitude(exact::BigMagnitude<1>{{q}}, bottom + t, sticky);
}

struct RoundArgs {
  const std::int64_t* sums;
  ExactPlanView plan;
  float* out;
  Reciprocal reciprocal;     // of plan.world, for the mean with kReciprocal
  int log2_world;            // for the mean with kPowerOfTwo
  double reciprocal_double;  // 1 / plan.world rounded to double, for the screened quotient
};

template <bool kMean, MeanDivision kDivision>
__device__ __forceinline__ std::uint32_t round_digit(std::int64_t d, int bottom,
                                                     const RoundArgs& a) {
  if constexpr (kMean && kDivision == MeanDivision::kReciprocal) {
    return round_one_limb_mean(d, bottom, a.reciprocal);
  } else if constexpr (kMean && kDivision == MeanDivision::kScreenedDouble) {
    return round_one_limb_mean_screened(d, bottom, a.plan.world, a.reciprocal_double);
  } else if constexpr (kMean && kDivision == MeanDivision::kDividedDouble) {
    return round_one_limb_mean_divided(d, bottom, a.plan.world, a.reciprocal_double);
  } else if constexpr (kMean && kDivision == MeanDivision::kPowerOfTwo) {
    // |D| / 2^k × 2^(bottom − 149) = |D| × 2^(bottom − k − 149), exactly: the sum's rounding.
    return round_one_limb_sum(d, bottom - a.log2_world);
  } else if constexpr (!kMean) {
    return round_one_limb_sum(d, bottom);
  } else {
    return exact::round_one_limb(d, bottom, a.plan.world, kMean);
  }
}

// The blocks of at most one limb and no specials; the others are left to the general kernel.
template <bool kMean, MeanDivision kDivision>
__global__ void __launch_bounds__(kThreads) round_one_limb_kernel(RoundArgs a) {
  for (std::size_t b = blockIdx.x; b < a.plan.block_count; b += gridDim.x) {
    const ExactBlockSlot slot = a.plan.blocks[b];
    if (!one_limb_slot(slot)) continue;
    const std::size_t count =
        min(static_cast<std::size_t>(exact::kBlock), a.plan.count - b * exact::kBlock);
    const std::int64_t* in = a.sums + slot.offset;
    float* y = a.out + b * exact::kBlock;
    // Every pair's load is issued before the first rounding: more bytes in flight.
    std::int64_t d[kPairs][2] = {};  // a block without limbs sums to zero
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
      const std::size_t e = 2 * threadIdx.x + k * (2 * kThreads);
      if (slot.limbs == 1 && e < count) load_pair(in + e, count - e, d[k]);
    }
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
      const std::size_t e = 2 * threadIdx.x + k * (2 * kThreads);
      if (e < count) {
        store_pair(y + e, count - e, round_digit<kMean, kDivision>(d[k][0], slot.bottom, a),
                   round_digit<kMean, kDivision>(d[k][1], slot.bottom, a));
      }
    }
  }
}

__device__ std::uint32_t round_general_element(const std::int64_t* in, std::size_t count,
                                               std::size_t i, const ExactBlockSlot& slot,
                                               const ExactPlanView& plan, bool mean) {
  exact::ExactSum s{};
  for (int j = 0; j < slot.limbs; ++j) {
    exact::add_shifted(s, in[static_cast<std::size_t>(j) * count + i], j * plan.limb_bits);
  }
  const std::int64_t special =
      slot.special != 0 ? in[static_cast<std::size_t>(slot.limbs) * count + i] : 0;
  return exact::round_exact_sum(s, slot.bottom, plan.world, mean, slot.special != 0, special);
}

// Blocks of several limbs or with special words.
__global__ void __launch_bounds__(kThreads) round_general_kernel(RoundArgs a, bool mean) {
  for (std::size_t b = blockIdx.x; b < a.plan.block_count; b += gridDim.x) {
    const ExactBlockSlot slot = a.plan.blocks[b];
    if (one_limb_slot(slot)) continue;
    const std::size_t count =
        min(static_cast<std::size_t>(exact::kBlock), a.plan.count - b * exact::kBlock);
    const std::int64_t* in = a.sums + slot.offset;
    float* y = a.out + b * exact::kBlock;
    for (int k = 0; k < kPairs; ++k) {
      const std::size_t e = 2 * threadIdx.x + k * (2 * kThreads);
      if (e >= count) break;
      const std::size_t left = count - e;
      const std::uint32_t r0 = round_general_element(in, count, e, slot, a.plan, mean);
      const std::uint32_t r1 =
          left >= 2 ? round_general_element(in, count, e + 1, slot, a.plan, mean) : 0u;
      store_pair(y + e, left, r0, r1);
    }
  }
}

}  // namespace

void launch_exact_round(const std::int64_t* d_sums, const ExactPlanView& plan, Op op, float* d_out,
                        void* cuda_stream) {
  detail::launch_exact_round_with(d_sums, plan, op, d_out, cuda_stream,
                                  detail::default_mean_division(plan.world));
}

namespace detail {

MeanDivision default_mean_division(std::uint32_t world) {
  return log2_if_power_of_two(world) >= 0 ? MeanDivision::kPowerOfTwo
                                          : MeanDivision::kDividedDouble;
}

bool applies_to(MeanDivision division, std::uint32_t world) {
  return division != MeanDivision::kPowerOfTwo || log2_if_power_of_two(world) >= 0;
}

const char* to_string(MeanDivision division) {
  switch (division) {
    case MeanDivision::kLongDivision:
      return "long-division";
    case MeanDivision::kReciprocal:
      return "reciprocal";
    case MeanDivision::kPowerOfTwo:
      return "power-of-two";
    case MeanDivision::kScreenedDouble:
      return "screened-double";
    case MeanDivision::kDividedDouble:
      return "divided-double";
  }
  return "unknown";
}

void launch_exact_round_with(const std::int64_t* d_sums, const ExactPlanView& plan, Op op,
                             float* d_out, void* cuda_stream, MeanDivision division) {
  check_plan(plan, "launch_exact_round");
  if (!applies_to(division, plan.world)) {
    throw InputError("launch_exact_round: the " + std::string(to_string(division)) +
                     " mean does not apply to W = " + std::to_string(plan.world));
  }
  if (plan.count == 0) return;
  check_pointer(d_sums, "launch_exact_round", "the sums");
  check_pointer(d_out, "launch_exact_round", "the output");
  if (address(d_out) < address(d_sums + plan.words) &&
      address(d_sums) < address(d_out + plan.count)) {
    throw InputError("launch_exact_round: the output overlaps the summed words");
  }
  const bool mean = op == Op::kMean;
  RoundArgs args{d_sums,
                 plan,
                 d_out,
                 Reciprocal{},
                 log2_if_power_of_two(plan.world),
                 1.0 / static_cast<double>(plan.world)};
  // W = 1 has no reciprocal below 2^64; its mean is the long division's (one step per digit).
  if (mean && plan.world == 1 && division == MeanDivision::kReciprocal) {
    division = MeanDivision::kLongDivision;
  }
  if (mean && division == MeanDivision::kReciprocal) args.reciprocal = reciprocal_of(plan.world);
  const auto stream = as_stream(cuda_stream);
  const auto launch_one_limb = [&](auto kernel) {
    kernel<<<grid_for(kernel, plan.block_count), kThreads, 0, stream>>>(args);
    RV_CUDA_CHECK_LAUNCH("round_one_limb_kernel");
  };
  if (!mean) {
    launch_one_limb(round_one_limb_kernel<false, MeanDivision::kLongDivision>);
  } else if (division == MeanDivision::kReciprocal) {
    launch_one_limb(round_one_limb_kernel<true, MeanDivision::kReciprocal>);
  } else if (division == MeanDivision::kPowerOfTwo) {
    launch_one_limb(round_one_limb_kernel<true, MeanDivision::kPowerOfTwo>);
  } else if (division == MeanDivision::kScreenedDouble) {
    launch_one_limb(round_one_limb_kernel<true, MeanDivision::kScreenedDouble>);
  } else if (division == MeanDivision::kDividedDouble) {
    launch_one_limb(round_one_limb_kernel<true, MeanDivision::kDividedDouble>);
  } else {
    launch_one_limb(round_one_limb_kernel<true, MeanDivision::kLongDivision>);
  }
  if (plan.general_blocks) {
    round_general_kernel<<<grid_for(round_general_kernel, plan.block_count), kThreads, 0, stream>>>(
        args, mean);
    RV_CUDA_CHECK_LAUNCH("round_general_kernel");
  }
}

}  // namespace detail
}  // namespace rv

// The round kernels' one-limb path against core/exact/host_exact.h on the most extreme sums
// a world can produce, with every mean division; and, on the host (no GPU needed), the
// premises of the fast means: the power-of-two mean is the sum rounded lower, and the
// reciprocal divides exactly over every divisor's edge dividends.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/contract.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_plan.h"
#include "core/exact/host_exact.h"
#include "tests/gpu/exact_kernel_test_support.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using detail::MeanDivision;
using test::gpu_round;
using test::Output;
using test::same_bits;

// One-limb blocks with sums across the whole range a world can produce (|D| < W × 2^L) and
// windows from the bottom of the subnormals to beyond the overflow, for worlds up to 2^20:
// the mean's reciprocal, screened-double, divided-double (both sides of its |D| < 2^51) and
// power-of-two paths against the host's long division on every kind of quotient, float
// midpoints and their neighbours included.
TEST(ExactKernel, RoundsExtremeOneLimbSumsLikeHost) {
  RV_SKIP_WITHOUT_GPU();
  std::mt19937_64 random(20);
  for (std::uint32_t world : {2u, 3u, 7u, 1000u, 65535u, (1u << 20) - 1, 1u << 20}) {
    const int limb_bits = exact::limb_bits(world);
    // |D| ≤ W × (2^L − 1) < 2^63.
    const std::uint64_t largest =
        static_cast<std::uint64_t>(world) * ((std::uint64_t{1} << limb_bits) - 1);
    ExactPlan plan;
    plan.world = world;
    plan.limb_bits = limb_bits;
    plan.count = 64 * exact::kBlock;
    plan.words = plan.count;
    for (std::size_t b = 0; b < 64; ++b) {
      const auto bottom = static_cast<std::int32_t>(b * 4 + (b % 3));  // 0 … 254
      plan.blocks.push_back(
          ExactBlockSlot{static_cast<std::int64_t>(b * exact::kBlock), bottom, 1, 0});
    }
    std::vector<std::int64_t> sums(plan.words);
    for (std::size_t i = 0; i < sums.size(); ++i) {
      std::uint64_t magnitude;
      switch (i % 8) {
        case 0:
          magnitude = largest - (random() % 4);
          break;
        case 1:
          magnitude = random() % 1024;
          break;
        case 2:
          magnitude = (random() % world) * (std::uint64_t{1} << (random() % 40));
          break;
        case 3:
          magnitude = std::uint64_t{1} << (random() % 62);
          break;
        case 4: {
          // W × m ± 2, m a float midpoint (25 significant bits ending in 1) as large as the
          // world allows: quotients on and next to a rounding boundary, where a mean that
          // rounds an approximation of |D| / W (the screened double) must defer to the law.
          const int spare = limb_bits - 25;
          const std::uint64_t midpoint = ((std::uint64_t{1} << 23) | (random() % (1u << 23)))
                                             << 1 | 1u;
          const std::uint64_t m = midpoint << (spare > 0 ? random() % (spare + 1) : 0);
          magnitude = world * m + (random() % 5) - 2;
          break;
        }
        default:
          magnitude = random() % (largest + 1);
          break;
      }
      if (magnitude > largest) magnitude = largest;
      const auto value = static_cast<std::int64_t>(magnitude);
      sums[i] = (random() & 1) ? -value : value;
    }
    for (Op op : {Op::kSum, Op::kMean}) {
      std::vector<float> expected(plan.count);
      exact_round(sums.data(), plan, op, expected.data());
      for (MeanDivision division : detail::kAllMeanDivisions) {
        if (!detail::applies_to(division, world)) continue;
        const Output<float> gpu = gpu_round(sums, plan, op, 0, division);
        EXPECT_TRUE(same_bits(expected, gpu.values))
            << "W=" << world << " " << to_string(op) << " " << detail::to_string(division);
      }
    }
  }
}

// floor(x × m / 2^k) against x / W on the host, for every divisor up to 4096, the largest
// ones and a random sample between, over the dividends the mean produces (below W × 2^32)
// and up to 2^53: the edges around multiples of W and random ones.
std::uint64_t mulhi64(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t a_lo = a & 0xFFFFFFFFu, a_hi = a >> 32, b_lo = b & 0xFFFFFFFFu,
                      b_hi = b >> 32;
  const std::uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi,
                      hi_hi = a_hi * b_hi;
  const std::uint64_t middle = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFFu) + lo_hi;
  return hi_hi + (hi_lo >> 32) + (middle >> 32);
}

// The power-of-two mean's premise, on the host with the law's own functions: for W = 2^k
// the long-division mean of any one-limb sum is the sum's rounding k positions lower, over
// sums of every size a world can produce and windows from the subnormals to the overflow.
TEST(ExactKernel, PowerOfTwoMeanIsTheSumRoundedLower) {
  std::mt19937_64 random(8);
  for (int k = 0; k <= 20; ++k) {
    const std::uint32_t world = std::uint32_t{1} << k;
    EXPECT_TRUE(detail::applies_to(MeanDivision::kPowerOfTwo, world));
    EXPECT_EQ(detail::default_mean_division(world), MeanDivision::kPowerOfTwo);
    const std::uint64_t largest =
        static_cast<std::uint64_t>(world) * ((std::uint64_t{1} << exact::limb_bits(world)) - 1);
    for (int i = 0; i < 20000; ++i) {
      std::uint64_t magnitude = i % 4 == 0   ? random() % 4096
                                : i % 4 == 1 ? largest - random() % 16
                                             : (random() % (largest + 1)) >> (random() % 60);
      const auto d = static_cast<std::int64_t>(magnitude) * ((random() & 1) ? -1 : 1);
      const int bottom = static_cast<int>(random() % (exact::kTopPosition + 1));
      ASSERT_EQ(exact::round_one_limb(d, bottom, world, true),
                exact::round_one_limb(d, bottom - k, world, false))
          << "W=2^" << k << " D=" << d << " bottom=" << bottom;
    }
  }
  for (std::uint32_t world : {3u, 5u, 6u, 1000u, (1u << 20) - 1}) {
    EXPECT_FALSE(detail::applies_to(MeanDivision::kPowerOfTwo, world));
    EXPECT_EQ(detail::default_mean_division(world), MeanDivision::kDividedDouble);
  }
}

TEST(ExactKernel, ReciprocalDividesExactly) {
  std::mt19937_64 random(11);
  std::vector<std::uint32_t> divisors;
  for (std::uint32_t w = 2; w <= 4096; ++w) divisors.push_back(w);
  for (std::uint32_t w : {(1u << 20) - 1, 1u << 20, (1u << 19) + 1, 1u << 19, 2047u * 511u}) {
    divisors.push_back(w);
  }
  for (int i = 0; i < 2000; ++i) {
    divisors.push_back(static_cast<std::uint32_t>(2 + random() % ((1u << 20) - 1)));
  }
  for (std::uint32_t w : divisors) {
    const detail::Reciprocal r = detail::reciprocal_of(w);
    ASSERT_EQ(r.divisor, w);
    const std::uint64_t limit = std::uint64_t{1} << 53;
    std::vector<std::uint64_t> dividends = {
        0, 1, w - 1u, w, w + 1u, limit - 1, limit - w, static_cast<std::uint64_t>(w) << 32};
    for (std::uint64_t top : {static_cast<std::uint64_t>(w) << 32, limit}) {
      const std::uint64_t q = (top - 1) / w;
      for (std::uint64_t k : {q, q - 1, q / 2, q / 3}) {
        dividends.push_back(k * w);
        dividends.push_back(k * w - 1);
        dividends.push_back(k * w + w - 1);
      }
    }
    for (int i = 0; i < 40; ++i) dividends.push_back(random() % limit);
    for (std::uint64_t x : dividends) {
      if (x >= limit) continue;
      const std::uint64_t q = mulhi64(x, r.magic) >> r.shift;
      ASSERT_EQ(q, x / w) << "x=" << x << " W=" << w << " magic=" << r.magic
                          << " shift=" << r.shift;
    }
  }
  EXPECT_THROW(detail::reciprocal_of(1), InputError);
  EXPECT_THROW(detail::reciprocal_of((1u << 20) + 1), InputError);
}

}  // namespace
}  // namespace rv

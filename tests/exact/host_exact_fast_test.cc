// host_exact.h's fast paths, compiled for each instruction set this CPU has (the baseline and
// AVX2), against the element laws applied one element at a time (host_exact_law.h), bit for
// bit: every distribution and world, hand-made windows on both
// sides of the fast paths' 51-bit limit, adversarial sums (subnormal results, ties, the
// overflow threshold 2^128 − 2^103, |D| near 2^63 at W = 2^20, mean ties for odd W), both
// ops, and a process whose floating-point state is not IEEE's default (the fast paths must
// notice it and give the law's bits anyway).
// This file: agreement and encode over every distribution and world, and the 51-bit limit.
#include "tests/exact/host_exact_fast_support.h"

#include <gtest/gtest.h>

namespace rv::test {
namespace {

TEST(HostExactFast, EveryDistributionAndWorld) {
  ASSERT_TRUE(detail::host_fp_state_is_ieee()) << "the tests need the IEEE default state";
  // The public functions use one of the instruction sets tested here.
  const Arenas arenas = make_arenas(3, 5000, Distribution::kNormal, 1);
  const ExactPlan plan = agreed_plan(arenas, 3);
  std::vector<std::int64_t> fast(plan.words), law(plan.words);
  exact_encode(arenas[0].data(), plan, fast.data());
  detail::exact_encode_by_law(arenas[0].data(), plan, law.data());
  EXPECT_EQ(first_difference(fast, law), "");

  for (Distribution dist : {Distribution::kNormal, Distribution::kWide, Distribution::kCancel,
                            Distribution::kExact, Distribution::kSpecial}) {
    for (std::uint32_t w : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 64u}) {
      // Two blocks and a short third.
      expect_fast_equals_law(make_arenas(w, 2 * exact::kBlock + 77, dist, 11 + w), w,
                             std::string(to_string(dist)));
    }
  }
}

// Values s × 2^e, s a random 24-bit integer with random trailing zeros, e in [low, low + span]:
// windows of about span + 24 bits, so both sides of the fast encode's 51-bit limit and of the
// one-limb width L are reached.
std::vector<float> spanning_values(std::mt19937_64& rng, std::size_t n, int low, int span,
                                   bool with_negatives) {
  std::vector<float> x(n);
  for (auto& v : x) {
    const auto s = static_cast<std::int64_t>((rng() & 0xFFFFFFu) >> (rng() % 24));
    const int e = low + static_cast<int>(rng() % static_cast<std::uint64_t>(span + 1));
    v = std::ldexp(static_cast<float>(s), e);
    if (with_negatives && (rng() & 1u) != 0) v = -v;
  }
  return x;
}

TEST(HostExactFast, WindowsAroundTheFiftyOneBitLimit) {
  std::mt19937_64 rng(5);
  for (std::uint32_t w : {1u, 2u, 3u, 6u, 1000u}) {
    for (int span : {0, 10, 20, 26, 27, 28, 29, 30, 36, 38, 40}) {
      for (int low : {-149, -140, -126, -60, 0, 40, 80}) {
        Arenas arenas;
        for (std::uint32_t r = 0; r < std::min(w, 4u); ++r) {
          arenas.push_back(
              spanning_values(rng, 3 * exact::kBlock + 5, low, std::min(span, 104 - low), r != 1));
        }
        expect_fast_equals_law(arenas, w,
                               "span " + std::to_string(span) + " low " + std::to_string(low));
      }
    }
  }
}

// Agreement words of single values (every exponent, every trailing-zero count, both signs,
// the specials) and of blocks of arbitrary bit patterns.
TEST(HostExactFast, AgreementOfAnyBitPattern) {
  std::vector<float> singles;
  for (std::uint32_t exponent = 0; exponent < 256; ++exponent) {
    for (int zeros = 0; zeros < 23; ++zeros) {
      for (std::uint32_t fraction : {std::uint32_t{1} << zeros, (0x7FFFFFu >> zeros) << zeros,
                                     (0x5A5A5Bu >> zeros) << zeros, 0u}) {
        for (std::uint32_t sign : {0u, 0x80000000u}) {
          singles.push_back(float_from_bits(sign | exponent << 23 | (fraction & 0x7FFFFFu)));
        }
      }
    }
  }
  for (float v : singles) {
    ASSERT_EQ(agreement_difference({v}), "") << "bits 0x" << std::hex << float_bits(v);
  }
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 400; ++trial) {
    // Blocks of one kind of pattern each: any bits, finite only, subnormals only, or a few
    // nonzero values among zeros.
    std::vector<float> x(exact::kBlock * 2 + 3);
    const int kind = trial % 4;
    for (auto& v : x) {
      auto bits = static_cast<std::uint32_t>(rng());
      if (kind == 1 && (bits & 0x7F800000u) == 0x7F800000u) bits &= 0xBFFFFFFFu;
      if (kind == 2) bits &= 0x807FFFFFu;
      if (kind == 3 && rng() % 64 != 0) bits &= 0x80000000u;
      v = float_from_bits(bits);
    }
    ASSERT_EQ(agreement_difference(x), "") << "trial " << trial;
  }
  // Every 251st bit pattern, in blocks.
  std::vector<float> sweep;
  for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << 32); bits += 251) {
    sweep.push_back(float_from_bits(static_cast<std::uint32_t>(bits)));
  }
  ASSERT_EQ(agreement_difference(sweep), "");
}

}  // namespace
}  // namespace rv::test

// exact_reduce_stacked_in_double (core/exact/stacked_in_double.h), the C ABI's host path,
// against the windowed dataflow exact_reduce_stacked and the straight reference, bit for bit,
// with each instruction set: every distribution, worlds from 1 to 1000, lengths around the
// chunk, padded strides, in place into slot 0; sums beside float midpoints whose windows grow
// past a double's width; and floating-point states where a double sum would round otherwise.
#include "core/exact/stacked_in_double.h"
#include "core/oracle/reference.h"

#include <gtest/gtest.h>

#include <cfenv>
#include <cstdint>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/exact/exact_reduction.h"
#include "tests/exact/host_exact_fast_support.h"
#include "tests/support/midpoint_sums.h"

namespace rv::test {
namespace {

// W slots `stride` apart (the gaps hold a NaN, which no slot may read).
std::vector<float> stack(const Arenas& slots, std::size_t stride) {
  std::vector<float> table(slots.size() * stride, float_from_bits(0x7FC00001u));
  for (std::size_t r = 0; r < slots.size(); ++r) {
    std::copy(slots[r].begin(), slots[r].end(),
              table.begin() + static_cast<std::ptrdiff_t>(r * stride));
  }
  return table;
}

// "" when every instruction set gives exact_reduce_stacked's bits, into a separate output and
// in place, and (for small tables) the straight reference's.
std::string difference_from_dataflow(const Arenas& slots, std::size_t stride, Op op) {
  const auto world = static_cast<std::uint32_t>(slots.size());
  const std::size_t n = slots[0].size();
  const std::vector<float> table = stack(slots, stride);
  std::vector<float> expected(n);
  exact_reduce_stacked(table.data(), world, stride, n, op, expected.data());
  if (world * n <= 1u << 16) {
    const std::string reference = first_difference(reference_exact(slots, op), expected);
    if (!reference.empty()) return "the dataflow differs from the reference: " + reference;
  }
  for (HostIsa isa : isas()) {
    std::vector<float> out(n);
    detail::exact_reduce_stacked_in_double(table.data(), world, stride, n, op, out.data(), isa);
    std::string difference = first_difference(out, expected);
    if (!difference.empty()) return std::string(name_of(isa)) + ": " + difference;
    std::vector<float> in_place = table;
    detail::exact_reduce_stacked_in_double(in_place.data(), world, stride, n, op, in_place.data(),
                                           isa);
    in_place.resize(n);
    difference = first_difference(in_place, expected);
    if (!difference.empty()) return std::string(name_of(isa)) + ", in place: " + difference;
  }
  return "";
}

TEST(ExactStackedInDouble, EqualsTheDataflowOnEveryDistributionWorldAndLength) {
  for (Distribution dist : kAllDistributions) {
    for (std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{1023}, std::size_t{1025},
                          std::size_t{2 * 1024 + 77}}) {
      for (std::uint32_t world : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 64u, 1000u}) {
        if (world * n > (1u << 18)) continue;
        Arenas slots;
        for (std::uint32_t r = 0; r < world; ++r) {
          slots.push_back(generate_arena(ArenaSpec{kLatestGenerator, dist, 17 + n}, r, n));
        }
        for (std::size_t pad : {std::size_t{0}, std::size_t{3}}) {
          for (Op op : {Op::kSum, Op::kMean}) {
            EXPECT_EQ(difference_from_dataflow(slots, n + pad, op), "")
                << to_string(dist) << " W=" << world << " n=" << n << " stride=" << n + pad << " "
                << to_string(op);
          }
        }
      }
    }
  }
}

TEST(ExactStackedInDouble, EqualsTheDataflowBesideFloatMidpoints) {
  for (std::uint32_t world : {3u, 4u, 5u, 6u, 8u, 64u}) {
    const Arenas slots = slots_beside_float_midpoints(world);
    for (Op op : {Op::kSum, Op::kMean}) {
      EXPECT_EQ(difference_from_dataflow(slots, slots[0].size(), op), "")
          << "W=" << world << " " << to_string(op);
    }
  }
}

// The test has teeth: summed in double and rounded once, unconditionally, those sums differ.
TEST(ExactStackedInDouble, MidpointSumsDefeatAnUnconditionalDoubleSum) {
  const Arenas slots = slots_beside_float_midpoints(3);
  const std::size_t n = slots[0].size();
  std::vector<float> expected(n);
  const std::vector<float> table = stack(slots, n);
  exact_reduce_stacked(table.data(), 3, n, n, Op::kSum, expected.data());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double sum = 0.0;
    for (const auto& slot : slots) sum += static_cast<double>(slot[i]);
    wrong += float_bits(static_cast<float>(sum)) != float_bits(expected[i]) ? 1 : 0;
  }
  EXPECT_GT(wrong, 0u);
}

// In another rounding mode, or with FTZ or DAZ, the double sums and conversions would give
// other bits: the function must notice and give the law's.
TEST(ExactStackedInDouble, OtherFloatingPointStatesGiveTheLawsBits) {
  const Arenas slots = slots_beside_float_midpoints(3);
  const std::size_t n = slots[0].size();
  const std::vector<float> table = stack(slots, n);
  std::vector<std::vector<float>> expected;
  for (Op op : {Op::kSum, Op::kMean}) {
    expected.emplace_back(n);
    exact_reduce_stacked(table.data(), 3, n, n, op, expected.back().data());
  }
  const auto expect_law_bits = [&](const char* state) {
    EXPECT_FALSE(detail::host_fp_state_is_ieee()) << state;
    for (int o = 0; o < 2; ++o) {
      const Op op = o == 0 ? Op::kSum : Op::kMean;
      std::vector<float> out(n);
      exact_reduce_stacked_in_double(table.data(), 3, n, n, op, out.data());
      EXPECT_EQ(first_difference(out, expected[o]), "") << state << " " << to_string(op);
    }
  };
  for (int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
    FpStateGuard guard;
    ASSERT_EQ(std::fesetround(mode), 0);
    expect_law_bits(mode == FE_UPWARD     ? "upward"
                    : mode == FE_DOWNWARD ? "downward"
                                          : "toward zero");
  }
#if defined(__x86_64__) || defined(__i386__)
  for (unsigned bit : {1u << 15, 1u << 6}) {  // MXCSR.FTZ, MXCSR.DAZ
    FpStateGuard guard;
    _mm_setcsr(_mm_getcsr() | bit);
    expect_law_bits(bit == (1u << 15) ? "FTZ" : "DAZ");
  }
#endif
  EXPECT_TRUE(detail::host_fp_state_is_ieee());
}

TEST(ExactStackedInDouble, RejectsBadArguments) {
  float value = 1.0f;
  EXPECT_THROW(exact_reduce_stacked_in_double(&value, 0, 1, 1, Op::kSum, &value), InputError);
  EXPECT_THROW(exact_reduce_stacked_in_double(&value, exact::kMaxWorld + 1, 1, 1, Op::kSum, &value),
               InputError);
  std::vector<float> two(2, 1.0f);
  EXPECT_THROW(exact_reduce_stacked_in_double(two.data(), 2, 1, 2, Op::kSum, two.data()),
               InputError);  // a stride shorter than a slot
  EXPECT_NO_THROW(exact_reduce_stacked_in_double(nullptr, 1, 0, 0, Op::kMean, nullptr));
}

}  // namespace
}  // namespace rv::test

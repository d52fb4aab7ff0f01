// The exact contract against GNU MPFR (an oracle that shares no code with it): every element
// of the windowed dataflow (exact_reduce_stacked), of EmulatedWorld's exact dataflow under
// shuffled delivery orders and of the straight reference is MPFR's correctly rounded sum or
// mean, for every distribution of the arena law and for hand-made edge cases (overflow to
// Inf, subnormal results, ties, exact zeros of either sign, NaN and infinities, W = 2^20).
#include <gtest/gtest.h>

#include <cfloat>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_reduction.h"
#include "core/fold_law.h"
#include "core/oracle/emulated_world.h"
#include "core/oracle/reference.h"
#include "mpfr_oracle.h"
#include "tests/support/bit_difference.h"

namespace rv {
namespace {

using Arenas = std::vector<std::vector<float>>;

Arenas make_arenas(std::uint32_t w, std::size_t n, Distribution dist, std::uint64_t seed) {
  Arenas arenas;
  for (std::uint32_t r = 0; r < w; ++r) arenas.push_back(generate_arena({1, dist, seed}, r, n));
  return arenas;
}

std::vector<float> stacked_reduce(const Arenas& arenas, Op op) {
  const auto w = static_cast<std::uint32_t>(arenas.size());
  const std::size_t n = arenas[0].size();
  std::vector<float> stacked(w * n), out(n);
  for (std::uint32_t r = 0; r < w; ++r)
    std::copy(arenas[r].begin(), arenas[r].end(), stacked.begin() + r * n);
  exact_reduce_stacked(stacked.data(), w, n, n, op, out.data());
  return out;
}

// Every element of `result` equals MPFR's answer for the same addends.
::testing::AssertionResult equals_oracle(const Arenas& arenas, Op op,
                                         const std::vector<float>& result, const char* what) {
  std::vector<float> addends(arenas.size());
  for (std::size_t i = 0; i < result.size(); ++i) {
    for (std::size_t r = 0; r < arenas.size(); ++r) addends[r] = arenas[r][i];
    const std::uint32_t want = mpfr_exact_bits(addends, op);
    if (float_bits(result[i]) != want) {
      return ::testing::AssertionFailure()
             << what << " W=" << arenas.size() << " op=" << to_string(op) << " element " << i
             << ": 0x" << std::hex << float_bits(result[i]) << " but MPFR gives 0x" << want;
    }
  }
  return ::testing::AssertionSuccess();
}

void expect_all_paths_equal_oracle(const Arenas& arenas, Op op) {
  EXPECT_TRUE(equals_oracle(arenas, op, reference_exact(arenas, op), "reference"));
  EXPECT_TRUE(equals_oracle(arenas, op, stacked_reduce(arenas, op), "windowed dataflow"));
  const auto w = static_cast<std::uint32_t>(arenas.size());
  for (std::uint64_t trial = 0; trial < 3; ++trial) {
    Arenas emulated = arenas;
    EmulatedWorld(w).all_reduce_exact(
        emulated, op, trial == 0 ? DeliveryOrders{} : shuffled_delivery_orders(w, 9, trial));
    EXPECT_TRUE(equals_oracle(arenas, op, emulated[w - 1], "EmulatedWorld"));
  }
}

struct DistCase {
  Distribution dist;
  const char* name;
};

class ExactOracle : public ::testing::TestWithParam<DistCase> {};

TEST_P(ExactOracle, EveryDistributionAndWorld) {
  for (std::uint32_t w : {1u, 2u, 3u, 5u, 8u, 64u}) {
    for (Op op : {Op::kSum, Op::kMean}) {
      // 2 blocks and a short third, so windows and block edges are exercised.
      expect_all_paths_equal_oracle(make_arenas(w, 2 * exact::kBlock + 77, GetParam().dist, 3 + w),
                                    op);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Distributions, ExactOracle,
                         ::testing::Values(DistCase{Distribution::kNormal, "normal"},
                                           DistCase{Distribution::kWide, "wide"},
                                           DistCase{Distribution::kCancel, "cancel"},
                                           DistCase{Distribution::kExact, "exact"},
                                           DistCase{Distribution::kSpecial, "special"}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// Columns of hand-made addends: element i of rank r is columns[i][r].
Arenas from_columns(const std::vector<std::vector<float>>& columns) {
  Arenas arenas(columns[0].size());
  for (const auto& column : columns) {
    for (std::size_t r = 0; r < column.size(); ++r) arenas[r].push_back(column[r]);
  }
  return arenas;
}

TEST(ExactOracleEdges, OverflowSubnormalsTiesZerosAndSpecials) {
  const float max = FLT_MAX, tiny = std::numeric_limits<float>::denorm_min();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float min_normal = FLT_MIN;
  const std::vector<std::vector<float>> columns = {
      {max, max, -max},               // exact sum FLT_MAX, though a fold overflows first
      {max, max, max},                // sum overflows to +Inf; the mean is FLT_MAX
      {-max, -max, 0.0f},             // −Inf; mean −(2/3)FLT_MAX
      {tiny, tiny, tiny},             // 3 × 2^-149, subnormal
      {min_normal, -tiny, 0.0f},      // just below the normal range
      {1.0f, 0x1p-24f, 0.0f},         // a tie: rounds to even (1.0)
      {1.0f, 0x1p-24f, 0x1p-60f},     // just above the tie: rounds up
      {0x1p-24f, 1.0f, 0x1p-24f},     // two half-ulps: exactly 1 + 2^-23
      {1e30f, 1.0f, -1e30f},          // the 1 survives (a fold loses it)
      {-0.0f, -0.0f, -0.0f},          // −0
      {-0.0f, 0.0f, -0.0f},           // +0
      {1.0f, -1.0f, 0.0f},            // exact zero of nonzero addends: +0
      {-0.0f, 1.0f, -1.0f},           // +0
      {inf, 1.0f, 2.0f},              // +Inf
      {-inf, max, max},               // −Inf
      {inf, -inf, 0.0f},              // NaN
      {nan, 1.0f, 2.0f},              // NaN
      {-nan, inf, inf},               // NaN
      {0.1f, 0.2f, 0.3f},             // an ordinary inexact sum
      {3.0f, 0x1p-149f, -0x1p-149f},  // a zero sum of subnormals under a big value
  };
  const Arenas arenas = from_columns(columns);
  for (Op op : {Op::kSum, Op::kMean}) expect_all_paths_equal_oracle(arenas, op);
  // Spot checks against values known by hand, so the oracle itself is checked too.
  const std::vector<float> sum = reference_exact(arenas, Op::kSum);
  EXPECT_EQ(float_bits(sum[0]), float_bits(max));
  EXPECT_EQ(float_bits(sum[1]), 0x7F800000u);
  EXPECT_EQ(float_bits(sum[5]), float_bits(1.0f));
  EXPECT_EQ(float_bits(sum[6]), float_bits(1.0f + 0x1p-23f));
  EXPECT_EQ(float_bits(sum[8]), float_bits(1.0f));
  EXPECT_EQ(float_bits(sum[9]), 0x80000000u);
  EXPECT_EQ(float_bits(sum[10]), 0u);
  EXPECT_EQ(float_bits(sum[15]), kCanonicalNanBits);
  EXPECT_EQ(float_bits(reference_exact(arenas, Op::kMean)[1]), float_bits(max));
}

// W = 2^20, the largest world: every digit at its largest cannot overflow an int64 limb.
TEST(ExactOracleEdges, LargestWorldCannotOverflowALimb) {
  const std::uint32_t w = exact::kMaxWorld;
  EXPECT_EQ(exact::limb_bits(w), 43);
  // Element 0: every rank FLT_MAX (sum +Inf, mean FLT_MAX). Element 1: the widest window,
  // FLT_MAX and 2^-149 alternating in sign, so every limb carries large digits.
  std::vector<float> stacked(2 * static_cast<std::size_t>(w));
  for (std::uint32_t r = 0; r < w; ++r) {
    stacked[2 * r] = FLT_MAX;
    stacked[2 * r + 1] = (r % 2 == 0) ? -0x1.fffffep-126f : 0x1.fffffep127f;
  }
  for (Op op : {Op::kSum, Op::kMean}) {
    std::vector<float> out(2);
    exact_reduce_stacked(stacked.data(), w, 2, 2, op, out.data());
    for (std::size_t i = 0; i < 2; ++i) {
      std::vector<float> addends(w);
      for (std::uint32_t r = 0; r < w; ++r) addends[r] = stacked[2 * r + i];
      EXPECT_EQ(float_bits(out[i]), mpfr_exact_bits(addends, op))
          << "op " << to_string(op) << " element " << i;
    }
  }
}

::testing::AssertionResult same_bits(const std::vector<float>& want,
                                     const std::vector<float>& got) {
  if (want.size() != got.size()) return ::testing::AssertionFailure() << "sizes differ";
  const auto at = test::first_bit_difference(want.data(), got.data(), want.size());
  if (!at) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << test::describe_difference(want.data(), got.data(), *at);
}

// exact_reduce_stacked works through the arena in chunks of 16 window blocks: arenas across
// two chunk boundaries, ending in a short block, in place and beside padded slots, give the
// straight reference's bits (held to MPFR above) for every distribution.
TEST(ExactOracleEdges, ChunkedDataflowAcrossChunkBoundaries) {
  const std::size_t n = 2 * 16 * exact::kBlock + 1500;
  for (const Distribution dist : kAllDistributions) {
    const Arenas arenas = make_arenas(3, n, dist, 11);
    for (Op op : {Op::kSum, Op::kMean}) {
      const std::vector<float> want = reference_exact(arenas, op);
      EXPECT_TRUE(same_bits(want, stacked_reduce(arenas, op))) << to_string(dist);
      const std::size_t stride = n + 5;
      std::vector<float> stacked(3 * stride, 0.0f);
      for (std::size_t r = 0; r < 3; ++r) {
        std::copy(arenas[r].begin(), arenas[r].end(), stacked.begin() + r * stride);
      }
      exact_reduce_stacked(stacked.data(), 3, stride, n, op, stacked.data());  // into slot 0
      const std::vector<float> in_place(stacked.begin(), stacked.begin() + n);
      EXPECT_TRUE(same_bits(want, in_place)) << to_string(dist) << " in place";
    }
  }
}

// The contract is not fixed-order: on order-sensitive data the two differ (so a test that
// compared exact results with a fold would catch a reducer that folded instead).
TEST(ExactOracleEdges, DiffersFromTheFixedOrderFoldOnCancellingData) {
  const Arenas arenas = make_arenas(16, 4096, Distribution::kCancel, 5);
  const std::vector<float> exact = reference_exact(arenas, Op::kSum);
  const std::vector<float> fold = reference_fixed_order(arenas, Op::kSum);
  std::size_t differing = 0;
  for (std::size_t i = 0; i < exact.size(); ++i)
    differing += float_bits(exact[i]) != float_bits(fold[i]);
  EXPECT_GT(differing, 100u);
}

}  // namespace
}  // namespace rv

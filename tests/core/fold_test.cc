// The fixed-order fold (docs/DESIGN.md §2), pinned with concrete values: the association order,
// the −0.0 rule (the fold starts from addend 0), canonical NaNs, kept subnormals and the
// mean's scale. Each property also shows the wrong variant giving other bits, so the test
// could fail.
#include "core/fold.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/fold_law.h"
#include "core/fp_environment.h"

namespace rv {
namespace {

using Ranks = std::vector<std::vector<float>>;  // ranks[r][i]: element i of rank r

std::vector<float> fold(const Ranks& ranks, Op op) {
  std::vector<const float*> addends;
  for (const auto& rank : ranks) addends.push_back(rank.data());
  std::vector<float> out(ranks[0].size());
  fold_ascending(addends.data(), static_cast<std::uint32_t>(ranks.size()), out.size(), op,
                 out.data());
  return out;
}

// One element per rank.
float fold_one(const std::vector<float>& per_rank, Op op = Op::kSum) {
  Ranks ranks;
  for (float v : per_rank) ranks.push_back({v});
  return fold(ranks, op)[0];
}

float from_bits(std::uint32_t bits) { return float_from_bits(bits); }

// A strict left-to-right binary32 sum of the given order. `volatile` keeps the compiler from
// re-associating or widening anything.
float sum_in_order(const std::vector<float>& values, float start) {
  volatile float acc = start;
  for (float v : values) acc = acc + v;
  return acc;
}

TEST(FoldEnvironment, ProcessIsIeee) {
  const FpEnvironment env = read_fp_environment();
  EXPECT_TRUE(env.ieee()) << "FTZ=" << env.flush_to_zero << " DAZ=" << env.denormals_are_zero
                          << " rounding=" << env.rounding;
}

TEST(FoldOrder, AscendingRankOrderIsPinned) {
  // (1 + 1e8) rounds the 1 away (the ulp of 1e8 is 8), then − 1e8 gives 0. Folded in reverse,
  // −1e8 + 1e8 cancels first and the 1 survives.
  const std::vector<float> x = {1.0f, 1e8f, -1e8f};
  EXPECT_EQ(float_bits(fold_one(x)), float_bits(0.0f));
  EXPECT_EQ(sum_in_order({x[1], x[0]}, x[2]), 1.0f) << "reversed order must differ here";

  // A pairwise tree differs from the chain on W = 4: (1e8 + 1) + (−1e8 + 1) = 0, while
  // ((1e8 + 1) − 1e8) + 1 = 1.
  const std::vector<float> y = {1e8f, 1.0f, -1e8f, 1.0f};
  EXPECT_EQ(fold_one(y), 1.0f);
  volatile float left = y[0] + y[1];
  volatile float right = y[2] + y[3];
  EXPECT_EQ(left + right, 0.0f) << "a tree must differ here";
}

TEST(FoldOrder, ManyElementsFollowTheChainElementwise) {
  // The chain order holds for every element across fold blocks (2048 elements), not just the
  // first: element i carries the triple rotated by i, so each position sees another order.
  const std::vector<float> triple = {1.0f, 1e8f, -1e8f};
  const std::size_t n = 5000;
  Ranks ranks(3, std::vector<float>(n));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t r = 0; r < 3; ++r) ranks[r][i] = triple[(r + i) % 3];
  }
  const std::vector<float> out = fold(ranks, Op::kSum);
  for (std::size_t i = 0; i < n; ++i) {
    const float expected = sum_in_order({ranks[1][i], ranks[2][i]}, ranks[0][i]);
    ASSERT_EQ(float_bits(out[i]), float_bits(expected)) << "element " << i;
  }
}

TEST(FoldAliasing, OutMayBeAnyAddend) {
  // The live reducer folds its own copy in place: out is one of the addends. Every position
  // of the aliased addend, over several fold blocks (2048 elements), W from 1 to 5.
  const std::size_t n = 5000;
  for (std::uint32_t world = 1; world <= 5; ++world) {
    Ranks ranks(world, std::vector<float>(n));
    for (std::uint32_t r = 0; r < world; ++r) {
      for (std::size_t i = 0; i < n; ++i) {
        ranks[r][i] = (r % 2 ? -1.0f : 1.0f) * static_cast<float>((i * 7919 + r * 104729) % 1000003) / 3.0f;
      }
    }
    const std::vector<float> expected = fold(ranks, Op::kMean);
    for (std::uint32_t own = 0; own < world; ++own) {
      Ranks copy = ranks;
      std::vector<const float*> addends;
      for (const auto& rank : copy) addends.push_back(rank.data());
      fold_ascending(addends.data(), world, n, Op::kMean, copy[own].data());
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(float_bits(copy[own][i]), float_bits(expected[i]))
            << "W = " << world << ", out = addend " << own << ", element " << i;
      }
    }
  }
}

TEST(FoldSignedZero, SumOfNegativeZerosStaysNegativeZero) {
  for (std::uint32_t w = 1; w <= 8; ++w) {
    const std::vector<float> zeros(w, -0.0f);
    EXPECT_EQ(float_bits(fold_one(zeros, Op::kSum)), 0x80000000u) << "W=" << w;
    EXPECT_EQ(float_bits(fold_one(zeros, Op::kMean)), 0x80000000u) << "W=" << w;
    // A fold started from +0.0 turns them into +0.0: the reason the fold starts from x_0.
    EXPECT_EQ(float_bits(sum_in_order(zeros, 0.0f)), 0x00000000u) << "W=" << w;
  }
  // Mixed zeros follow IEEE: (−0) + (+0) = +0.
  EXPECT_EQ(float_bits(fold_one({-0.0f, 0.0f})), 0x00000000u);
  EXPECT_EQ(float_bits(fold_one({0.0f, -0.0f, -0.0f})), 0x00000000u);
}

TEST(FoldNan, EveryNanResultIsCanonical) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::vector<float>> cases = {
      {inf, -inf},                                       // invalid: x86 makes 0xFFC00000
      {-inf, inf, 1.0f},                                 // the NaN then propagates
      {from_bits(0x7F800001u), 1.0f},                    // signalling NaN input
      {1.0f, from_bits(0xFFA00000u)},                    // negative sNaN as the second addend
      {from_bits(0x7FC12345u), from_bits(0xFFC54321u)},  // two quiet payloads
      {from_bits(0xFFFFFFFFu)},                          // W = 1: the input NaN alone
      {from_bits(0x7FA00000u)},                          // W = 1: an sNaN alone
      {from_bits(0x7FC00001u)},                          // W = 1: a payload of one
      {2.0f, 3.0f, from_bits(0xFFC00000u), 4.0f},        // NaN from a later rank
  };
  for (const auto& addends : cases) {
    for (Op op : {Op::kSum, Op::kMean}) {
      const float result = fold_one(addends, op);
      EXPECT_EQ(float_bits(result), kCanonicalNanBits)
          << "W=" << addends.size() << " op=" << to_string(op) << " first addend bits 0x"
          << std::hex << float_bits(addends[0]);
    }
  }
#if defined(__x86_64__) || defined(__i386__)
  // Without the rule the bits would differ: x86's invalid-operation NaN is negative.
  volatile float a = inf;
  volatile float b = -inf;
  EXPECT_NE(float_bits(a + b), kCanonicalNanBits);
#endif
}

TEST(FoldNan, InfinitiesAndOverflowAreNotNans) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(float_bits(fold_one({inf, 1.0f})), 0x7F800000u);
  EXPECT_EQ(float_bits(fold_one({-inf, -inf})), 0xFF800000u);
  EXPECT_EQ(float_bits(fold_one({FLT_MAX, FLT_MAX})), 0x7F800000u);
  EXPECT_EQ(float_bits(fold_one({-FLT_MAX, -FLT_MAX}, Op::kMean)), 0xFF800000u)
      << "the sum overflows before the scale: mean is sum × r";
}

TEST(FoldSubnormal, SubnormalInputsAndResultsAreKept) {
  // Inputs pass through a W = 1 fold and a mean of one rank unchanged.
  for (std::uint32_t bits : {0x00000001u, 0x007FFFFFu, 0x80000001u, 0x80400000u}) {
    EXPECT_EQ(float_bits(fold_one({from_bits(bits)})), bits);
    EXPECT_EQ(float_bits(fold_one({from_bits(bits)}, Op::kMean)), bits);
  }
  // Subnormal + subnormal, and normal − normal landing in the subnormal range.
  EXPECT_EQ(float_bits(fold_one({from_bits(1u), from_bits(1u)})), 2u);
  EXPECT_EQ(float_bits(fold_one({from_bits(0x00600000u), from_bits(0x80800000u)})), 0x80200000u);
  EXPECT_EQ(float_bits(fold_one({1.5f * FLT_MIN, -FLT_MIN})), 0x00400000u);
  // A subnormal mean: 3 × 2^-149 × 0.5 = 1.5 ulp, rounded to even: 2 ulp. FTZ would give 0.
  EXPECT_EQ(float_bits(fold_one({from_bits(3u), from_bits(0u)}, Op::kMean)), 2u);
  // A subnormal addend still moves a small normal sum.
  EXPECT_EQ(float_bits(fold_one({FLT_MIN, from_bits(1u)})), 0x00800001u);
}

TEST(FoldMean, MeanIsSumTimesReciprocalNotPreScaled) {
  // W = 3, addends 1, 1, 12: sum = 14 exactly; 14 × fl(1/3) rounds up, while pre-scaling
  // each addend first (and also 14 / 3) rounds down.
  const float r = 1.0f / 3.0f;
  EXPECT_EQ(float_bits(mean_scale(3)), float_bits(r));
  EXPECT_EQ(float_bits(r), float_bits(0x1.555556p-2f));
  const float mean = fold_one({1.0f, 1.0f, 12.0f}, Op::kMean);
  EXPECT_EQ(float_bits(mean), float_bits(0x1.2aaaacp+2f));
  const float pre_scaled = sum_in_order({1.0f * r, 12.0f * r}, 1.0f * r);
  EXPECT_EQ(float_bits(pre_scaled), float_bits(0x1.2aaaaap+2f));
  EXPECT_NE(float_bits(mean), float_bits(pre_scaled));
  volatile float fourteen = 14.0f;
  EXPECT_NE(float_bits(mean), float_bits(fourteen / 3.0f)) << "the mean multiplies, not divides";
}

TEST(FoldMean, ScaleIsBinary32Reciprocal) {
  for (std::uint32_t w = 1; w <= 4096; ++w) {
    volatile float fw = static_cast<float>(w);
    ASSERT_EQ(float_bits(mean_scale(w)), float_bits(1.0f / fw)) << "W=" << w;
  }
  // W = 1 is the identity; a power of two is exact.
  EXPECT_EQ(fold_one({7.25f}, Op::kMean), 7.25f);
  EXPECT_EQ(fold_one({1.0f, 2.0f, 3.0f, 6.0f}, Op::kMean), 3.0f);
}

// Bits from a splitmix64 stream, with specials mixed in so that every rule is exercised.
class BitStream {
 public:
  explicit BitStream(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float value() {
    const std::uint64_t h = next();
    const auto low = static_cast<std::uint32_t>(h);
    switch (h >> 60) {
      case 0:
        return from_bits((low & 0x807FFFFFu));  // subnormal or zero
      case 1:
        return from_bits(0x7F800000u | (low & 0x807FFFFFu));  // inf or NaN
      default:  // ordinary values around 1 that round on every addition
        return from_bits((low & 0x80000000u) | ((120u + (low >> 8) % 16u) << 23) |
                         (low & 0x7FFFFFu));
    }
  }

 private:
  std::uint64_t state_;
};

// The definition, element by element.
float straight_fold(const Ranks& ranks, std::size_t i, Op op) {
  volatile float acc = ranks[0][i];
  for (std::size_t r = 1; r < ranks.size(); ++r) acc = acc + ranks[r][i];
  float result = acc;
  if (op == Op::kMean) {
    volatile float scaled = result * (1.0f / static_cast<float>(ranks.size()));
    result = scaled;
  }
  return canonicalize_nan(result);
}

TEST(FoldLayouts, AscendingStackedAndDefinitionAgree) {
  BitStream bits(20240601);
  for (std::uint32_t w : {1u, 2u, 3u, 5u, 8u, 17u}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2047}, std::size_t{2048},
                          std::size_t{2049}, std::size_t{5000}}) {
      Ranks ranks(w, std::vector<float>(n));
      for (auto& rank : ranks) {
        for (float& v : rank) v = bits.value();
      }
      const std::size_t stride = n + 3;  // slots padded: the stride is not the count
      std::vector<float> stacked(w * stride, from_bits(0x7FC0DEADu));
      for (std::uint32_t r = 0; r < w; ++r) {
        std::copy(ranks[r].begin(), ranks[r].end(), stacked.begin() + r * stride);
      }
      for (Op op : {Op::kSum, Op::kMean}) {
        SCOPED_TRACE("W=" + std::to_string(w) + " n=" + std::to_string(n) +
                     " op=" + std::string(to_string(op)));
        const std::vector<float> ascending = fold(ranks, op);
        std::vector<float> from_stacked(n);
        fold_stacked(stacked.data(), w, stride, n, op, from_stacked.data());
        // out may alias addend 0 (the in-place reduction of the live reducers).
        std::vector<float> in_place = ranks[0];
        std::vector<const float*> addends = {in_place.data()};
        for (std::uint32_t r = 1; r < w; ++r) addends.push_back(ranks[r].data());
        fold_ascending(addends.data(), w, n, op, in_place.data());
        for (std::size_t i = 0; i < n; ++i) {
          const std::uint32_t expected = float_bits(straight_fold(ranks, i, op));
          ASSERT_EQ(float_bits(ascending[i]), expected) << "fold_ascending, element " << i;
          ASSERT_EQ(float_bits(from_stacked[i]), expected) << "fold_stacked, element " << i;
          ASSERT_EQ(float_bits(in_place[i]), expected) << "in place, element " << i;
        }
      }
    }
  }
}

TEST(FoldLibrarySum, FinishAppliesScaleAndNanRule) {
  std::vector<float> values = {3.0f, from_bits(0xFFC00000u), -0.0f, from_bits(1u)};
  std::vector<float> mean = values;
  finish_library_sum(values.data(), values.size(), 3, Op::kSum);
  EXPECT_EQ(values[0], 3.0f);
  EXPECT_EQ(float_bits(values[1]), kCanonicalNanBits);
  EXPECT_EQ(float_bits(values[2]), 0x80000000u);
  EXPECT_EQ(float_bits(values[3]), 1u);
  finish_library_sum(mean.data(), mean.size(), 3, Op::kMean);
  volatile float three = 3.0f;
  EXPECT_EQ(float_bits(mean[0]), float_bits(three * (1.0f / 3.0f)));
  EXPECT_EQ(float_bits(mean[1]), kCanonicalNanBits);
  EXPECT_EQ(float_bits(mean[2]), 0x80000000u);
  EXPECT_EQ(float_bits(mean[3]), 0u) << "2^-149 × fl(1/3) rounds to +0";
}

}  // namespace
}  // namespace rv

// Seeded arenas (docs/DESIGN.md §4): any slice regenerates alone, bit for bit; known-answer
// digests pin generator 1 of every distribution (an accidental change to the value law must
// fail here, and is then a new generator version); each distribution holds what it is for.
#include "core/arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/digest/digest.h"
#include "core/error.h"
#include "core/fold_law.h"

namespace rv {
namespace {

ArenaSpec spec_of(Distribution dist, std::uint64_t seed) { return ArenaSpec{1, dist, seed}; }

std::string name_of(Distribution dist) { return std::string(to_string(dist)); }

TEST(Arena, SliceAloneEqualsSliceOfWholeArena) {
  const std::size_t n = 6000;
  // Offsets around the 1024-element block of `normal`'s per-block scale, unaligned ones, and
  // slices that cross one or several block boundaries.
  const std::size_t begins[] = {0, 1, 3, 7, 511, 1000, 1023, 1024, 1025, 2047, 2048, 3071, 4999};
  const std::size_t counts[] = {0, 1, 2, 5, 24, 1023, 1024, 1025, 3000};
  for (Distribution dist : kAllDistributions) {
    for (std::uint32_t rank : {0u, 1u, 5u, 255u, 4095u}) {
      const ArenaSpec spec = spec_of(dist, 77);
      const std::vector<float> whole = generate_arena(spec, rank, n);
      for (std::size_t begin : begins) {
        for (std::size_t count : counts) {
          if (begin + count > n) continue;
          std::vector<float> slice(count);
          generate_arena_slice(spec, rank, begin, count, slice.data());
          for (std::size_t j = 0; j < count; ++j) {
            ASSERT_EQ(float_bits(slice[j]), float_bits(whole[begin + j]))
                << name_of(dist) << " rank " << rank << " slice [" << begin << ", +" << count
                << ") element " << j;
          }
        }
      }
    }
  }
}

TEST(Arena, FarSlicesAgreeWithSingleElements) {
  // Indices beyond 32 bits regenerate the same one at a time as in a block.
  for (Distribution dist : kAllDistributions) {
    const ArenaSpec spec = spec_of(dist, 5);
    for (std::uint64_t begin : {std::uint64_t{1} << 32, (std::uint64_t{1} << 40) + 1023}) {
      std::vector<float> block(2100);
      generate_arena_slice(spec, 3, begin, block.size(), block.data());
      for (std::size_t j = 0; j < block.size(); j += 7) {
        float one = 0;
        generate_arena_slice(spec, 3, begin + j, 1, &one);
        ASSERT_EQ(float_bits(one), float_bits(block[j])) << name_of(dist) << " at " << begin + j;
      }
    }
  }
}

TEST(Arena, ValuesDependOnSeedRankAndDistribution) {
  const std::size_t n = 256;
  const auto digest = [n](Distribution dist, std::uint64_t seed, std::uint32_t rank) {
    const std::vector<float> arena = generate_arena(spec_of(dist, seed), rank, n);
    return digest_floats(arena.data(), arena.size()).hex();
  };
  std::set<std::string> seen;
  for (Distribution dist : kAllDistributions) {
    for (std::uint64_t seed : {0u, 1u, 2u}) {
      for (std::uint32_t rank : {0u, 1u, 2u}) {
        EXPECT_TRUE(seen.insert(digest(dist, seed, rank)).second)
            << name_of(dist) << " seed " << seed << " rank " << rank << " repeats another arena";
      }
    }
  }
}

// Known answers, computed once with generator 1 and pinned. If one of these fails, the
// value law changed: that must be a new generator version with new goldens, never an edit.
struct KnownAnswer {
  Distribution dist;
  const char* ranks_0_to_4;  // digest of ranks 0..4 concatenated, seed 42, 4099 elements each
  const char* far_slice;     // digest of rank 7, seed 9, elements [2^33, 2^33 + 1000)
};

constexpr KnownAnswer kKnownAnswers[] = {
    {Distribution::kNormal, "1d270de5a6ea1c199819206f6ac13f88", "c3ec05996e657ad15b729784cd9ca61b"},
    {Distribution::kWide, "7336444619a6c2c26c5ead784667052b", "be9f53867548a12152f51327244c28ae"},
    {Distribution::kCancel, "40947bfa16ff9dad749f8c2785630d45", "f7a088422bbe8dde72adc31587778d19"},
    {Distribution::kExact, "7e7a15ff4e7692b43917c28884c7848b", "66605fae781a1e10bfa15b8dd19f3027"},
    {Distribution::kSpecial, "ecb671684dea41fe45083366203cbc56",
     "4041b0df07f93e48d4517c7651ef5e20"},
};

TEST(Arena, KnownAnswerDigestsPinGeneratorOne) {
  for (const KnownAnswer& known : kKnownAnswers) {
    DigestStream ranks;
    for (std::uint32_t rank = 0; rank < 5; ++rank) {
      const std::vector<float> arena = generate_arena(spec_of(known.dist, 42), rank, 4099);
      ranks.update_floats(arena.data(), arena.size());
    }
    std::vector<float> far(1000);
    generate_arena_slice(spec_of(known.dist, 9), 7, std::uint64_t{1} << 33, far.size(), far.data());
    EXPECT_EQ(ranks.finish().hex(), known.ranks_0_to_4) << name_of(known.dist);
    EXPECT_EQ(digest_floats(far.data(), far.size()).hex(), known.far_slice) << name_of(known.dist);
  }
}

struct Census {
  std::size_t positive_zero = 0, negative_zero = 0, positive_inf = 0, negative_inf = 0;
  std::size_t quiet_nan = 0, signalling_nan = 0, subnormal = 0, normal = 0, negative = 0;
  std::set<std::uint32_t> exponents;  // biased exponent fields of finite values
  std::set<std::uint32_t> nan_payloads;
};

Census census(Distribution dist, std::size_t n) {
  Census c;
  for (std::uint32_t rank = 0; rank < 4; ++rank) {
    for (float value : generate_arena(spec_of(dist, 1), rank, n)) {
      const std::uint32_t bits = float_bits(value);
      const std::uint32_t exponent = (bits >> 23) & 0xFFu;
      const std::uint32_t mantissa = bits & 0x7FFFFFu;
      c.negative += bits >> 31;
      if (bits == 0u) ++c.positive_zero;
      if (bits == 0x80000000u) ++c.negative_zero;
      if (bits == 0x7F800000u) ++c.positive_inf;
      if (bits == 0xFF800000u) ++c.negative_inf;
      if (exponent == 0xFFu && mantissa != 0) {
        (mantissa & 0x400000u ? c.quiet_nan : c.signalling_nan)++;
        c.nan_payloads.insert(bits);
      }
      if (exponent == 0 && mantissa != 0) ++c.subnormal;
      if (exponent != 0 && exponent != 0xFFu) ++c.normal;
      if (exponent != 0xFFu) c.exponents.insert(exponent);
    }
  }
  return c;
}

TEST(Arena, WideCoversSubnormalsAndTheExponentRange) {
  const Census c = census(Distribution::kWide, 50000);
  EXPECT_GT(c.subnormal, 100u);
  EXPECT_EQ(c.quiet_nan + c.signalling_nan + c.positive_inf + c.negative_inf, 0u)
      << "wide is finite";
  EXPECT_EQ(c.exponents.size(), 255u) << "every finite exponent field, 0 (subnormal) to 254";
  EXPECT_GT(c.negative, 90000u);
  EXPECT_LT(c.negative, 110000u);
}

TEST(Arena, SpecialHoldsEverySpecialValue) {
  const Census c = census(Distribution::kSpecial, 20000);
  EXPECT_GT(c.positive_zero, 0u);
  EXPECT_GT(c.negative_zero, 0u);
  EXPECT_GT(c.positive_inf, 0u);
  EXPECT_GT(c.negative_inf, 0u);
  EXPECT_GT(c.quiet_nan, 0u);
  EXPECT_GT(c.signalling_nan, 0u);
  EXPECT_GT(c.nan_payloads.size(), 100u) << "NaNs with assorted payloads and signs";
  EXPECT_GT(c.subnormal, 1000u);
  EXPECT_GT(c.normal, 1000u);
}

TEST(Arena, ExactIsSmallIntegers) {
  std::set<int> seen;
  for (std::uint32_t rank : {0u, 1u, 4095u}) {
    for (float value : generate_arena(spec_of(Distribution::kExact, 3), rank, 40000)) {
      const auto integer = static_cast<int>(value);
      ASSERT_EQ(static_cast<float>(integer), value) << "not an integer: " << value;
      ASSERT_GE(integer, -1000);
      ASSERT_LE(integer, 1000);
      seen.insert(integer);
    }
  }
  EXPECT_EQ(seen.size(), 2001u) << "every integer of [-1000, 1000] appears";
}

TEST(Arena, NormalAndCancelAreFiniteWithMixedSigns) {
  for (Distribution dist : {Distribution::kNormal, Distribution::kCancel}) {
    const Census c = census(dist, 20000);
    EXPECT_EQ(c.normal + c.positive_zero + c.negative_zero + c.subnormal, 80000u)
        << name_of(dist) << " is finite";
    EXPECT_GT(c.negative, 30000u) << name_of(dist);
    EXPECT_LT(c.negative, 50000u) << name_of(dist);
  }
}

TEST(Arena, UnknownGeneratorIsAnInputError) {
  float out = 0;
  EXPECT_THROW(generate_arena_slice({2, Distribution::kNormal, 1}, 0, 0, 1, &out), InputError);
  EXPECT_THROW(generate_arena_slice({0, Distribution::kNormal, 1}, 0, 0, 1, &out), InputError);
  EXPECT_TRUE(is_known_generator(kLatestGenerator));
}

TEST(Arena, DistributionNamesRoundTrip) {
  for (Distribution dist : kAllDistributions) {
    EXPECT_EQ(parse_distribution(to_string(dist)), dist);
  }
  EXPECT_FALSE(parse_distribution("Normal").has_value());
  EXPECT_FALSE(parse_distribution("").has_value());
  EXPECT_FALSE(parse_distribution("gauss").has_value());
}

}  // namespace
}  // namespace rv

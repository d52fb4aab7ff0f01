// bf16 and f16 in case ids and arenas (docs/DESIGN.md §2.5, §3, §4): the dtype round-trips
// through the canonical id (absent = f32, an explicit dtype=f32 refused, junk refused); every
// value of a half arena is a value of its format (a fixed point of an independent rounding,
// tests/support/half_oracle.h; NaNs widened bit for bit, payloads kept), each distribution
// holds what arena_law_half.h promises, and f32 arenas are untouched by the dtype field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/case_id.h"
#include "core/digest/digest.h"
#include "core/error.h"
#include "tests/support/half_oracle.h"

#define XXH_INLINE_ALL  // header-only, as the library uses it
#include <xxhash.h>

namespace rv {
namespace {

using test::oracle_bits;

// ---- Case ids ----------------------------------------------------------------------------

TEST(CaseIdDType, RoundTripsBf16AndF16) {
  std::uint64_t state = 99;
  const auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 11;
  };
  for (int trial = 0; trial < 3000; ++trial) {
    CaseId id;
    id.contract = static_cast<Contract>(trial % 3);
    id.op = trial % 2 ? Op::kMean : Op::kSum;
    id.dtype = kAllDTypes[trial % 3];
    id.world = 1 + static_cast<std::uint32_t>(next() % kMaxWorld);
    id.count = next() % (kMaxTotalElements / id.world + 1);
    id.dist = kAllDistributions[trial % 5];
    id.seed = next();
    const std::string text = format_case_id(id);
    const bool has_key = text.find("dtype=") != std::string::npos;
    ASSERT_EQ(has_key, id.dtype != DType::kF32) << text;
    const CaseId back = parse_case_id(text);
    ASSERT_EQ(back, id) << text;
    ASSERT_EQ(back.dtype, id.dtype) << text;
    ASSERT_EQ(format_case_id(back), text);
    ASSERT_EQ(back.arena().dtype, id.dtype) << "the arena spec carries the dtype";
  }
}

TEST(CaseIdDType, DTypeSitsAfterOpAndAbsentMeansF32) {
  const std::string bf16 = "contract=exact,op=sum,dtype=bf16,w=8,n=4099,dist=special,seed=1,gen=1";
  const CaseId id = parse_case_id(bf16);
  EXPECT_EQ(id.dtype, DType::kBF16);
  EXPECT_EQ(id.contract, Contract::kExact);
  EXPECT_EQ(id.world, 8u);
  EXPECT_EQ(format_case_id(id), bf16);
  const CaseId f16 =
      parse_case_id("contract=fixed-order,op=mean,dtype=f16,w=2,n=0,dist=wide,seed=0,gen=1");
  EXPECT_EQ(f16.dtype, DType::kF16);
  const CaseId f32 = parse_case_id("contract=exact,op=sum,w=8,n=4099,dist=special,seed=1,gen=1");
  EXPECT_EQ(f32.dtype, DType::kF32);
  EXPECT_EQ(format_case_id(f32), "contract=exact,op=sum,w=8,n=4099,dist=special,seed=1,gen=1");
  // The dtype is part of the case: ids differing only in it are different cases.
  CaseId other = id;
  other.dtype = DType::kF16;
  EXPECT_NE(other, id);
  other.dtype = DType::kF32;
  EXPECT_NE(other, id);
}

TEST(CaseIdDType, RefusesExplicitF32JunkAndMisplacedDType) {
  const auto message_of = [](const std::string& text) -> std::string {
    try {
      parse_case_id(text);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  // f32's canonical id leaves dtype out, so an explicit dtype=f32 is not canonical.
  const std::string f32 =
      message_of("contract=exact,op=sum,dtype=f32,w=8,n=1,dist=exact,seed=1,gen=1");
  EXPECT_NE(f32.find("dtype"), std::string::npos) << f32;
  EXPECT_NE(f32.find("leav"), std::string::npos) << f32;
  for (const char* junk : {"f64", "F16", "BF16", "", "half", "bf16 ", "fp16", "bfloat16"}) {
    const std::string text =
        std::string("contract=exact,op=sum,dtype=") + junk + ",w=8,n=1,dist=exact,seed=1,gen=1";
    const std::string m = message_of(text);
    EXPECT_NE(m, "(accepted)") << text;
    EXPECT_NE(m.find("dtype"), std::string::npos) << text << ": " << m;
  }
  for (const char* misplaced : {
           "dtype=bf16,contract=exact,op=sum,w=8,n=1,dist=exact,seed=1,gen=1",
           "contract=exact,dtype=bf16,op=sum,w=8,n=1,dist=exact,seed=1,gen=1",
           "contract=exact,op=sum,w=8,dtype=bf16,n=1,dist=exact,seed=1,gen=1",
           "contract=exact,op=sum,w=8,n=1,dist=exact,seed=1,gen=1,dtype=bf16",
           "contract=exact,op=sum,dtype=bf16,dtype=bf16,w=8,n=1,dist=exact,seed=1,gen=1",
           "contract=exact,op=sum,dtype,w=8,n=1,dist=exact,seed=1,gen=1",
           "contract=exact,op=sum,dtype=bf16",
       }) {
    EXPECT_THROW(parse_case_id(misplaced), InputError) << misplaced;
  }
}

// ---- Arenas ------------------------------------------------------------------------------

struct HalfCensus {
  std::size_t positive_zero = 0, negative_zero = 0, positive_inf = 0, negative_inf = 0;
  std::size_t quiet_nan = 0, signalling_nan = 0, subnormal = 0, normal = 0, negative = 0;
  std::set<std::uint32_t> exponents;  // the format's biased exponent fields of finite values
  std::set<std::uint32_t> nan_bits;
  std::vector<float> values;
};

// The format's bits of a widened value, recovered by moving binary32's fields by hand (not by
// the law under test); checks on the way that the value is one of the format's.
HalfCensus census(DType dtype, Distribution dist, std::size_t n) {
  const bool f16 = dtype == DType::kF16;
  HalfCensus c;
  for (std::uint32_t rank = 0; rank < 4; ++rank) {
    for (const float v : generate_arena({1, dist, 5, dtype}, rank, n)) {
      c.values.push_back(v);
      const std::uint32_t b = oracle_bits(v);
      c.negative += b >> 31;
      if (std::isnan(v)) {
        // A NaN of the format, widened bit for bit: binary32's low fraction bits are zero
        // (13 for f16, 16 for bf16), the payload above them kept.
        EXPECT_EQ(b & (f16 ? 0x1FFFu : 0xFFFFu), 0u) << std::hex << b;
        const bool quiet = (b & 0x400000u) != 0;
        (quiet ? c.quiet_nan : c.signalling_nan)++;
        c.nan_bits.insert(b);
        continue;
      }
      // Every other value is a fixed point of the format's rounding.
      EXPECT_EQ(oracle_bits(test::oracle_round(f16, v)), b)
          << to_string(dtype) << " " << to_string(dist) << ": " << std::hexfloat << v;
      if (b == 0u) ++c.positive_zero;
      if (b == 0x80000000u) ++c.negative_zero;
      if (b == 0x7F800000u) ++c.positive_inf;
      if (b == 0xFF800000u) ++c.negative_inf;
      if (!std::isfinite(v)) continue;
      const double a = std::fabs(static_cast<double>(v));
      const double min_normal = f16 ? 0x1p-14 : 0x1p-126;
      if (a != 0 && a < min_normal) ++c.subnormal;
      if (a >= min_normal) {
        ++c.normal;
        c.exponents.insert(static_cast<std::uint32_t>(std::ilogb(v) + (f16 ? 15 : 127)));
      } else {
        c.exponents.insert(0);
      }
    }
  }
  return c;
}

class HalfArena : public ::testing::TestWithParam<DType> {};

TEST_P(HalfArena, WideIsEveryFiniteExponentWithSubnormals) {
  const DType dtype = GetParam();
  const HalfCensus c = census(dtype, Distribution::kWide, 50000);
  EXPECT_EQ(c.quiet_nan + c.signalling_nan + c.positive_inf + c.negative_inf, 0u);
  EXPECT_EQ(c.exponents.size(), dtype == DType::kF16 ? 31u : 255u)
      << "every exponent field but Inf's, 0 (subnormals and zeros) included";
  EXPECT_GT(c.subnormal, dtype == DType::kF16 ? 1000u : 100u);
  EXPECT_GT(c.negative, 90000u);
  EXPECT_LT(c.negative, 110000u);
}

TEST_P(HalfArena, SpecialHoldsEverySpecialValueOfTheFormat) {
  const HalfCensus c = census(GetParam(), Distribution::kSpecial, 20000);
  EXPECT_GT(c.positive_zero, 0u);
  EXPECT_GT(c.negative_zero, 0u);
  EXPECT_GT(c.positive_inf, 0u);
  EXPECT_GT(c.negative_inf, 0u);
  EXPECT_GT(c.quiet_nan, 0u);
  EXPECT_GT(c.signalling_nan, 0u);
  EXPECT_GT(c.nan_bits.size(), 30u) << "NaNs with assorted payloads and signs";
  EXPECT_GT(c.subnormal, 1000u);
  EXPECT_GT(c.normal, 1000u);
}

TEST_P(HalfArena, ExactIsTheSmallIntegersOfTheFormat) {
  const DType dtype = GetParam();
  const int range = dtype == DType::kF16 ? 16 : 2;
  std::set<int> seen;
  for (const float v : census(dtype, Distribution::kExact, 20000).values) {
    const auto k = static_cast<int>(v);
    ASSERT_EQ(static_cast<float>(k), v);
    ASSERT_LE(std::abs(k), range);
    seen.insert(k);
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(2 * range + 1));
}

TEST_P(HalfArena, NormalAndCancelAreFiniteMixedAndInTheirRanges) {
  const DType dtype = GetParam();
  const bool f16 = dtype == DType::kF16;
  for (const Distribution dist : {Distribution::kNormal, Distribution::kCancel}) {
    const HalfCensus c = census(dtype, dist, 20000);
    EXPECT_EQ(c.normal + c.subnormal + c.positive_zero + c.negative_zero, 80000u)
        << to_string(dist) << " is finite";
    EXPECT_GT(c.negative, 30000u) << to_string(dist);
    EXPECT_LT(c.negative, 50000u) << to_string(dist);
    if (dist == Distribution::kNormal && f16) {
      EXPECT_GT(c.subnormal, 0u) << "normal's smallest values reach f16's subnormals";
    }
    if (dist == Distribution::kCancel) {
      // Large values in [2^16, 2^24) (f16: [2^8, 2^14)), residues in [2^-15, 2^-7)
      // (f16: [2^-9, 2^-3)), nothing else.
      std::size_t large = 0;
      for (const float v : c.values) {
        const double a = std::fabs(static_cast<double>(v));
        const bool is_large = f16 ? (a >= 0x1p8 && a < 0x1p14) : (a >= 0x1p16 && a < 0x1p24);
        const bool is_residue = f16 ? (a >= 0x1p-9 && a < 0x1p-3) : (a >= 0x1p-15 && a < 0x1p-7);
        ASSERT_TRUE(is_large || is_residue) << std::hexfloat << v;
        large += is_large;
      }
      EXPECT_GT(large, 55000u);  // about three quarters
      EXPECT_LT(large, 65000u);
    }
  }
}

TEST_P(HalfArena, SlicesRegenerateAloneAndDTypesDiffer) {
  const DType dtype = GetParam();
  for (const Distribution dist : kAllDistributions) {
    const ArenaSpec spec{1, dist, 8, dtype};
    const std::vector<float> whole = generate_arena(spec, 3, 3000);
    std::vector<float> slice(1000);
    generate_arena_slice(spec, 3, 1500, slice.size(), slice.data());
    for (std::size_t j = 0; j < slice.size(); ++j) {
      ASSERT_EQ(oracle_bits(slice[j]), oracle_bits(whole[1500 + j])) << to_string(dist);
    }
    // Another dtype's (or binary32's) arena of the same seed is another arena.
    const std::vector<float> f32 = generate_arena({1, dist, 8, DType::kF32}, 3, 3000);
    const DType other_half = dtype == DType::kF16 ? DType::kBF16 : DType::kF16;
    const std::vector<float> other = generate_arena({1, dist, 8, other_half}, 3, 3000);
    EXPECT_NE(digest_floats(whole.data(), whole.size()).hex(),
              digest_floats(f32.data(), f32.size()).hex())
        << to_string(dist);
    EXPECT_NE(digest_floats(whole.data(), whole.size()).hex(),
              digest_floats(other.data(), other.size()).hex())
        << to_string(dist);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, HalfArena, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const auto& param_info) {
                           return std::string(to_string(param_info.param));
                         });

// The digest of a half arena is XXH3-128 of the format's little-endian bytes (DESIGN §2.5),
// here built by the independent oracle and hashed by xxHash directly; streamed in odd-sized
// pieces it is the same.
TEST_P(HalfArena, DigestIsXxh128OfTheFormatsLittleEndianBytes) {
  const DType dtype = GetParam();
  const bool f16 = dtype == DType::kF16;
  for (const Distribution dist : kAllDistributions) {
    const std::vector<float> values = generate_arena({1, dist, 2, dtype}, 1, 5001);
    std::vector<unsigned char> bytes;
    for (const float v : values) {
      const std::uint16_t b = f16 ? test::oracle_narrow_f16(v) : test::oracle_narrow_bf16(v);
      bytes.push_back(static_cast<unsigned char>(b & 0xFFu));
      bytes.push_back(static_cast<unsigned char>(b >> 8));
    }
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits_withSeed(bytes.data(), bytes.size(), 0));
    std::string want;
    for (const unsigned char c : canonical.digest) {
      const char* digits = "0123456789abcdef";
      want += digits[c >> 4];
      want += digits[c & 0xFu];
    }
    EXPECT_EQ(digest_values(values.data(), values.size(), dtype).hex(), want) << to_string(dist);
    DigestStream stream;
    for (std::size_t begin = 0; begin < values.size(); begin += 777) {
      stream.update_values(values.data() + begin, std::min<std::size_t>(777, values.size() - begin),
                           dtype);
    }
    EXPECT_EQ(stream.finish().hex(), want) << to_string(dist) << " streamed";
  }
}

// f32 arenas made with the dtype spelled out are the very arenas of generator 1: the digest
// tests/core/arena_test.cc pins for normal (ranks 0..4, seed 42, 4099 elements each).
TEST(F32Arena, UnchangedByTheDTypeField) {
  DigestStream ranks;
  for (std::uint32_t rank = 0; rank < 5; ++rank) {
    const std::vector<float> arena =
        generate_arena({1, Distribution::kNormal, 42, DType::kF32}, rank, 4099);
    ranks.update_floats(arena.data(), arena.size());
  }
  EXPECT_EQ(ranks.finish().hex(), "1d270de5a6ea1c199819206f6ac13f88");
  for (const Distribution dist : kAllDistributions) {
    ArenaSpec implicit;
    implicit.dist = dist;
    implicit.seed = 3;
    const std::vector<float> a = generate_arena(implicit, 1, 2000);
    const std::vector<float> b = generate_arena({1, dist, 3, DType::kF32}, 1, 2000);
    EXPECT_EQ(digest_floats(a.data(), a.size()).hex(), digest_floats(b.data(), b.size()).hex());
  }
}

}  // namespace
}  // namespace rv

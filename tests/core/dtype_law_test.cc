// The element law of bf16 and f16 (core/dtype_law.h, docs/DESIGN.md §2.5) held to oracles that
// share none of its expressions:
//   - f16: GCC's own _Float16 conversions (libgcc's soft-float or the F16C instructions, both
//     IEEE round-to-nearest-even with subnormals), both directions, every bit pattern;
//   - bf16 widening: the definition itself (bf16 is binary32's top half);
//   - bf16 narrowing: a nearest-candidate search in double written here (the two bf16 values
//     around x, their distances to x compared exactly in double, ties to the even one).
// The samples: every value of each format and its float neighbours, every midpoint between
// consecutive values and its neighbours, the overflow and subnormal boundaries, a stride
// through every binade that matters, and millions of random float bit patterns (fixed seed).
#include "core/dtype_law.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/dtype_arrays.h"

namespace rv {
namespace {

// ---- Oracles: none of them calls core/dtype_law.h ----------------------------------------

std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
float from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

float gcc_widen_f16(std::uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, sizeof h);
  return static_cast<float>(h);
}
std::uint16_t gcc_narrow_f16(float f) {
  // Through a volatile so the conversion is the run-time one (libgcc or F16C), never a value
  // the compiler folded with its own constant arithmetic.
  volatile float v = f;
  const auto h = static_cast<_Float16>(v);
  std::uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

float oracle_widen_bf16(std::uint16_t bits) { return from_bits(std::uint32_t{bits} << 16); }

// The bf16 nearest x: t is x's top half (x truncated toward zero), the candidates are t and the
// next bf16 away from zero, t + 1 (whose bits are Inf's after the largest finite: for rounding
// it stands for 2^128, the value the next binade would start at, which is IEEE's overflow
// rule). Both distances are exact in double (two values 24 bits wide within one binade).
std::uint16_t oracle_narrow_bf16(float x) {
  if (std::isnan(x)) return kCanonicalBf16NanBits;
  const std::uint32_t b = bits_of(x);
  const auto t = static_cast<std::uint16_t>(b >> 16);
  if ((b & 0xFFFFu) == 0) return t;  // a value of the format (±0 and ±Inf included)
  const double ax = std::fabs(static_cast<double>(x));
  const auto t_magnitude = static_cast<std::uint16_t>(t & 0x7FFFu);
  const double low = std::fabs(static_cast<double>(oracle_widen_bf16(t_magnitude)));
  const double high =
      t_magnitude == 0x7F7Fu
          ? std::ldexp(1.0, 128)
          : static_cast<double>(oracle_widen_bf16(static_cast<std::uint16_t>(t_magnitude + 1)));
  const double to_low = ax - low, to_high = high - ax;
  const bool up = to_high < to_low || (to_high == to_low && (t & 1u) != 0);
  return static_cast<std::uint16_t>(up ? t + 1 : t);
}

std::string hex16(std::uint16_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << std::setw(4) << std::setfill('0') << v;
  return s.str();
}
std::string describe(float x) {
  std::ostringstream s;
  s << std::hexfloat << x << " (0x" << std::hex << bits_of(x) << ")";
  return s.str();
}

// A fixed-seed 64-bit generator (splitmix64), so every run samples the same floats.
struct Random {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

// The float samples both narrowings are checked over (NaNs among them).
std::vector<float> narrowing_samples(float (*widen)(std::uint16_t)) {
  std::vector<float> s;
  const float inf = std::numeric_limits<float>::infinity();
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const float v = widen(static_cast<std::uint16_t>(b));
    s.push_back(v);
    if (std::isfinite(v)) {
      s.push_back(std::nextafter(v, inf));
      s.push_back(std::nextafter(v, -inf));
    }
    // The midpoint of v and the next value of the format away from zero (a float: it needs one
    // bit more than the format), and both its neighbours.
    const std::uint16_t next = static_cast<std::uint16_t>(b + 1);
    if ((b & 0x7FFFu) != 0x7FFFu && std::isfinite(v)) {
      const float w = widen(next);
      if (std::isfinite(w) && !std::isnan(w)) {
        const auto mid = static_cast<float>((static_cast<double>(v) + static_cast<double>(w)) / 2);
        s.push_back(mid);
        s.push_back(std::nextafter(mid, inf));
        s.push_back(std::nextafter(mid, -inf));
      }
    }
  }
  Random random{0x19u};
  for (int i = 0; i < 3000000; ++i)
    s.push_back(from_bits(static_cast<std::uint32_t>(random.next())));
  return s;
}

// ---- Widening -------------------------------------------------------------------------

TEST(DTypeLaw, WidenF16EqualsGccForEveryBitPattern) {
  int nans = 0;
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float got = widen_f16(bits), want = gcc_widen_f16(bits);
    if (!std::isnan(want)) {
      ASSERT_EQ(bits_of(got), bits_of(want)) << hex16(bits);
      continue;
    }
    // A NaN: the law widens bit for bit (sign, quiet bit and the 9 payload bits moved up by
    // 13), as dtype_law.h says ("exact"). GCC's conversion quiets a signalling NaN, so against
    // GCC only NaN-ness, the sign and the payload below the quiet bit are compared; against
    // the bit definition, everything.
    ++nans;
    ASSERT_TRUE(std::isnan(got)) << hex16(bits);
    EXPECT_EQ(bits_of(got) >> 31, bits_of(want) >> 31) << hex16(bits);
    EXPECT_EQ(bits_of(got) & 0x3FFFFFu, bits_of(want) & 0x3FFFFFu) << hex16(bits);
    const std::uint32_t defined =
        (std::uint32_t{bits & 0x8000u} << 16) | 0x7F800000u | (std::uint32_t{bits & 0x3FFu} << 13);
    EXPECT_EQ(bits_of(got), defined) << hex16(bits);
  }
  EXPECT_EQ(nans, 2 * 1023);
  // Known values, so the oracle itself is checked too.
  EXPECT_EQ(widen_f16(0x7BFFu), 65504.0f);
  EXPECT_EQ(widen_f16(0x0001u), 0x1p-24f);
  EXPECT_EQ(widen_f16(0x03FFu), 0x3FFp-24f);
  EXPECT_EQ(widen_f16(0x0400u), 0x1p-14f);
  EXPECT_EQ(bits_of(widen_f16(0x8000u)), 0x80000000u);
  EXPECT_EQ(bits_of(widen_f16(kCanonicalF16NanBits)), kCanonicalNanBits);
}

TEST(DTypeLaw, WidenBf16IsTheTopHalfForEveryBitPattern) {
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    ASSERT_EQ(bits_of(widen_bf16(static_cast<std::uint16_t>(b))), b << 16) << b;
  }
  EXPECT_EQ(bits_of(widen_bf16(kCanonicalBf16NanBits)), kCanonicalNanBits);
}

// ---- Narrowing ------------------------------------------------------------------------

::testing::AssertionResult narrow_f16_matches(float x) {
  const std::uint16_t got = narrow_f16(x);
  const std::uint16_t want = std::isnan(x) ? kCanonicalF16NanBits : gcc_narrow_f16(x);
  if (got == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "narrow_f16(" << describe(x) << ") = " << hex16(got) << ", want " << hex16(want);
}
::testing::AssertionResult narrow_bf16_matches(float x) {
  const std::uint16_t got = narrow_bf16(x), want = oracle_narrow_bf16(x);
  if (got == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "narrow_bf16(" << describe(x) << ") = " << hex16(got) << ", want " << hex16(want);
}

TEST(DTypeLaw, NarrowF16EqualsGccOverValuesNeighboursMidpointsAndRandomFloats) {
  std::size_t failures = 0;
  for (const float x : narrowing_samples(gcc_widen_f16)) {
    const auto r = narrow_f16_matches(x);
    if (!r && ++failures <= 10) ADD_FAILURE() << r.message();
  }
  EXPECT_EQ(failures, 0u);
}

TEST(DTypeLaw, NarrowF16EqualsGccOnAStrideThroughEveryBinadeItRounds) {
  // From below 2^-26 (flushed to ±0) to above 65520 (Inf): an odd stride reaches every residue
  // of the dropped bits many times over.
  std::size_t failures = 0;
  for (std::uint32_t b = 0x32000000u; b < 0x48000000u; b += 7) {
    for (const std::uint32_t sign : {0u, 0x80000000u}) {
      const auto r = narrow_f16_matches(from_bits(b | sign));
      if (!r && ++failures <= 10) ADD_FAILURE() << r.message();
    }
  }
  EXPECT_EQ(failures, 0u);
}

TEST(DTypeLaw, NarrowF16Boundaries) {
  struct Known {
    float x;
    std::uint16_t bits;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const Known known[] = {
      {65504.0f, 0x7BFFu},                        // the largest finite
      {std::nextafter(65520.0f, 0.0f), 0x7BFFu},  // just below the midpoint to Inf
      {65520.0f, 0x7C00u},                        // the midpoint: ties to even, and Inf is
      {std::nextafter(65520.0f, inf), 0x7C00u},   // even (65504 = 0x7BFF is odd)
      {65536.0f, 0x7C00u},
      {3.0e38f, 0x7C00u},
      {-65520.0f, 0xFC00u},
      {inf, 0x7C00u},
      {-inf, 0xFC00u},
      {0x1p-24f, 0x0001u},                        // the smallest subnormal
      {0x1p-25f, 0x0000u},                        // half of it: a tie, to even (0)
      {std::nextafter(0x1p-25f, 1.0f), 0x0001u},  // just above the tie
      {std::nextafter(0x1p-25f, 0.0f), 0x0000u},
      {0x3p-25f, 0x0002u},                        // 1.5 × 2^-24: a tie to even (2)
      {0x1p-26f, 0x0000u},                        // a quarter of the smallest subnormal
      {std::nextafter(0x1p-26f, 0.0f), 0x0000u},  // below 2^-26
      {0x1p-100f, 0x0000u},
      {-0x1p-26f, 0x8000u},  // −0 keeps its sign
      {-0x1p-24f, 0x8001u},
      {0x3FFp-24f, 0x03FFu},       // the largest subnormal
      {0x7FFp-25f, 0x0400u},       // between it and 2^-14: a tie, to even
      {0x1p-14f, 0x0400u},         // the smallest normal
      {1.0f + 0x1p-11f, 0x3C00u},  // a tie at 1: down to even
      {1.0f + 0x3p-11f, 0x3C02u},  // a tie: up to even
      {0.0f, 0x0000u},
      {-0.0f, 0x8000u},
  };
  for (const Known& k : known) {
    EXPECT_EQ(hex16(narrow_f16(k.x)), hex16(k.bits)) << describe(k.x);
    EXPECT_TRUE(narrow_f16_matches(k.x));  // and GCC says so too
  }
}

TEST(DTypeLaw, NarrowF16WritesEveryNanAsTheCanonicalNan) {
  Random random{7};
  for (int i = 0; i < 100000; ++i) {
    // sign, exponent all ones, any nonzero fraction
    std::uint32_t fraction = static_cast<std::uint32_t>(random.next()) & 0x7FFFFFu;
    if (fraction == 0) fraction = 1;
    const std::uint32_t sign = (i & 1) ? 0x80000000u : 0u;
    ASSERT_EQ(narrow_f16(from_bits(sign | 0x7F800000u | fraction)), kCanonicalF16NanBits);
  }
  for (const std::uint32_t b : {0x7F800001u, 0xFF800001u, 0x7FC00000u, 0xFFC00000u, 0x7FFFFFFFu,
                                0xFFFFFFFFu, 0x7FA00000u}) {
    EXPECT_EQ(narrow_f16(from_bits(b)), kCanonicalF16NanBits) << std::hex << b;
  }
}

TEST(DTypeLaw, NarrowBf16EqualsTheNearestCandidateOverValuesNeighboursMidpointsAndRandomFloats) {
  std::size_t failures = 0;
  for (const float x : narrowing_samples(oracle_widen_bf16)) {
    const auto r = narrow_bf16_matches(x);
    if (!r && ++failures <= 10) ADD_FAILURE() << r.message();
  }
  EXPECT_EQ(failures, 0u);
}

TEST(DTypeLaw, NarrowBf16EqualsTheNearestCandidateOnAStrideThroughEveryFloat) {
  std::size_t failures = 0;
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 61) {
    const auto r = narrow_bf16_matches(from_bits(static_cast<std::uint32_t>(b)));
    if (!r && ++failures <= 10) ADD_FAILURE() << r.message();
  }
  EXPECT_EQ(failures, 0u);
}

TEST(DTypeLaw, NarrowBf16Boundaries) {
  struct Known {
    float x;
    std::uint16_t bits;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const float max = 0x1.FEp127f;     // the largest finite bf16 (0x7F7F)
  const float to_inf = 0x1.FFp127f;  // the midpoint between it and 2^128
  const Known known[] = {
      {max, 0x7F7Fu},
      {std::nextafter(to_inf, 0.0f), 0x7F7Fu},
      {to_inf, 0x7F80u},  // a tie: 0x7F7F is odd, so up, to Inf
      {std::numeric_limits<float>::max(), 0x7F80u},
      {-to_inf, 0xFF80u},
      {inf, 0x7F80u},
      {-inf, 0xFF80u},
      {0x1p-133f, 0x0001u},  // the smallest bf16 subnormal
      {0x1p-134f, 0x0000u},  // half of it: a tie, to even
      {std::nextafter(0x1p-134f, 1.0f), 0x0001u},
      {0x3p-134f, 0x0002u},  // a tie, to even
      {0x1p-149f, 0x0000u},  // binary32's smallest subnormal
      {-0x1p-149f, 0x8000u},
      {0x1p-126f, 0x0080u},       // the smallest normal
      {1.0f + 0x1p-8f, 0x3F80u},  // a tie at 1: down to even
      {1.0f + 0x3p-8f, 0x3F82u},  // a tie: up to even
      {std::nextafter(1.0f + 0x1p-8f, 2.0f), 0x3F81u},
      {0.0f, 0x0000u},
      {-0.0f, 0x8000u},
  };
  for (const Known& k : known) {
    EXPECT_EQ(hex16(narrow_bf16(k.x)), hex16(k.bits)) << describe(k.x);
    EXPECT_EQ(hex16(oracle_narrow_bf16(k.x)), hex16(k.bits)) << "oracle: " << describe(k.x);
  }
}

TEST(DTypeLaw, NarrowBf16WritesEveryNanAsTheCanonicalNan) {
  Random random{11};
  for (int i = 0; i < 100000; ++i) {
    std::uint32_t fraction = static_cast<std::uint32_t>(random.next()) & 0x7FFFFFu;
    if (fraction == 0) fraction = 1;
    const std::uint32_t sign = (i & 1) ? 0x80000000u : 0u;
    ASSERT_EQ(narrow_bf16(from_bits(sign | 0x7F800000u | fraction)), kCanonicalBf16NanBits);
  }
  // NaNs whose top half alone would read as ±Inf or as another NaN.
  for (const std::uint32_t b : {0x7F800001u, 0xFF800001u, 0x7F80FFFFu, 0x7FFFFFFFu, 0xFFFFFFFFu,
                                0x7FC00001u, 0x7FBFFFFFu}) {
    EXPECT_EQ(narrow_bf16(from_bits(b)), kCanonicalBf16NanBits) << std::hex << b;
  }
}

// ---- Widened values and arrays ---------------------------------------------------------

TEST(DTypeLaw, RoundToDtypeHalfBitsAndWidenHalfAgreeWithTheOracles) {
  Random random{23};
  for (int i = 0; i < 200000; ++i) {
    const float x = from_bits(static_cast<std::uint32_t>(random.next()));
    // f32: the identity, NaN payloads included.
    ASSERT_EQ(bits_of(round_to_dtype(DType::kF32, x)), bits_of(x));
    const std::uint16_t f16 = std::isnan(x) ? kCanonicalF16NanBits : gcc_narrow_f16(x);
    const std::uint16_t bf16 = oracle_narrow_bf16(x);
    ASSERT_EQ(half_bits(DType::kF16, x), f16) << describe(x);
    ASSERT_EQ(half_bits(DType::kBF16, x), bf16) << describe(x);
    ASSERT_EQ(bits_of(round_to_dtype(DType::kF16, x)), bits_of(gcc_widen_f16(f16))) << describe(x);
    ASSERT_EQ(bits_of(round_to_dtype(DType::kBF16, x)), bits_of(oracle_widen_bf16(bf16)))
        << describe(x);
  }
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    ASSERT_EQ(bits_of(widen_half(DType::kBF16, bits)), bits_of(oracle_widen_bf16(bits)));
    const float f = widen_half(DType::kF16, bits);
    ASSERT_EQ(bits_of(f), bits_of(widen_f16(bits)));
    // Every value of a format is a fixed point of its rounding (NaNs: canonical).
    if (std::isnan(f)) {
      ASSERT_EQ(bits_of(round_to_dtype(DType::kF16, f)), kCanonicalNanBits);
    } else {
      ASSERT_EQ(bits_of(round_to_dtype(DType::kF16, f)), bits_of(gcc_widen_f16(bits))) << b;
      ASSERT_EQ(half_bits(DType::kF16, f), bits) << b;
    }
    const float g = oracle_widen_bf16(bits);
    if (!std::isnan(g)) {
      ASSERT_EQ(half_bits(DType::kBF16, g), bits) << b;
    }
  }
}

TEST(DTypeLaw, ArraysWidenAndNarrowElementwiseInLittleEndianBytes) {
  Random random{31};
  std::vector<float> values(5000);
  for (float& v : values) v = from_bits(static_cast<std::uint32_t>(random.next()));
  for (const DType dtype : {DType::kBF16, DType::kF16}) {
    std::vector<unsigned char> bytes(2 * values.size());
    narrow_into(values.data(), values.size(), dtype, bytes.data());
    const std::vector<unsigned char> of = dtype_bytes_of(values.data(), values.size(), dtype);
    ASSERT_EQ(of, bytes);
    std::vector<float> widened(values.size());
    widen_into(bytes.data(), values.size(), dtype, widened.data());
    std::vector<float> rounded = values;
    round_to_dtype_in_place(rounded.data(), rounded.size(), dtype);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const float x = values[i];
      const std::uint16_t want = dtype == DType::kF16
                                     ? (std::isnan(x) ? kCanonicalF16NanBits : gcc_narrow_f16(x))
                                     : oracle_narrow_bf16(x);
      const auto stored = static_cast<std::uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
      ASSERT_EQ(stored, want) << to_string(dtype) << " element " << i;
      const float back = dtype == DType::kF16 ? gcc_widen_f16(want) : oracle_widen_bf16(want);
      ASSERT_EQ(bits_of(widened[i]), bits_of(back)) << to_string(dtype) << " element " << i;
      ASSERT_EQ(bits_of(rounded[i]), bits_of(back)) << to_string(dtype) << " element " << i;
    }
  }
  // f32: the bytes are the values' own, copied.
  std::vector<unsigned char> f32 = dtype_bytes_of(values.data(), values.size(), DType::kF32);
  ASSERT_EQ(f32.size(), 4 * values.size());
  EXPECT_EQ(std::memcmp(f32.data(), values.data(), f32.size()), 0);
}

// ---- Names and sizes -------------------------------------------------------------------

TEST(DType, BytesNamesAndParsing) {
  EXPECT_EQ(dtype_bytes(DType::kF32), 4u);
  EXPECT_EQ(dtype_bytes(DType::kBF16), 2u);
  EXPECT_EQ(dtype_bytes(DType::kF16), 2u);
  EXPECT_EQ(to_string(DType::kF32), "f32");
  EXPECT_EQ(to_string(DType::kBF16), "bf16");
  EXPECT_EQ(to_string(DType::kF16), "f16");
  for (const DType d : kAllDTypes) EXPECT_EQ(parse_dtype(to_string(d)), d);
  for (const char* junk : {"", "F16", "BF16", "fp16", "half", "float16", "bfloat16", "f32 ", " f16",
                           "f16\n", "bf", "f", "f64", "bf16,", "f1", "f160"}) {
    EXPECT_FALSE(parse_dtype(junk).has_value()) << "'" << junk << "'";
  }
  EXPECT_FALSE(parse_dtype(std::string_view("f16\0", 4)).has_value());
}

}  // namespace
}  // namespace rv

// The bf16/f16 exact kernels' window (core/exact/half_window.h), held to the law on the CPU:
// where it passes, the kernels' arithmetic, done here in the same order and formats (the sum
// in binary64 from slot 0's addend, rounded to odd in binary32, then to the dtype), must give
// exact_reduce_stacked's bits. The data crowd the windows' edges: addends whose exponents span
// D − 2 … D + 3 binades, sums near the top of the format, ±0s, subnormals, ±Inf and NaN (which
// must be flagged). Each window must pass a real share of the elements and, past its edge, flag
// some, so that neither side of the check is empty.
#include "core/exact/half_window.h"

#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/dtype_law.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_reduction.h"

namespace rv::exact {
namespace {

constexpr std::uint32_t kWorlds[] = {1, 2, 3, 4, 5, 7, 8, 16, 100};

std::uint32_t shift_of(DType dtype) { return dtype == DType::kF16 ? 10 : 7; }
std::uint32_t top_exponent(DType dtype) { return dtype == DType::kF16 ? 30 : 254; }

// W addends of one element, as bits: exponents within `span` binades of a random base, with
// ±0s, subnormals, values at the format's top and, now and then, ±Inf or NaN.
std::vector<std::uint16_t> element_addends(DType dtype, std::uint32_t world, int span,
                                           std::mt19937_64& random) {
  const std::uint32_t shift = shift_of(dtype);
  const std::uint32_t top = top_exponent(dtype);
  const auto pick = [&](std::uint32_t bound) {
    return static_cast<std::uint32_t>(random() % (bound + 1));
  };
  const std::uint32_t kind = pick(99);
  const std::uint32_t base = kind < 8    ? top - pick(2)  // sums at the format's top
                             : kind < 14 ? pick(2)        // subnormals and the smallest normals
                                         : pick(top);
  std::vector<std::uint16_t> bits(world);
  for (std::uint32_t r = 0; r < world; ++r) {
    const std::uint32_t sign = pick(1) << 15;
    const std::uint32_t roll = pick(99);
    std::uint32_t exponent = 0;
    if (roll < 6) {
      bits[r] = static_cast<std::uint16_t>(sign);  // ±0
      continue;
    }
    if (roll >= 6 && roll < 12 && kind >= 50 && kind < 53) {
      bits[r] = static_cast<std::uint16_t>(sign | ((top + 1) << shift) | pick(1));  // ±Inf, NaN
      continue;
    }
    const int offset = static_cast<int>(pick(static_cast<std::uint32_t>(span)));
    exponent = static_cast<std::uint32_t>(
        std::max(0, std::min(static_cast<int>(top), static_cast<int>(base) - offset)));
    const std::uint32_t fraction = pick((1u << shift) - 1);
    bits[r] = static_cast<std::uint16_t>(sign | (exponent << shift) | fraction);
  }
  return bits;
}

// The lanes a unit keeps for one element (the other lane holds ±0s: never flagged).
bool flagged(const std::vector<std::uint16_t>& bits, LaneWindow window) {
  std::uint32_t largest = 0, smallest_less_one = 0xFFFFFFFFu;
  for (const std::uint16_t b : bits) {
    const std::uint32_t magnitude = b & 0x7FFFu;
    largest = lane_max(largest, magnitude);
    smallest_less_one = lane_min(smallest_less_one, (magnitude - 1u) & 0xFFFFu);
  }
  return (flagged_lanes(largest, smallest_less_one | 0xFFFF0000u, window) & 0x8000u) != 0;
}

bool is_special(DType dtype, std::uint16_t b) {
  return ((b & 0x7FFFu) >> shift_of(dtype)) > top_exponent(dtype);
}

int log2_ceiling(std::uint32_t world) {
  int k = 0;
  while ((std::uint32_t{1} << k) < world) ++k;
  return k;
}

// The double kernels' result for a bf16 sum whose window passed: the double rounded to odd in
// binary32, then to bf16 (the kernel's rounding before sm_90's one conversion).
std::uint16_t double_first_bf16_sum(const std::vector<std::uint16_t>& bits) {
  double sum = widen_bf16(bits[0]);
  for (std::size_t r = 1; r < bits.size(); ++r) sum += widen_bf16(bits[r]);
  const int mode = std::fegetround();
  std::fesetround(FE_TOWARDZERO);
  volatile double value = sum;
  const float truncated = static_cast<float>(value);
  std::fesetround(mode);
  const bool inexact = static_cast<double>(truncated) != sum;
  return narrow_bf16(float_from_bits(float_bits(truncated) | (inexact ? 1u : 0u)));
}

struct Tally {
  std::size_t passed = 0;
  std::size_t flagged = 0;
};

// Runs `count` elements through one window: every element that passes gets `arithmetic`'s
// result, which must be the law's; every element with a special addend must be flagged.
template <typename Arithmetic>
Tally hold_window(DType dtype, std::uint32_t world, Op op, LaneWindow window, int span,
                  std::size_t count, Arithmetic arithmetic, const std::string& name) {
  std::mt19937_64 random(world * 7919u + static_cast<unsigned>(op) * 31u +
                         (dtype == DType::kF16 ? 1u : 0u));
  std::vector<std::vector<std::uint16_t>> elements(count);
  std::vector<float> table(static_cast<std::size_t>(world) * count);
  for (std::size_t i = 0; i < count; ++i) {
    elements[i] = element_addends(dtype, world, span, random);
    for (std::uint32_t r = 0; r < world; ++r)
      table[r * count + i] = widen_half(dtype, elements[i][r]);
  }
  std::vector<float> law(count);
  exact_reduce_stacked(table.data(), world, count, count, op, law.data(), dtype);
  Tally tally;
  for (std::size_t i = 0; i < count; ++i) {
    bool special = false;
    for (const std::uint16_t b : elements[i]) special = special || is_special(dtype, b);
    if (flagged(elements[i], window)) {
      ++tally.flagged;
      continue;
    }
    EXPECT_FALSE(special) << name << ": an element with a special addend passed the window";
    const std::uint16_t expected = half_bits(dtype, law[i]);
    const std::uint16_t got = arithmetic(elements[i]);
    if (got != expected) {
      std::ostringstream addends;
      for (const std::uint16_t b : elements[i]) addends << std::hex << " 0x" << b;
      ADD_FAILURE() << name << " element " << i << ": expected 0x" << std::hex << expected
                    << ", got 0x" << got << "; addends" << addends.str();
      return tally;
    }
    ++tally.passed;
  }
  return tally;
}

std::string name_of(DType dtype, std::uint32_t world, Op op, int span) {
  std::ostringstream s;
  s << to_string(dtype) << " W=" << world << " " << (op == Op::kSum ? "sum" : "mean")
    << " span=" << span;
  return s.str();
}

TEST(HalfWindow, DoubleSumsThatPassAreTheLaw) {
  for (const std::uint32_t world : kWorlds) {
    const int c = log2_ceiling(world);
    for (const int span : {45 - c + 3, 45 - c}) {
      const std::string name = name_of(DType::kBF16, world, Op::kSum, span);
      const Tally tally = hold_window(DType::kBF16, world, Op::kSum, double_window_bf16(c), span,
                                      4000, double_first_bf16_sum, name);
      EXPECT_GT(tally.passed, 200u) << name;
      if (world > 1 && span > 45 - c) {
        EXPECT_GT(tally.flagged, 10u) << name;
      }
    }
  }
}

// Sums a double cannot hold, built to matter: 1 + 2^-8 is a bf16 midpoint, and the addends
// 1, 2^-8, −2^-k and (1 + 2^-7) × 2^-k sum exactly to it plus 2^-(k + 7), which the law rounds
// up to 1 + 2^-7. From k = 46 the double drops that last bit (the sum is near 1, whose double
// keeps bits down to 2^-52), lands on the midpoint and rounds to 1. Every such element must be
// flagged (at W = 4 the window flags k ≥ 43); the window passes the others, whose double result
// must be the law's. A window four binades wider passes k = 46 and fails here.
TEST(HalfWindow, MidpointSumsADoubleWouldMisroundAreFlagged) {
  for (const std::uint32_t world : {4u, 8u, 16u, 100u}) {
    const int c = log2_ceiling(world);
    std::size_t misrounded = 0, passed = 0;
    for (int k = 30; k <= 70; ++k) {
      const auto exponent = static_cast<std::uint32_t>(127 - k) << 7;
      std::vector<std::uint16_t> bits(world, 0x0000);
      bits[0] = 0x3F80;                                          // 1
      bits[1] = 0x3B80;                                          // 2^-8
      bits[2] = static_cast<std::uint16_t>(0x8000u | exponent);  // −2^-k
      bits[3] = static_cast<std::uint16_t>(exponent | 0x01u);    // (1 + 2^-7) × 2^-k
      std::vector<float> table(world);
      for (std::uint32_t r = 0; r < world; ++r) table[r] = widen_bf16(bits[r]);
      float law = 0;
      exact_reduce_stacked(table.data(), world, 1, 1, Op::kSum, &law, DType::kBF16);
      const bool wrong = double_first_bf16_sum(bits) != half_bits(DType::kBF16, law);
      if (wrong) ++misrounded;
      if (flagged(bits, double_window_bf16(c))) continue;
      ++passed;
      EXPECT_FALSE(wrong) << "W=" << world << " k=" << k << ": the window passed a sum the "
                          << "double rounds to the wrong side of a midpoint";
    }
    EXPECT_GT(misrounded, 0u) << "W=" << world << ": no element the double misrounds";
    EXPECT_GT(passed, 0u) << "W=" << world << ": the window flagged every element";
  }
}

TEST(HalfWindow, NegativeBinadesFlagEverything) {
  const LaneWindow window = lane_window(-1, 7, 0x7F80u);
  EXPECT_TRUE(flagged({0x3F80, 0x3F80}, window));
  EXPECT_FALSE(flagged({0x0000, 0x8000}, double_window_bf16(1)));  // ±0s only: never flagged
  EXPECT_TRUE(flagged({0x7F80, 0x3F80}, double_window_bf16(1)));   // ±Inf
  EXPECT_TRUE(flagged({0x7FC0, 0x3F80}, double_window_bf16(1)));   // NaN
}

}  // namespace
}  // namespace rv::exact

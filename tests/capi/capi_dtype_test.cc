// The C ABI's bf16 and f16 entry points (C API 3) against the core's straight references
// (core/oracle/reference.h), which share none of their code path: the fixed-order fold and
// the exact reduction over stacked 2-byte slots, the exact accumulator's add and finish in a
// dtype, the digest of a dtype's bytes, and the refusals of a dtype value that is none.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "capi/reduce_verify_c.h"
#include "core/digest/digest.h"
#include "core/dtype_law.h"
#include "core/oracle/reference.h"

namespace rv {
namespace {

using Halves = std::vector<std::uint16_t>;

// Half-precision bit patterns: mostly values of a few binades around 1 (so sums cancel and
// round), and some of every pattern (subnormals, ±0, ±Inf, NaNs with payloads).
Halves random_halves(DType dtype, std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Halves out(n);
  for (auto& bits : out) {
    const auto r = static_cast<std::uint32_t>(rng());
    if (r % 8 == 0) {
      bits = static_cast<std::uint16_t>(rng());
    } else if (dtype == DType::kBF16) {
      bits = static_cast<std::uint16_t>((r & 0x8000u) | ((120u + (r >> 20) % 16u) << 7) |
                                        ((r >> 4) & 0x7Fu));
    } else {
      bits = static_cast<std::uint16_t>((r & 0x8000u) | ((8u + (r >> 20) % 14u) << 10) |
                                        ((r >> 4) & 0x3FFu));
    }
  }
  return out;
}

std::vector<float> widened(DType dtype, const Halves& bits) {
  std::vector<float> out;
  for (std::uint16_t b : bits) out.push_back(widen_half(dtype, b));
  return out;
}

Halves as_halves(DType dtype, const std::vector<float>& values) {
  Halves out;
  for (float v : values) out.push_back(half_bits(dtype, v));
  return out;
}

int c_dtype(DType dtype) { return dtype == DType::kBF16 ? RV_DTYPE_BF16 : RV_DTYPE_F16; }

struct Table {
  std::uint32_t world;
  std::size_t n, stride;
  Halves stacked;                          // slot r at r × stride
  std::vector<std::vector<float>> arenas;  // the same addends, widened, for the oracle
};

Table random_table(DType dtype, std::uint32_t world, std::size_t n, std::size_t stride,
                   std::uint32_t seed) {
  Table t{world, n, stride, Halves(world * stride, 0xDEADu), {}};
  for (std::uint32_t r = 0; r < world; ++r) {
    const Halves slot = random_halves(dtype, n, seed + r);
    std::copy(slot.begin(), slot.end(), t.stacked.begin() + r * stride);
    t.arenas.push_back(widened(dtype, slot));
  }
  return t;
}

using Reduce = rv_status (*)(const void*, uint32_t, size_t, size_t, int, int, void*);

class CapiDTypeTest : public ::testing::TestWithParam<DType> {};

TEST_P(CapiDTypeTest, StackedReductionsEqualTheReferences) {
  const DType dtype = GetParam();
  for (const int op : {RV_OP_SUM, RV_OP_MEAN}) {
    const Op core_op = op == RV_OP_SUM ? Op::kSum : Op::kMean;
    // 2100 elements: two full exact blocks and a partial one; slots 7 elements apart.
    const Table t = random_table(dtype, 3, 2100, 2107, 11u + static_cast<std::uint32_t>(op));
    const struct {
      Reduce reduce;
      std::vector<float> expected;
    } cases[] = {
        {rv_fixed_order_reduce_stacked_dtype, reference_fixed_order(t.arenas, core_op, dtype)},
        {rv_exact_reduce_stacked_dtype, reference_exact(t.arenas, core_op, dtype)}};
    for (const auto& c : cases) {
      Halves out(t.n, 0xBEEFu);
      ASSERT_EQ(c.reduce(t.stacked.data(), t.world, t.stride, t.n, op, c_dtype(dtype), out.data()),
                RV_OK)
          << rv_last_error();
      EXPECT_EQ(out, as_halves(dtype, c.expected));
      // In place, into slot 0.
      Halves in_place = t.stacked;
      ASSERT_EQ(
          c.reduce(in_place.data(), t.world, t.stride, t.n, op, c_dtype(dtype), in_place.data()),
          RV_OK)
          << rv_last_error();
      EXPECT_EQ(Halves(in_place.begin(), in_place.begin() + t.n), out);
    }
  }
}

TEST_P(CapiDTypeTest, AccumulatorAddsAndFinishesInTheDType) {
  const DType dtype = GetParam();
  const std::size_t n = 2100;
  rv_accumulator* acc = nullptr;
  ASSERT_EQ(rv_accumulator_create(n, -1, &acc), RV_OK) << rv_last_error();
  std::vector<std::vector<float>> addends;
  for (std::uint32_t k = 0; k < 3; ++k) {
    const Halves values = random_halves(dtype, n, 100u + k);
    ASSERT_EQ(rv_accumulator_add_dtype(acc, values.data(), 0, n, c_dtype(dtype), nullptr), RV_OK)
        << rv_last_error();
    ASSERT_EQ(rv_accumulator_end_micro_batch(acc), RV_OK);
    addends.push_back(widened(dtype, values));
  }
  // One rank: the reduced words are this rank's own.
  size_t size = 0, digit_words = 0;
  ASSERT_EQ(rv_accumulator_agreement_size(acc, &size), RV_OK);
  std::vector<int64_t> words(size);
  ASSERT_EQ(rv_accumulator_agreement_words(acc, 7, RV_OP_MEAN, 3, words.data(), nullptr), RV_OK)
      << rv_last_error();
  ASSERT_EQ(rv_accumulator_plan(acc, words.data(), 1, &digit_words), RV_OK) << rv_last_error();
  std::vector<int64_t> digits(digit_words);
  ASSERT_EQ(rv_accumulator_export_digits(acc, digits.data(), nullptr), RV_OK) << rv_last_error();
  Halves mean(n, 0xBEEFu);
  ASSERT_EQ(rv_accumulator_finish_dtype(acc, digits.data(), RV_OP_MEAN, 3, c_dtype(dtype),
                                        mean.data(), nullptr),
            RV_OK)
      << rv_last_error();
  EXPECT_EQ(mean, as_halves(dtype, reference_exact(addends, Op::kMean, dtype)));
  Halves sum(n, 0xBEEFu);
  ASSERT_EQ(rv_accumulator_finish_dtype(acc, digits.data(), RV_OP_SUM, 0, c_dtype(dtype),
                                        sum.data(), nullptr),
            RV_OK)
      << rv_last_error();
  EXPECT_EQ(sum, as_halves(dtype, reference_exact(addends, Op::kSum, dtype)));
  Halves alone(n, 0xBEEFu);  // a world of one, finished without the words
  ASSERT_EQ(rv_accumulator_finish_alone(acc, RV_OP_MEAN, 3, c_dtype(dtype), alone.data(), nullptr),
            RV_OK)
      << rv_last_error();
  EXPECT_EQ(alone, mean);
  EXPECT_EQ(rv_accumulator_destroy(acc), RV_OK);
}

TEST_P(CapiDTypeTest, AccumulatorRowsAreTheRowByRowAdds) {
  // Three micro-batches of 1, 2 and 5 rows a stride of n + 5 apart (every pattern among the
  // values): rv_accumulator_add_rows gives the exact mean of all eight rows.
  const DType dtype = GetParam();
  const std::size_t n = 2 * 1024 + 300, stride = n + 5;
  rv_accumulator* acc = nullptr;
  ASSERT_EQ(rv_accumulator_create(n, -1, &acc), RV_OK) << rv_last_error();
  std::vector<std::vector<float>> addends;
  std::uint32_t seed = 500;
  for (const std::size_t rows : {1, 2, 5}) {
    Halves table(rows * stride, 0x7FC1u);  // the gaps: NaNs that no row may read
    for (std::size_t r = 0; r < rows; ++r) {
      const Halves row = random_halves(dtype, n, seed++);
      std::copy(row.begin(), row.end(), table.begin() + static_cast<std::ptrdiff_t>(r * stride));
      addends.push_back(widened(dtype, row));
    }
    ASSERT_EQ(
        rv_accumulator_add_rows(acc, table.data(), stride, rows, 0, n, c_dtype(dtype), nullptr),
        RV_OK)
        << rv_last_error();
    ASSERT_EQ(rv_accumulator_end_micro_batch(acc), RV_OK);
  }
  Halves mean(n, 0xBEEFu);
  ASSERT_EQ(rv_accumulator_finish_alone(acc, RV_OP_MEAN, 8, c_dtype(dtype), mean.data(), nullptr),
            RV_OK)
      << rv_last_error();
  EXPECT_EQ(mean, as_halves(dtype, reference_exact(addends, Op::kMean, dtype)));
  // Rows that overlap are refused by name; no rows add nothing.
  const Halves two(2 * n, 0);
  EXPECT_EQ(rv_accumulator_add_rows(acc, two.data(), n - 1, 2, 0, n, c_dtype(dtype), nullptr),
            RV_INPUT_ERROR);
  EXPECT_NE(std::string(rv_last_error()).find("row stride of " + std::to_string(n - 1)),
            std::string::npos)
      << rv_last_error();
  EXPECT_EQ(rv_accumulator_add_rows(acc, nullptr, n, 0, 0, n, c_dtype(dtype), nullptr), RV_OK);
  EXPECT_EQ(rv_accumulator_add_rows(acc, nullptr, n, 2, 0, n, c_dtype(dtype), nullptr),
            RV_INPUT_ERROR);
  EXPECT_EQ(rv_accumulator_destroy(acc), RV_OK);
}

TEST_P(CapiDTypeTest, DigestIsTheDTypesOwnBytes) {
  const DType dtype = GetParam();
  const Halves values = random_halves(dtype, 1001, 5);
  char hex[33];
  ASSERT_EQ(rv_digest_values(values.data(), values.size(), c_dtype(dtype), hex), RV_OK);
  EXPECT_EQ(std::string(hex), digest_bytes(values.data(), values.size() * 2).hex());
  // The core's digest of the widened values agrees wherever no NaN payload is canonicalised.
  Halves ordered = random_halves(dtype, 1001, 6);
  for (auto& b : ordered) b &= 0x3FFFu;  // exponents below the top: no Inf or NaN
  ASSERT_EQ(rv_digest_values(ordered.data(), ordered.size(), c_dtype(dtype), hex), RV_OK);
  const std::vector<float> wide = widened(dtype, ordered);
  EXPECT_EQ(std::string(hex), digest_values(wide.data(), wide.size(), dtype).hex());
}

INSTANTIATE_TEST_SUITE_P(HalfDTypes, CapiDTypeTest, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const auto& param_info) {
                           return std::string(to_string(param_info.param));
                         });

// bf16 addends 1, 2^-8 (half an ulp of 1) and 2^-40: the exact sum lies just above the
// midpoint between 1 and 1 + 2^-7, so exact rounds up; rounding through binary32 would first
// drop 2^-40 and then round the tie to even, 1, which is what fixed-order's binary32 fold
// followed by one rounding gives.
TEST(CapiDType, ExactRoundsOnceToTheDTypeNotThroughBinary32) {
  const Halves stacked = {0x3F80u, 0x3B80u, 0x2B80u};  // 1, 2^-8, 2^-40
  std::uint16_t exact = 0, fixed = 0;
  ASSERT_EQ(
      rv_exact_reduce_stacked_dtype(stacked.data(), 3, 1, 1, RV_OP_SUM, RV_DTYPE_BF16, &exact),
      RV_OK)
      << rv_last_error();
  ASSERT_EQ(rv_fixed_order_reduce_stacked_dtype(stacked.data(), 3, 1, 1, RV_OP_SUM, RV_DTYPE_BF16,
                                                &fixed),
            RV_OK)
      << rv_last_error();
  EXPECT_EQ(exact, 0x3F81u);  // 1 + 2^-7
  EXPECT_EQ(fixed, 0x3F80u);  // 1
}

TEST(CapiDType, F32IsTheBinary32EntryPoints) {
  const std::vector<float> stacked = {1.0f, 0.5f, 1e20f, 0.25f, -1e20f, 0.25f};
  float fixed[2], exact[2], fixed32[2], exact32[2];
  ASSERT_EQ(
      rv_fixed_order_reduce_stacked_dtype(stacked.data(), 3, 2, 2, RV_OP_SUM, RV_DTYPE_F32, fixed),
      RV_OK);
  ASSERT_EQ(rv_exact_reduce_stacked_dtype(stacked.data(), 3, 2, 2, RV_OP_SUM, RV_DTYPE_F32, exact),
            RV_OK);
  ASSERT_EQ(rv_fixed_order_reduce_stacked(stacked.data(), 3, 2, 2, RV_OP_SUM, fixed32), RV_OK);
  ASSERT_EQ(rv_exact_reduce_stacked(stacked.data(), 3, 2, 2, RV_OP_SUM, exact32), RV_OK);
  EXPECT_EQ(std::memcmp(fixed, fixed32, sizeof fixed), 0);
  EXPECT_EQ(std::memcmp(exact, exact32, sizeof exact), 0);
  EXPECT_EQ(exact[0], 1.0f);
  EXPECT_EQ(fixed[0], 0.0f);
  char hex[33], hex32[33];
  ASSERT_EQ(rv_digest_values(stacked.data(), 6, RV_DTYPE_F32, hex), RV_OK);
  ASSERT_EQ(rv_digest_floats(stacked.data(), 6, hex32), RV_OK);
  EXPECT_STREQ(hex, hex32);
}

TEST(CapiDType, AnotherDTypeValueIsRefusedByName) {
  const std::uint16_t in[2] = {0x3F80u, 0x3F80u};
  std::uint16_t out = 0xBEEFu;
  char hex[33];
  rv_accumulator* acc = nullptr;
  ASSERT_EQ(rv_accumulator_create(1, -1, &acc), RV_OK);
  int64_t summed[8] = {};
  const struct {
    const char* function;
    rv_status status;
  } calls[] = {
      {"rv_fixed_order_reduce_stacked_dtype",
       rv_fixed_order_reduce_stacked_dtype(in, 2, 1, 1, RV_OP_SUM, 3, &out)},
      {"rv_exact_reduce_stacked_dtype",
       rv_exact_reduce_stacked_dtype(in, 2, 1, 1, RV_OP_SUM, 3, &out)},
      {"rv_digest_values", rv_digest_values(in, 2, 3, hex)},
      {"rv_accumulator_add_dtype", rv_accumulator_add_dtype(acc, in, 0, 1, 3, nullptr)},
      {"rv_accumulator_finish_dtype",
       rv_accumulator_finish_dtype(acc, summed, RV_OP_SUM, 0, 3, &out, nullptr)},
  };
  for (const auto& c : calls) {
    EXPECT_EQ(c.status, RV_INPUT_ERROR) << c.function;
  }
  // Each message names the value (the last call's is current; one more to read each).
  ASSERT_EQ(rv_fixed_order_reduce_stacked_dtype(in, 2, 1, 1, RV_OP_SUM, -1, &out), RV_INPUT_ERROR);
  EXPECT_NE(std::string(rv_last_error()).find("dtype -1"), std::string::npos) << rv_last_error();
  EXPECT_NE(std::string(rv_last_error()).find("rv_fixed_order_reduce_stacked_dtype"),
            std::string::npos);
  EXPECT_EQ(out, 0xBEEFu);  // nothing written
  EXPECT_EQ(rv_accumulator_destroy(acc), RV_OK);
}

TEST(CapiDType, HalfSlotsAreCheckedInTheirOwnBytes) {
  // Slots of 4 two-byte elements, 4 apart: an output 2 elements past slot 0 overlaps it (in
  // bytes of a float table it would not be checked the same way).
  Halves stacked(8, 0x3F80u);
  EXPECT_EQ(rv_fixed_order_reduce_stacked_dtype(stacked.data(), 2, 4, 4, RV_OP_SUM, RV_DTYPE_BF16,
                                                stacked.data() + 2),
            RV_INPUT_ERROR);
  EXPECT_NE(std::string(rv_last_error()).find("overlaps slot 0"), std::string::npos)
      << rv_last_error();
  EXPECT_EQ(rv_fixed_order_reduce_stacked_dtype(stacked.data(), 2, 3, 4, RV_OP_SUM, RV_DTYPE_F16,
                                                stacked.data() + 8),
            RV_INPUT_ERROR);  // slot_stride < n
}

TEST(CapiDType, FinishAloneIsAWorldOfOnesThreeRounds) {
  const std::size_t n = 3 * 1024 + 5;
  rv_accumulator* acc = nullptr;
  ASSERT_EQ(rv_accumulator_create(n, -1, &acc), RV_OK) << rv_last_error();
  std::vector<std::vector<float>> addends;
  for (std::uint32_t k = 0; k < 4; ++k) {
    addends.push_back(widened(DType::kBF16, random_halves(DType::kBF16, n, 300u + k)));
    ASSERT_EQ(rv_accumulator_add(acc, addends.back().data(), 0, n, nullptr), RV_OK);
    ASSERT_EQ(rv_accumulator_end_micro_batch(acc), RV_OK);
  }
  // No agreement, plan or words: the mean over the four micro-batches.
  std::vector<float> alone(n, -1.0f);
  ASSERT_EQ(rv_accumulator_finish_alone(acc, RV_OP_MEAN, 4, RV_DTYPE_F32, alone.data(), nullptr),
            RV_OK)
      << rv_last_error();
  const std::vector<float> mean = reference_exact(addends, Op::kMean);
  EXPECT_EQ(0, std::memcmp(alone.data(), mean.data(), n * sizeof(float)));
  EXPECT_EQ(rv_accumulator_finish_alone(acc, RV_OP_MEAN, 0, RV_DTYPE_F32, alone.data(), nullptr),
            RV_INPUT_ERROR);
  EXPECT_NE(std::string(rv_last_error()).find("mean_over = 0"), std::string::npos)
      << rv_last_error();
  EXPECT_EQ(rv_accumulator_destroy(acc), RV_OK);
}

TEST(CapiDType, TheVersionIsFive) { EXPECT_EQ(rv_api_version(), 5); }

}  // namespace
}  // namespace rv

// The exact contract for bf16 and f16 (docs/DESIGN.md §2.5) against GNU MPFR: the true sum of
// the widened addends (mpfr_sum, exact) rounded once to the format's precision with its
// subnormals and overflow (mpfr_oracle.h's MpfrFormat; the mean: the true sum / W, rounded
// once). Every path is held to it element by element: the straight reference
// (reference_exact), the windowed dataflow (exact_reduce_stacked), EmulatedWorld's exact
// dataflow under shuffled delivery orders, the streaming case reduction, and the live
// ExactReducer over the in-process world (and over Gloo for the hand-made cases).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/case_id.h"
#include "core/dtype_law.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_reduction.h"
#include "core/oracle/case_reduction.h"
#include "core/oracle/emulated_world.h"
#include "core/oracle/reference.h"
#include "core/reducer/exact_reducer.h"
#include "mpfr_oracle.h"
#include "tests/thread_world/world_transport.h"

namespace rv {
namespace {

using Arenas = std::vector<std::vector<float>>;

const MpfrFormat& format_of(DType dtype) {
  return dtype == DType::kF16 ? kMpfrFloat16 : kMpfrBFloat16;
}

Arenas make_arenas(std::uint32_t w, std::size_t n, Distribution dist, std::uint64_t seed,
                   DType dtype) {
  Arenas arenas;
  for (std::uint32_t r = 0; r < w; ++r) {
    arenas.push_back(generate_arena({1, dist, seed, dtype}, r, n));
  }
  return arenas;
}

std::vector<float> stacked_reduce(const Arenas& arenas, Op op, DType dtype) {
  const auto w = static_cast<std::uint32_t>(arenas.size());
  const std::size_t n = arenas[0].size();
  std::vector<float> stacked(w * n), out(n);
  for (std::uint32_t r = 0; r < w; ++r) {
    std::copy(arenas[r].begin(), arenas[r].end(), stacked.begin() + r * n);
  }
  exact_reduce_stacked(stacked.data(), w, n, n, op, out.data(), dtype);
  return out;
}

// Every rank's result of the live reducer over the in-process world.
std::vector<std::vector<float>> reducer_results(const Arenas& arenas, Op op, DType dtype,
                                                test::WorldTransport transport) {
  const auto w = static_cast<std::uint32_t>(arenas.size());
  std::vector<std::vector<float>> results(w);
  auto outcomes = test::run_ranks_over(transport, w, [&](std::uint32_t rank, Transport& t) {
    // Small pieces, so a case crosses several sum rounds.
    ExactReducer reducer(t, host_exact_device(), ExactOptions{exact::kBlock});
    std::vector<float> arena = arenas[rank];
    reducer.all_reduce(arena.data(), arena.size(), op, dtype);
    results[rank] = std::move(arena);
  });
  test::expect_no_errors(outcomes);
  return results;
}

std::vector<std::uint32_t> oracle_of(const Arenas& arenas, Op op, DType dtype) {
  std::vector<std::uint32_t> want(arenas[0].size());
  std::vector<float> addends(arenas.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    for (std::size_t r = 0; r < arenas.size(); ++r) addends[r] = arenas[r][i];
    want[i] = mpfr_exact_bits(addends, op, format_of(dtype));
  }
  return want;
}

// AssertionResult formats each << on its own, so a std::hex would not carry over.
std::string hex32(std::uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

::testing::AssertionResult equals_oracle(const std::vector<std::uint32_t>& want,
                                         const std::vector<float>& result, const char* what) {
  if (result.size() != want.size()) return ::testing::AssertionFailure() << what << ": size";
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (float_bits(result[i]) != want[i]) {
      return ::testing::AssertionFailure()
             << what << " element " << i << ": " << hex32(float_bits(result[i]))
             << " but MPFR gives " << hex32(want[i]);
    }
  }
  return ::testing::AssertionSuccess();
}

// The live reducer runs over the in-process world, and over Gloo too when `every_transport`.
void expect_all_paths_equal_oracle(const Arenas& arenas, Op op, DType dtype,
                                   const std::string& name, bool every_transport = false) {
  SCOPED_TRACE(name + " dtype=" + std::string(to_string(dtype)) +
               " op=" + std::string(to_string(op)) + " W=" + std::to_string(arenas.size()));
  const std::vector<std::uint32_t> want = oracle_of(arenas, op, dtype);
  EXPECT_TRUE(equals_oracle(want, reference_exact(arenas, op, dtype), "reference_exact"));
  EXPECT_TRUE(equals_oracle(want, stacked_reduce(arenas, op, dtype), "exact_reduce_stacked"));
  const auto w = static_cast<std::uint32_t>(arenas.size());
  for (std::uint64_t trial = 0; trial < 2; ++trial) {
    Arenas emulated = arenas;
    EmulatedWorld(w).all_reduce_exact(
        emulated, op, trial == 0 ? DeliveryOrders{} : shuffled_delivery_orders(w, 9, trial), dtype);
    EXPECT_TRUE(equals_oracle(want, emulated[w - 1], "EmulatedWorld"));
  }
  for (const test::WorldTransport transport : test::world_transports()) {
    if (!every_transport && transport != test::WorldTransport::kInProcess) continue;
    const auto live = reducer_results(arenas, op, dtype, transport);
    for (std::uint32_t r = 0; r < w; ++r) {
      EXPECT_TRUE(equals_oracle(want, live[r], "ExactReducer"))
          << test::to_string(transport) << " rank " << r;
    }
  }
}

class ExactHalfOracle : public ::testing::TestWithParam<DType> {};

TEST_P(ExactHalfOracle, EveryDistributionWorldAndOp) {
  const DType dtype = GetParam();
  for (const Distribution dist : kAllDistributions) {
    for (const std::uint32_t w : {1u, 2u, 3u, 5u, 8u, 16u}) {
      for (const Op op : {Op::kSum, Op::kMean}) {
        // 2 blocks and a short third: windows and block edges.
        expect_all_paths_equal_oracle(make_arenas(w, 2 * exact::kBlock + 77, dist, 5 + w, dtype),
                                      op, dtype, std::string(to_string(dist)));
      }
    }
  }
}

// Columns of hand-made addends: element i of rank r is columns[i][r].
Arenas from_columns(const std::vector<std::vector<float>>& columns) {
  Arenas arenas(columns[0].size());
  for (const auto& column : columns) {
    for (std::size_t r = 0; r < column.size(); ++r) arenas[r].push_back(column[r]);
  }
  return arenas;
}

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST_P(ExactHalfOracle, OverflowSubnormalsTiesCancellationsZerosAndSpecials) {
  const DType dtype = GetParam();
  const bool f16 = dtype == DType::kF16;
  const float max = f16 ? 65504.0f : 0x1.FEp127f;  // the largest finite
  const float half_ulp = f16 ? 16.0f : 0x1p119f;   // half an ulp of max: max + it ties to Inf
  const float tiny = f16 ? 0x1p-24f : 0x1p-133f;   // the smallest subnormal
  const float min_normal = f16 ? 0x1p-14f : 0x1p-126f;
  const float half_one_ulp = f16 ? 0x1p-11f : 0x1p-8f;  // half an ulp of 1
  const float big = f16 ? 32768.0f : 0x1p100f;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::vector<float>> columns = {
      {max, max, -max},              // 0: exactly max, though a fold overflows first
      {max, max, max},               // 1: the sum overflows to +Inf; the mean is max
      {-max, -max, 0.0f},            // 2: −Inf; the mean −(2/3)max
      {max, half_ulp, 0.0f},         // 3: the midpoint to Inf: ties to even, Inf
      {max, half_ulp, -tiny},        // 4: just below it: max
      {tiny, tiny, tiny},            // 5: 3 × the smallest subnormal
      {tiny, 0.0f, 0.0f},            // 6: mean tiny / 3: below half of it, +0
      {tiny, tiny, 0.0f},            // 7: mean (2/3) tiny: rounds up to tiny
      {min_normal, -tiny, 0.0f},     // 8: the largest subnormal
      {1.0f, half_one_ulp, 0.0f},    // 9: a tie at 1: to even (1)
      {1.0f, half_one_ulp, tiny},    // 10: just above the tie: up
      {big, 1.0f, -big},             // 11: a huge cancellation keeps the 1
      {big, -big, tiny},             // 12: only the subnormal survives
      {-0.0f, -0.0f, -0.0f},         // 13: −0
      {-0.0f, 0.0f, -0.0f},          // 14: +0
      {1.0f, -1.0f, -0.0f},          // 15: an exact zero of nonzero addends: +0
      {kInf, 1.0f, max},             // 16: +Inf
      {-kInf, max, max},             // 17: −Inf
      {kInf, -kInf, 0.0f},           // 18: NaN
      {nan, 1.0f, 2.0f},             // 19: NaN
      {-nan, kInf, kInf},            // 20: NaN
      {0.09375f, 0.1875f, 0.3125f},  // 21: an ordinary sum (mean inexact)
      {-tiny, 0.0f, 0.0f},           // 22: mean −tiny / 3 rounds to −0
  };
  const Arenas arenas = from_columns(columns);
  for (const Op op : {Op::kSum, Op::kMean}) {
    expect_all_paths_equal_oracle(arenas, op, dtype, "hand-made", true);
  }
  // Values known by hand, so the oracle itself is checked.
  const std::vector<float> sum = reference_exact(arenas, Op::kSum, dtype);
  const std::vector<float> mean = reference_exact(arenas, Op::kMean, dtype);
  EXPECT_EQ(float_bits(sum[0]), float_bits(max));
  EXPECT_EQ(float_bits(sum[1]), 0x7F800000u);
  EXPECT_EQ(float_bits(mean[1]), float_bits(max));
  EXPECT_EQ(float_bits(sum[2]), 0xFF800000u);
  EXPECT_EQ(float_bits(sum[3]), 0x7F800000u);
  EXPECT_EQ(float_bits(sum[4]), float_bits(max));
  EXPECT_EQ(float_bits(sum[5]), float_bits(3 * tiny));
  EXPECT_EQ(float_bits(mean[6]), 0u);
  EXPECT_EQ(float_bits(mean[7]), float_bits(tiny));
  EXPECT_EQ(float_bits(sum[8]), float_bits(min_normal - tiny));
  EXPECT_EQ(float_bits(sum[9]), float_bits(1.0f));
  EXPECT_EQ(float_bits(sum[10]), float_bits(1.0f + 2 * half_one_ulp));
  EXPECT_EQ(float_bits(sum[11]), float_bits(1.0f));
  EXPECT_EQ(float_bits(sum[12]), float_bits(tiny));
  EXPECT_EQ(float_bits(sum[13]), 0x80000000u);
  EXPECT_EQ(float_bits(sum[14]), 0u);
  EXPECT_EQ(float_bits(sum[15]), 0u);
  EXPECT_EQ(float_bits(sum[18]), kCanonicalNanBits);
  EXPECT_EQ(float_bits(mean[22]), 0x80000000u);
}

// A mean that double rounding would get wrong: the true mean lies just above a midpoint of the
// format while its binary32 rounding is that midpoint exactly (so binary32-then-format would
// round to even, down).
TEST_P(ExactHalfOracle, MeanRoundsOnceNotThroughBinary32) {
  const DType dtype = GetParam();
  const bool f16 = dtype == DType::kF16;
  const float u = f16 ? 0x1p-10f : 0x1p-7f;  // an ulp of 1
  // Values of the format whose sum is 3 + 1.5u ± 2^-24: the mean is 1 + u/2 ± 2^-24 / 3, off
  // the tie 1 + u/2 by less than half a binary32 ulp, so binary32 rounds it to the tie.
  const float d = 0x1p-24f;
  const Arenas arenas =
      from_columns({{2.0f + 2 * u, 1.0f - u / 2, d}, {2.0f + 2 * u, 1.0f - u / 2, -d}});
  const float half_one_ulp = u / 2;
  expect_all_paths_equal_oracle(arenas, Op::kMean, dtype, "double rounding", true);
  const std::vector<float> mean = reference_exact(arenas, Op::kMean, dtype);
  // Element 0: above the tie, up (through binary32 it would tie and go down to even).
  // Element 1: below the tie, down.
  EXPECT_EQ(float_bits(mean[0]), float_bits(1.0f + 2 * half_one_ulp));
  EXPECT_EQ(float_bits(mean[1]), float_bits(1.0f));
}

// Larger worlds (wider windows, more limbs, sums far past the format's largest finite) through
// the reference and the windowed dataflow.
TEST_P(ExactHalfOracle, LargeWorlds) {
  const DType dtype = GetParam();
  for (const std::uint32_t w : {64u, 257u, 4096u}) {
    for (const Distribution dist : {Distribution::kWide, Distribution::kCancel}) {
      const Arenas arenas = make_arenas(w, exact::kBlock + 3, dist, w, dtype);
      for (const Op op : {Op::kSum, Op::kMean}) {
        SCOPED_TRACE(std::string(to_string(dist)) + " dtype=" + std::string(to_string(dtype)) +
                     " op=" + std::string(to_string(op)) + " W=" + std::to_string(w));
        const std::vector<std::uint32_t> want = oracle_of(arenas, op, dtype);
        EXPECT_TRUE(equals_oracle(want, reference_exact(arenas, op, dtype), "reference_exact"));
        EXPECT_TRUE(equals_oracle(want, stacked_reduce(arenas, op, dtype), "exact_reduce_stacked"));
      }
    }
  }
}

// A case id with the dtype, reduced by the streaming re-derivation `check` uses (blocks of
// 16 Ki elements), equals MPFR's results across the block boundaries.
TEST_P(ExactHalfOracle, StreamedCaseReduction) {
  const DType dtype = GetParam();
  for (const Distribution dist : {Distribution::kWide, Distribution::kSpecial}) {
    for (const Op op : {Op::kSum, Op::kMean}) {
      CaseId id;
      id.contract = Contract::kExact;
      id.op = op;
      id.dtype = dtype;
      id.world = 3;
      id.count = 2 * 16384 + 1029;
      id.dist = dist;
      id.seed = 12;
      std::vector<float> streamed;
      stream_reference_reduction(id, [&](const float* values, std::size_t count) {
        streamed.insert(streamed.end(), values, values + count);
      });
      SCOPED_TRACE(format_case_id(id));
      EXPECT_TRUE(equals_oracle(oracle_of(generate_case_arenas(id), op, dtype), streamed,
                                "stream_reference_reduction"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, ExactHalfOracle, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const auto& param_info) {
                           return std::string(to_string(param_info.param));
                         });

}  // namespace
}  // namespace rv

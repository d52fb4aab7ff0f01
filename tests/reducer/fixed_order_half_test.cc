// The fixed-order contract for bf16 and f16 (docs/DESIGN.md §2.5), held to a straight reference
// written here that shares no code with the fold or the element law: per element, the W
// addends (values of the format, widened: exact) added in ascending rank order in binary32
// through a volatile accumulator (and the build's -ffp-contract=off), the mean scaled by
// 1.0f / W in binary32, then rounded once to the format by tests/support/half_oracle.h (GCC's
// _Float16, or the bf16 nearest-candidate search). The live FixedOrderReducer must give
// exactly those bits on every rank, over each test-world transport, for W in {1, 2, 3, 4, 8},
// counts that leave empty and uneven shards, every distribution (the special values
// included) and both ops; and so must the oracle's reference_fixed_order and EmulatedWorld.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/arena.h"
#include "core/case_id.h"
#include "core/oracle/case_reduction.h"
#include "core/oracle/emulated_world.h"
#include "core/oracle/reference.h"
#include "core/reducer/fixed_order_reducer.h"
#include "tests/support/bit_difference.h"
#include "tests/support/half_oracle.h"
#include "tests/thread_world/world_transport.h"

namespace rv::test {
namespace {

using Arenas = std::vector<std::vector<float>>;

std::vector<float> straight_fixed_order(const Arenas& arenas, Op op, DType dtype) {
  const auto w = static_cast<std::uint32_t>(arenas.size());
  std::vector<float> out(arenas[0].size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    volatile float acc = arenas[0][i];  // from addend 0 itself: a sum of −0s stays −0
    for (std::uint32_t r = 1; r < w; ++r) acc = acc + arenas[r][i];
    float sum = acc;
    if (op == Op::kMean) {
      volatile float scale = 1.0f / static_cast<float>(w);
      sum = sum * scale;
    }
    out[i] = oracle_round(dtype == DType::kF16, sum);
  }
  return out;
}

Arenas arenas_of(DType dtype, Distribution dist, std::uint32_t w, std::size_t n,
                 std::uint64_t seed) {
  Arenas arenas;
  for (std::uint32_t r = 0; r < w; ++r)
    arenas.push_back(generate_arena({1, dist, seed, dtype}, r, n));
  return arenas;
}

struct Case {
  DType dtype;
  Distribution dist;
  Op op;
  Arenas arenas;
  std::vector<float> expected;
  std::string name() const {
    return std::string(to_string(dtype)) + " " + std::string(to_string(dist)) + " " +
           std::string(to_string(op)) + " n=" + std::to_string(arenas[0].size());
  }
};

std::vector<Case> cases_for(std::uint32_t w) {
  std::vector<Case> cases;
  for (const std::size_t n :
       {std::size_t{0}, std::size_t{1}, std::size_t{w - 1}, std::size_t{1000}, std::size_t{4099}}) {
    for (const DType dtype : {DType::kBF16, DType::kF16}) {
      for (const Distribution dist : kAllDistributions) {
        for (const Op op : {Op::kSum, Op::kMean}) {
          Case c{dtype, dist, op, arenas_of(dtype, dist, w, n, 40 + w), {}};
          c.expected = straight_fixed_order(c.arenas, op, dtype);
          cases.push_back(std::move(c));
        }
      }
    }
  }
  return cases;
}

class FixedOrderHalf : public ::testing::TestWithParam<std::tuple<WorldTransport, std::uint32_t>> {
};

TEST_P(FixedOrderHalf, EveryRankHoldsTheStraightReferenceBits) {
  const auto [transport, w] = GetParam();
  const std::vector<Case> cases = cases_for(w);
  for (const Case& c : cases) {
    const std::vector<float> reference = reference_fixed_order(c.arenas, c.op, c.dtype);
    const auto i = first_bit_difference(c.expected.data(), reference.data(), reference.size());
    EXPECT_FALSE(i) << c.name() << " reference_fixed_order: "
                    << describe_difference(c.expected.data(), reference.data(), *i);
    // The oracle's emulated dataflow, in ascending and in a shuffled delivery order.
    for (std::uint64_t trial = 0; trial < 2; ++trial) {
      Arenas emulated = c.arenas;
      EmulatedWorld(w).all_reduce(
          emulated, c.op, trial == 0 ? DeliveryOrders{} : shuffled_delivery_orders(w, 5, trial),
          c.dtype);
      for (std::uint32_t r = 0; r < w; ++r) {
        const auto e =
            first_bit_difference(c.expected.data(), emulated[r].data(), emulated[r].size());
        EXPECT_FALSE(e) << c.name() << " EmulatedWorld order " << trial << " rank " << r << ": "
                        << describe_difference(c.expected.data(), emulated[r].data(), *e);
      }
    }
  }
  std::vector<std::vector<std::string>> verdicts(cases.size(), std::vector<std::string>(w));
  auto outcomes = run_ranks_over(transport, w, [&](std::uint32_t rank, Transport& t) {
    FixedOrderReducer reducer(t, host_fixed_order_device());
    // Tiny pieces too (a 4 KiB table), so a shard is folded and sent back piece by piece.
    FixedOrderReducer pieced(t, host_fixed_order_device(), FixedOrderOptions{4096, true});
    for (std::size_t k = 0; k < cases.size(); ++k) {
      for (FixedOrderReducer* r : {&reducer, &pieced}) {
        std::vector<float> arena = cases[k].arenas[rank];
        r->all_reduce(arena.data(), arena.size(), cases[k].op, cases[k].dtype);
        if (auto i = first_bit_difference(cases[k].expected.data(), arena.data(), arena.size())) {
          verdicts[k][rank] += std::string(r == &pieced ? "pieced: " : "") +
                               describe_difference(cases[k].expected.data(), arena.data(), *i);
        }
      }
    }
  });
  expect_no_errors(outcomes);
  for (std::size_t k = 0; k < cases.size(); ++k) {
    for (std::uint32_t r = 0; r < w; ++r) {
      EXPECT_EQ(verdicts[k][r], "") << cases[k].name() << " rank " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Worlds, FixedOrderHalf,
    ::testing::Combine(::testing::ValuesIn(world_transports()),
                       ::testing::Values(1u, 2u, 3u, 4u, 8u)),
    [](const ::testing::TestParamInfo<std::tuple<WorldTransport, std::uint32_t>>& param) {
      return to_string(std::get<0>(param.param)) + "_w" + std::to_string(std::get<1>(param.param));
    });

// A case id with the dtype, reduced by the streaming re-derivation `check` uses (blocks of
// 16 Ki elements), equals the straight reference across the block boundaries.
TEST(FixedOrderHalfReference, StreamedCaseReduction) {
  for (const DType dtype : {DType::kBF16, DType::kF16}) {
    for (const Distribution dist : kAllDistributions) {
      for (const Op op : {Op::kSum, Op::kMean}) {
        CaseId id;
        id.op = op;
        id.dtype = dtype;
        id.world = 5;
        id.count = 2 * 16384 + 1029;
        id.dist = dist;
        id.seed = 4;
        std::vector<float> streamed;
        stream_reference_reduction(id, [&](const float* values, std::size_t count) {
          streamed.insert(streamed.end(), values, values + count);
        });
        const std::vector<float> want = straight_fixed_order(generate_case_arenas(id), op, dtype);
        ASSERT_EQ(streamed.size(), want.size());
        const auto i = first_bit_difference(want.data(), streamed.data(), want.size());
        EXPECT_FALSE(i) << format_case_id(id) << ": "
                        << describe_difference(want.data(), streamed.data(), *i);
      }
    }
  }
}

// The straight reference is not the exact answer, and not binary32's: it folds in binary32 and
// rounds once, so it can be told apart from a fold that rounded to the format after every
// addition (what a half-precision library does). Shown on a known case: f16 1 + 2^-11 + 2^-11.
TEST(FixedOrderHalfReference, RoundsOnceAfterTheBinary32Fold) {
  const Arenas arenas = {{1.0f, 2048.0f}, {0x1p-11f, 1.0f}, {0x1p-11f, 2.0f}};
  // Element 0: binary32 gives 1 + 2^-10 exactly (f16 0x3C01); per-addition rounding would
  // tie 1 + 2^-11 down to 1 and stay there. Element 1: 2051 lies halfway between 2050 and 2052
  // (f16's ulp there is 2): to even, 2052; per addition, 2049 ties down to 2048, then 2050.
  const std::vector<float> sum = straight_fixed_order(arenas, Op::kSum, DType::kF16);
  EXPECT_EQ(sum[0], 1.0f + 0x1p-10f);
  EXPECT_EQ(sum[1], 2052.0f);
  const std::vector<float> reference = reference_fixed_order(arenas, Op::kSum, DType::kF16);
  EXPECT_EQ(oracle_bits(reference[0]), oracle_bits(sum[0]));
  EXPECT_EQ(oracle_bits(reference[1]), oracle_bits(sum[1]));
}

}  // namespace
}  // namespace rv::test

// The fixed-order reducer, thread per rank over every test-world transport (in-process, and
// Gloo when built): every rank ends with exactly the bits of the straight reference fold (the
// contract's oracle), for every W, N (0, 1, N < W, a remainder), distribution and op; scratch
// is reused across calls of other sizes; a length mismatch is a named error, not an abort.
// And the check can fail: a reducer that folded the copies in arrival order instead of rank
// order is caught on a cancel case.
#include "core/reducer/fixed_order_reducer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <tuple>

#include "core/error.h"
#include "core/oracle/case_reduction.h"
#include "core/oracle/emulated_world.h"
#include "tests/reducer/reducer_cases.h"
#include "tests/support/bit_difference.h"
#include "tests/thread_world/world_transport.h"

namespace rv::test {
namespace {

// Runs every case through a FixedOrderReducer on each rank (one reducer per rank, reused
// across the cases) and returns, per case and rank, "" or what differed from `expected`.
using DeviceOfRank = std::function<FixedOrderDevice&(std::uint32_t rank)>;

FixedOrderDevice& host_for_every_rank(std::uint32_t) { return host_fixed_order_device(); }

std::vector<std::vector<std::string>> reduce_and_compare(
    WorldTransport transport, std::uint32_t world, const std::vector<ExpectedCase>& cases,
    const DeviceOfRank& device_of = host_for_every_rank,
    std::optional<FixedOrderOptions> options = std::nullopt) {
  std::vector<std::vector<std::string>> verdicts(cases.size(), std::vector<std::string>(world));
  auto outcomes = run_ranks_over(transport, world, [&](std::uint32_t rank, Transport& t) {
    FixedOrderDevice& device = device_of(rank);
    FixedOrderReducer reducer(t, device, options.value_or(FixedOrderOptions::for_device(device)));
    for (std::size_t c = 0; c < cases.size(); ++c) {
      std::vector<float> arena = rank_arena(cases[c].id, rank);
      reducer.all_reduce(arena.data(), arena.size(), cases[c].id.op);
      if (auto i = first_bit_difference(cases[c].expected.data(), arena.data(), arena.size())) {
        verdicts[c][rank] = describe_difference(cases[c].expected.data(), arena.data(), *i);
      }
    }
  });
  expect_no_errors(outcomes);
  return verdicts;
}

class FixedOrderOverTransport
    : public ::testing::TestWithParam<std::tuple<WorldTransport, WorldCount>> {};

TEST_P(FixedOrderOverTransport, EveryRankHoldsTheReferenceBits) {
  const auto [transport, wc] = GetParam();
  const auto cases = expected_cases(Contract::kFixedOrder, wc);
  // The oracle agrees with the emulated dataflow (the contract's definition) here too.
  if (wc.count <= 1000) {
    for (const auto& c : cases) {
      auto arenas = generate_case_arenas(c.id);
      EmulatedWorld(wc.world).all_reduce(arenas, c.id.op, shuffled_delivery_orders(wc.world, 7, 1));
      ASSERT_FALSE(first_bit_difference(c.expected.data(), arenas[0].data(), arenas[0].size()));
    }
  }
  const auto verdicts = reduce_and_compare(transport, wc.world, cases);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    for (std::uint32_t r = 0; r < wc.world; ++r) {
      EXPECT_EQ(verdicts[c][r], "") << format_case_id(cases[c].id) << " rank " << r;
    }
  }
}

// The owners fold in about five uneven pieces per shard (the host default only cuts shards
// of more than 2 MiB, which these counts mostly are not).
TEST_P(FixedOrderOverTransport, FoldingInPiecesChangesNoBit) {
  const auto [transport, wc] = GetParam();
  std::vector<ExpectedCase> cases;
  for (auto& c : expected_cases(Contract::kFixedOrder, wc)) {
    if (c.id.dist == Distribution::kCancel || c.id.dist == Distribution::kSpecial) {
      cases.push_back(std::move(c));
    }
  }
  FixedOrderOptions options;
  options.piece_table_bytes =
      wc.world * sizeof(float) * std::max<std::size_t>(1, wc.count / wc.world / 5);
  const auto verdicts =
      reduce_and_compare(transport, wc.world, cases, host_for_every_rank, options);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    for (std::uint32_t r = 0; r < wc.world; ++r) {
      EXPECT_EQ(verdicts[c][r], "") << format_case_id(cases[c].id) << " rank " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Matrix, FixedOrderOverTransport,
    ::testing::Combine(::testing::ValuesIn(world_transports()),
                       ::testing::ValuesIn(world_count_matrix({2, 5, 8}))),
    [](const ::testing::TestParamInfo<std::tuple<WorldTransport, WorldCount>>& param) {
      return to_string(std::get<0>(param.param)) + "_" + world_count_name(std::get<1>(param.param));
    });

class FixedOrderReducerTest : public ::testing::TestWithParam<WorldTransport> {};

TEST_P(FixedOrderReducerTest, ScratchIsReusedAcrossCallsOfOtherSizes) {
  std::vector<ExpectedCase> cases;
  for (std::size_t n : {1000, 0, 2, 100003, 7, 1000, 1000}) {
    for (auto& c : expected_cases(Contract::kFixedOrder, WorldCount{3, n})) {
      if (c.id.dist == Distribution::kCancel) cases.push_back(std::move(c));
    }
  }
  const auto verdicts = reduce_and_compare(GetParam(), 3, cases);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    for (std::uint32_t r = 0; r < 3; ++r) {
      EXPECT_EQ(verdicts[c][r], "") << "call " << c << " " << format_case_id(cases[c].id);
    }
  }
}

TEST_P(FixedOrderReducerTest, RanksWithDifferentLengthsGetANamedErrorNotAnAbort) {
  auto outcomes = run_ranks_over(GetParam(), 3, [&](std::uint32_t rank, Transport& t) {
    FixedOrderReducer reducer(t, host_fixed_order_device());
    std::vector<float> arena(1000, 1.0f);
    reducer.all_reduce(arena.data(), rank == 2 ? 999 : 1000, Op::kSum);
  });
  for (const auto& o : outcomes) {
    ASSERT_TRUE(is_error<InputError>(o.error)) << error_text(o.error);
    EXPECT_NE(error_text(o.error).find("ranks disagree on the fixed-order arena length "
                                       "(elements): rank 0 has 1000, rank 1 has 1000, rank 2 "
                                       "has 999"),
              std::string::npos)
        << error_text(o.error);
  }
}

// What a reducer computes that writes each incoming copy to the next free slot (slot =
// arrival index) rather than to slot = source rank: the same fold over permuted addends.
// The arrival order is a seeded shuffle of the kind EmulatedWorld tries.
class ArrivalOrderFoldDevice final : public FixedOrderDevice {
 public:
  explicit ArrivalOrderFoldDevice(std::uint32_t owner) : owner_(owner) {}
  const char* name() const override { return "cpu (arrival order)"; }
  // Host memory, but a stacked-only fold: the reducer's GPU defaults (no fold in place).
  DeviceKind kind() const override { return DeviceKind::kGpu; }
  float* allocate(std::size_t n) override { return host().allocate(n); }
  void free(float* p) override { host().free(p); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    host().copy(dst, src, bytes);
  }
  void fold_stacked(const float* stacked, std::uint32_t world, std::size_t slot_stride,
                    std::size_t n, Op op, float* out) override {
    const auto arrival = shuffled_delivery_orders(world, 99, 0)[owner_];
    std::vector<float> by_arrival(world * n);
    for (std::uint32_t k = 0; k < world; ++k) {
      std::copy(stacked + arrival[k] * slot_stride, stacked + arrival[k] * slot_stride + n,
                by_arrival.begin() + static_cast<std::ptrdiff_t>(k * n));
    }
    host().fold_stacked(by_arrival.data(), world, n, n, op, out);
  }
  void finish_library_sum(float* values, std::size_t n, std::uint32_t world, Op op) override {
    host().finish_library_sum(values, n, world, op);
  }
  void round_to_dtype(float* values, std::size_t n, DType dtype) override {
    host().round_to_dtype(values, n, dtype);
  }
  void narrow(const float* values, std::size_t n, DType dtype, void* out) override {
    host().narrow(values, n, dtype, out);
  }
  void widen(const void* values, std::size_t n, DType dtype, float* out) override {
    host().widen(values, n, dtype, out);
  }
  void synchronize() override {}

 private:
  static FixedOrderDevice& host() { return host_fixed_order_device(); }
  std::uint32_t owner_;
};

TEST_P(FixedOrderReducerTest, TheCheckCatchesAFoldInArrivalOrder) {
  std::vector<ExpectedCase> cases;
  for (auto& c : expected_cases(Contract::kFixedOrder, WorldCount{4, 1000})) {
    if (c.id.dist == Distribution::kCancel && c.id.op == Op::kSum) cases.push_back(std::move(c));
  }
  ASSERT_EQ(cases.size(), 1u);
  for (std::uint32_t owner = 0; owner < 4; ++owner) {
    const auto order = shuffled_delivery_orders(4, 99, 0)[owner];
    ASSERT_FALSE(std::is_sorted(order.begin(), order.end())) << "owner " << owner;
  }
  std::vector<std::unique_ptr<ArrivalOrderFoldDevice>> devices;
  for (std::uint32_t r = 0; r < 4; ++r)
    devices.push_back(std::make_unique<ArrivalOrderFoldDevice>(r));
  const auto verdicts =
      reduce_and_compare(GetParam(), 4, cases,
                         [&](std::uint32_t rank) -> FixedOrderDevice& { return *devices[rank]; });
  for (std::uint32_t r = 0; r < 4; ++r) {
    EXPECT_NE(verdicts[0][r], "") << "rank " << r << ": an arrival-order fold went unnoticed";
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, FixedOrderReducerTest, ::testing::ValuesIn(world_transports()),
                         [](const ::testing::TestParamInfo<WorldTransport>& param) {
                           return to_string(param.param);
                         });

}  // namespace
}  // namespace rv::test

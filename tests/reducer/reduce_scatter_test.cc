// The reduce-scatter (docs/DESIGN.md §2.6) under fixed-order and exact, thread per rank over
// every test-world transport (in-process, whose exchanges deliver in shuffled orders, and
// Gloo when built) and in the oracle (EmulatedWorld under shuffled delivery orders): every
// rank's shard holds exactly the bits the all-reduce of the same contract, op and dtype gives
// at those indices, and the shards concatenated in rank order are the all-reduce. Worlds W =
// 1 … 8; n = 0, 1, W − 1, W + 1 (n < W, n not a multiple of W), 1000, 4099 and one 2^20 + 3;
// FSDP's shard size and a caller's larger one (more padding, empty last shards); f32, bf16,
// f16; every distribution; sum and mean. The expected bits come from the straight references
// (reference_fixed_order, reference_exact), and on every live rank also from the live all-reduce.
// And the check can fail: a reducer whose owner folds in another order is caught. An exact
// device without the owner reduction refuses by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/arena.h"
#include "core/error.h"
#include "core/oracle/emulated_world.h"
#include "core/oracle/reference.h"
#include "core/reducer/exact_reducer.h"
#include "core/reducer/fixed_order_reducer.h"
#include "core/shard_plan.h"
#include "tests/support/bit_difference.h"
#include "tests/thread_world/world_transport.h"

namespace rv::test {
namespace {

using Arenas = std::vector<std::vector<float>>;

// One reduce-scatter to check: the W arenas, what to ask, and the all-reduce's bits.
struct ScatterCase {
  Contract contract = Contract::kFixedOrder;
  Op op = Op::kSum;
  DType dtype = DType::kF32;
  Distribution dist = Distribution::kNormal;
  std::optional<std::size_t> shard_size;
  // Shared by the cases of one (dtype, distribution), and of one contract and op.
  std::shared_ptr<const Arenas> arenas_of_ranks;
  std::shared_ptr<const std::vector<float>> all_reduced_arena;  // the contract's reference
  const Arenas& arenas() const { return *arenas_of_ranks; }
  const std::vector<float>& all_reduced() const { return *all_reduced_arena; }
  std::string name() const {
    return std::string(to_string(contract)) + " " + std::string(to_string(op)) + " " +
           std::string(to_string(dtype)) + " " + std::string(to_string(dist)) +
           " n=" + std::to_string(arenas()[0].size()) + " shard size " +
           (shard_size ? std::to_string(*shard_size) : std::string("FSDP's"));
  }
};

std::vector<std::size_t> counts_for(std::uint32_t w) {
  std::vector<std::size_t> counts = {0, 1, w - 1, w + 1, 1000, 4099};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

Arenas arenas_of(DType dtype, Distribution dist, std::uint32_t w, std::size_t n) {
  Arenas arenas;
  for (std::uint32_t r = 0; r < w; ++r) {
    arenas.push_back(generate_arena({1, dist, 3800 + w, dtype}, r, n));
  }
  return arenas;
}

std::vector<float> reference_of(Contract contract, const Arenas& arenas, Op op, DType dtype) {
  return contract == Contract::kExact ? reference_exact(arenas, op, dtype)
                                      : reference_fixed_order(arenas, op, dtype);
}

// Every contract, op, dtype and distribution at (w, n), with FSDP's shard size and a larger
// one of the caller's (three more: the padding grows, the last shards shrink or vanish).
std::vector<ScatterCase> cases_for(std::uint32_t w, std::size_t n,
                                   const std::vector<DType>& dtypes = {DType::kF32, DType::kBF16,
                                                                       DType::kF16},
                                   const std::vector<Distribution>& dists = {
                                       std::begin(kAllDistributions),
                                       std::end(kAllDistributions)}) {
  std::vector<ScatterCase> cases;
  for (const DType dtype : dtypes) {
    for (const Distribution dist : dists) {
      const auto arenas = std::make_shared<const Arenas>(arenas_of(dtype, dist, w, n));
      for (const Contract contract : {Contract::kFixedOrder, Contract::kExact}) {
        for (const Op op : {Op::kSum, Op::kMean}) {
          const auto all_reduced = std::make_shared<const std::vector<float>>(
              reference_of(contract, *arenas, op, dtype));
          for (const std::optional<std::size_t> size :
               {std::optional<std::size_t>{},
                std::optional<std::size_t>{padded_shard_size(n, w) + 3}}) {
            cases.push_back(ScatterCase{contract, op, dtype, dist, size, arenas, all_reduced});
          }
        }
      }
    }
  }
  return cases;
}

// "" when `shard` is the all-reduce's [begin, begin + shard.size()), else what differs.
std::string compare_shard(const std::vector<float>& all_reduced, const Shard& expected,
                          const std::vector<float>& shard) {
  if (shard.size() != expected.count) {
    return "shard of " + std::to_string(shard.size()) + " elements, expected " +
           std::to_string(expected.count);
  }
  const float* want = all_reduced.data() + expected.begin;
  if (auto i = first_bit_difference(want, shard.data(), shard.size())) {
    return "at shard element " + std::to_string(*i) + " (arena element " +
           std::to_string(expected.begin + *i) +
           "): " + describe_difference(want, shard.data(), *i);
  }
  return "";
}

// The shards of ranks 0 … W − 1, concatenated, against the whole all-reduce.
std::string compare_concatenation(const std::vector<float>& all_reduced,
                                  const std::vector<std::vector<float>>& shards) {
  std::vector<float> joined;
  for (const auto& shard : shards) joined.insert(joined.end(), shard.begin(), shard.end());
  if (joined.size() != all_reduced.size()) {
    return "the shards hold " + std::to_string(joined.size()) + " elements, the arena " +
           std::to_string(all_reduced.size());
  }
  if (auto i = first_bit_difference(all_reduced.data(), joined.data(), joined.size())) {
    return "concatenated: " + describe_difference(all_reduced.data(), joined.data(), *i);
  }
  return "";
}

// The oracle: EmulatedWorld's reduce-scatter under the ascending and three shuffled delivery
// orders, every shard against the straight reference, the shards' concatenation against the
// whole, and EmulatedWorld's own all-reduce (the contract's definition) against it too.
TEST(ReduceScatterOracle, EveryShardIsTheAllReducesSliceUnderShuffledDeliveryOrders) {
  std::size_t checked = 0;
  for (std::uint32_t w = 1; w <= 8; ++w) {
    for (const std::size_t n : counts_for(w)) {
      for (const ScatterCase& c : cases_for(w, n)) {
        const EmulatedWorld world(w);
        Arenas all_reduced = c.arenas();
        if (c.contract == Contract::kExact) {
          world.all_reduce_exact(all_reduced, c.op, shuffled_delivery_orders(w, 5, 0), c.dtype);
        } else {
          world.all_reduce(all_reduced, c.op, shuffled_delivery_orders(w, 5, 0), c.dtype);
        }
        ASSERT_FALSE(first_bit_difference(c.all_reduced().data(), all_reduced[0].data(), n))
            << c.name() << ": the emulated all-reduce is not the reference";
        const auto plan = padded_shard_plan(n, w, c.shard_size);
        for (std::uint64_t trial = 0; trial < 4; ++trial) {
          const DeliveryOrders orders =
              trial == 0 ? DeliveryOrders{} : shuffled_delivery_orders(w, 11, trial);
          const auto shards =
              c.contract == Contract::kExact
                  ? world.reduce_scatter_exact(c.arenas(), c.op, orders, c.dtype, c.shard_size)
                  : world.reduce_scatter(c.arenas(), c.op, orders, c.dtype, c.shard_size);
          ASSERT_EQ(shards.size(), w);
          for (std::uint32_t p = 0; p < w; ++p) {
            ASSERT_EQ(compare_shard(c.all_reduced(), plan[p], shards[p]), "")
                << c.name() << " w=" << w << " order " << trial << " rank " << p;
          }
          ASSERT_EQ(compare_concatenation(c.all_reduced(), shards), "") << c.name() << " w=" << w;
          ++checked;
          // The exact sum does not know which arena is which rank's: with the arenas
          // rotated over the ranks every shard keeps its bits.
          if (c.contract == Contract::kExact && w > 1) {
            Arenas rotated(c.arenas().begin() + 1, c.arenas().end());
            rotated.push_back(c.arenas().front());
            const auto again =
                world.reduce_scatter_exact(rotated, c.op, orders, c.dtype, c.shard_size);
            ASSERT_EQ(compare_concatenation(c.all_reduced(), again), "")
                << c.name() << " w=" << w << ", the ranks rotated";
          }
        }
      }
    }
  }
  // 4 orders × 120 cases × the 46 (W, n): 5 counts at W = 1 and 2, 6 at W = 3 … 8.
  EXPECT_EQ(checked, std::size_t{4} * 120 * 46);
}

// What each rank of a live world saw, per case: its shard and any difference from the
// reference's slice and from its own all-reduce's slice.
struct RankResults {
  std::vector<std::vector<float>> shards;
  std::vector<std::string> verdicts;
};

// Every case through a FixedOrderReducer and an ExactReducer per rank (reused across the
// cases), the reduce-scatter and then, on a copy of the arena, the all-reduce.
std::vector<RankResults> scatter_on_every_rank(WorldTransport transport, std::uint32_t w,
                                               const std::vector<ScatterCase>& cases,
                                               const FixedOrderOptions& fixed_options,
                                               const ExactOptions& exact_options) {
  std::vector<RankResults> results(w);
  auto outcomes = run_ranks_over(transport, w, [&](std::uint32_t rank, Transport& t) {
    FixedOrderReducer fixed(t, host_fixed_order_device(), fixed_options);
    ExactReducer exact(t, host_exact_device(), exact_options);
    RankResults& mine = results[rank];
    for (const ScatterCase& c : cases) {
      const std::size_t n = c.arenas()[rank].size();
      const Shard expected = padded_shard_plan(n, w, c.shard_size)[rank];
      std::vector<float> shard(expected.count);
      std::vector<float> arena = c.arenas()[rank];
      if (c.contract == Contract::kExact) {
        exact.reduce_scatter(arena.data(), n, shard.data(), shard.size(), c.op, c.dtype,
                             c.shard_size);
      } else {
        fixed.reduce_scatter(arena.data(), n, shard.data(), shard.size(), c.op, c.dtype,
                             c.shard_size);
      }
      std::string verdict;
      // Bit for bit (NaNs compare unequal as floats).
      if (first_bit_difference(arena.data(), c.arenas()[rank].data(), n)) {
        verdict = "the reduce-scatter changed its input arena; ";
      }
      verdict += compare_shard(c.all_reduced(), expected, shard);
      // The live all-reduce of the same world, contract, op and dtype, at the same indices.
      if (c.contract == Contract::kExact) {
        exact.all_reduce(arena.data(), n, c.op, c.dtype);
      } else {
        fixed.all_reduce(arena.data(), n, c.op, c.dtype);
      }
      const std::string against_live = compare_shard(arena, expected, shard);
      if (!against_live.empty()) verdict += " against the live all-reduce: " + against_live;
      mine.shards.push_back(std::move(shard));
      mine.verdicts.push_back(std::move(verdict));
    }
  });
  expect_no_errors(outcomes);
  return results;
}

// Checks every rank's verdicts and the concatenation of every case's shards; returns how
// many shards were compared.
std::size_t expect_every_shard_right(const std::vector<ScatterCase>& cases,
                                     const std::vector<RankResults>& results) {
  std::size_t shards = 0;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    std::vector<std::vector<float>> of_case;
    for (std::uint32_t r = 0; r < results.size(); ++r) {
      if (results[r].verdicts.size() != cases.size()) {
        ADD_FAILURE() << "rank " << r << " finished " << results[r].verdicts.size() << " of "
                      << cases.size() << " cases";
        return shards;
      }
      EXPECT_EQ(results[r].verdicts[c], "") << cases[c].name() << " rank " << r;
      of_case.push_back(results[r].shards[c]);
      ++shards;
    }
    EXPECT_EQ(compare_concatenation(cases[c].all_reduced(), of_case), "") << cases[c].name();
  }
  return shards;
}

class ReduceScatterOverTransport
    : public ::testing::TestWithParam<std::tuple<WorldTransport, std::uint32_t>> {};

TEST_P(ReduceScatterOverTransport, EveryShardIsTheAllReducesSlice) {
  const auto [transport, w] = GetParam();
  // Gloo's worlds of 5 to 8 take the order-sensitive and the special distributions only (every
  // distribution there cost 80 s of the 2-core CI): the dataflow is the in-process world's,
  // which takes them all, and Gloo only moves the bytes.
  const bool trimmed = to_string(transport) == "gloo" && w >= 5;
  std::vector<ScatterCase> cases;
  for (const std::size_t n : counts_for(w)) {
    auto more = trimmed ? cases_for(w, n, {DType::kF32, DType::kBF16, DType::kF16},
                                    {Distribution::kCancel, Distribution::kSpecial})
                        : cases_for(w, n);
    for (auto& c : more) cases.push_back(std::move(c));
  }
  const auto results = scatter_on_every_rank(
      transport, w, cases, FixedOrderOptions::for_device(host_fixed_order_device()),
      ExactOptions::for_device(host_exact_device()));
  EXPECT_EQ(expect_every_shard_right(cases, results), cases.size() * w);
}

// The owners reduce their shards in about five uneven pieces (the host defaults cut only
// tables of more than 16 MiB), through two alternating tables.
TEST_P(ReduceScatterOverTransport, ReducingInPiecesChangesNoBit) {
  const auto [transport, w] = GetParam();
  std::vector<ScatterCase> cases;
  for (auto& c : cases_for(w, 4099, {DType::kF32, DType::kF16},
                           {Distribution::kCancel, Distribution::kSpecial})) {
    cases.push_back(std::move(c));
  }
  FixedOrderOptions fixed = FixedOrderOptions::for_device(host_fixed_order_device());
  ExactOptions exact = ExactOptions::for_device(host_exact_device());
  fixed.piece_table_bytes = exact.scatter_table_bytes =
      w * sizeof(float) * (padded_shard_size(4099, w) / 5);
  const auto results = scatter_on_every_rank(transport, w, cases, fixed, exact);
  EXPECT_EQ(expect_every_shard_right(cases, results), cases.size() * w);
}

INSTANTIATE_TEST_SUITE_P(
    Worlds, ReduceScatterOverTransport,
    ::testing::Combine(::testing::ValuesIn(world_transports()),
                       ::testing::Values(1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u)),
    [](const ::testing::TestParamInfo<std::tuple<WorldTransport, std::uint32_t>>& param) {
      return to_string(std::get<0>(param.param)) + "_w" + std::to_string(std::get<1>(param.param));
    });

class ReduceScatterTest : public ::testing::TestWithParam<WorldTransport> {};

// n = 2^20 + 3 (not a multiple of W, shards of a third of a million elements): the default
// options, f32 and bf16, the special values (W = 8 and the cancelling distribution too took
// 50 s a transport in the 2-core CI; the smaller worlds above take every distribution).
TEST_P(ReduceScatterTest, AMillionElementsNotAMultipleOfW) {
  for (const std::uint32_t w : {3u}) {
    const auto cases = cases_for(w, (std::size_t{1} << 20) + 3, {DType::kF32, DType::kBF16},
                                 {Distribution::kSpecial});
    const auto results = scatter_on_every_rank(
        GetParam(), w, cases, FixedOrderOptions::for_device(host_fixed_order_device()),
        ExactOptions::for_device(host_exact_device()));
    EXPECT_EQ(expect_every_shard_right(cases, results), cases.size() * w) << "w=" << w;
  }
}

// The output may be the shard's own place in the arena (an in-place reduce-scatter).
TEST_P(ReduceScatterTest, TheShardMayBeWrittenInPlace) {
  const std::uint32_t w = 4;
  const auto cases = cases_for(w, 1001, {DType::kF32}, {Distribution::kCancel});
  std::vector<std::vector<std::string>> verdicts(cases.size(), std::vector<std::string>(w));
  auto outcomes = run_ranks_over(GetParam(), w, [&](std::uint32_t rank, Transport& t) {
    FixedOrderReducer fixed(t, host_fixed_order_device());
    ExactReducer exact(t, host_exact_device());
    for (std::size_t c = 0; c < cases.size(); ++c) {
      std::vector<float> arena = cases[c].arenas()[rank];
      const Shard mine = padded_shard_plan(arena.size(), w, cases[c].shard_size)[rank];
      float* out = arena.data() + mine.begin;
      if (cases[c].contract == Contract::kExact) {
        exact.reduce_scatter(arena.data(), arena.size(), out, mine.count, cases[c].op, DType::kF32,
                             cases[c].shard_size);
      } else {
        fixed.reduce_scatter(arena.data(), arena.size(), out, mine.count, cases[c].op, DType::kF32,
                             cases[c].shard_size);
      }
      verdicts[c][rank] =
          compare_shard(cases[c].all_reduced(), mine, std::vector<float>(out, out + mine.count));
    }
  });
  expect_no_errors(outcomes);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    for (std::uint32_t r = 0; r < w; ++r) {
      EXPECT_EQ(verdicts[c][r], "") << cases[c].name() << " rank " << r;
    }
  }
}

// Runs one reduce-scatter per rank with the rank's own n, shard size and output length, and
// returns each rank's error text ("" when it returned).
std::vector<std::string> errors_of(WorldTransport transport, Contract contract,
                                   const std::vector<std::size_t>& n,
                                   const std::vector<std::optional<std::size_t>>& shard_size,
                                   const std::vector<std::size_t>& out_count) {
  const auto w = static_cast<std::uint32_t>(n.size());
  auto outcomes = run_ranks_over(transport, w, [&](std::uint32_t rank, Transport& t) {
    std::vector<float> arena(n[rank], 1.0f);
    std::vector<float> out(out_count[rank]);
    if (contract == Contract::kExact) {
      ExactReducer(t, host_exact_device())
          .reduce_scatter(arena.data(), n[rank], out.data(), out.size(), Op::kSum, DType::kF32,
                          shard_size[rank]);
    } else {
      FixedOrderReducer(t, host_fixed_order_device())
          .reduce_scatter(arena.data(), n[rank], out.data(), out.size(), Op::kSum, DType::kF32,
                          shard_size[rank]);
    }
  });
  std::vector<std::string> errors;
  for (const auto& o : outcomes) {
    EXPECT_TRUE(!o.error || is_error<InputError>(o.error)) << error_text(o.error);
    errors.push_back(o.error ? error_text(o.error) : "");
  }
  return errors;
}

void expect_on_every_rank(const std::vector<std::string>& errors, const std::string& text) {
  for (std::size_t r = 0; r < errors.size(); ++r) {
    EXPECT_NE(errors[r].find(text), std::string::npos) << "rank " << r << ": " << errors[r];
  }
}

TEST_P(ReduceScatterTest, BadRequestsAreNamedOnEveryRankBeforeAnyByteMoves) {
  const auto none = std::optional<std::size_t>{};
  for (const Contract contract : {Contract::kFixedOrder, Contract::kExact}) {
    const std::string name(to_string(contract));
    // Another arena length on rank 2.
    expect_on_every_rank(
        errors_of(GetParam(), contract, {1000, 1000, 999}, {none, none, none}, {334, 334, 332}),
        "ranks 0, 1 have " + name +
            " reduce_scatter, op=sum, dtype=f32, n=1000, shard size=334 but "
            "rank 2 has " +
            name + " reduce_scatter, op=sum, dtype=f32, n=999, shard size=333");
    // Another shard size on rank 1 (FSDP's named explicitly on rank 0 agrees with none).
    expect_on_every_rank(
        errors_of(GetParam(), contract, {1000, 1000, 1000}, {334, 400, none}, {334, 400, 332}),
        "rank 1 has " + name + " reduce_scatter, op=sum, dtype=f32, n=1000, shard size=400");
    // A wrong output length on every rank: each names its own two sizes.
    const auto errors = errors_of(GetParam(), contract, {10, 10}, {none, none}, {4, 4});
    EXPECT_NE(errors[0].find("rank 0's output buffer holds 4 elements but its shard has 5"),
              std::string::npos)
        << errors[0];
    EXPECT_NE(errors[1].find("rank 1's output buffer holds 4 elements but its shard has 5"),
              std::string::npos)
        << errors[1];
    // A wrong output length on one rank only: every rank names it.
    expect_on_every_rank(errors_of(GetParam(), contract, {10, 10}, {none, none}, {5, 6}),
                         "rank 1's output buffer holds 6 elements but its shard has 5");
    // A shard size that leaves elements in no shard.
    expect_on_every_rank(
        errors_of(GetParam(), contract, {10, 10}, {4, 4}, {4, 4}),
        "a shard size of 4 elements over 2 ranks leaves elements of an arena of 10 in no shard");
  }
}

// A fixed-order device whose owner folds its table in descending slot order: the mutant of "a shard
// folded in another order". A stacked-only device (no fold in place), host memory.
class DescendingFoldDevice final : public FixedOrderDevice {
 public:
  const char* name() const override { return "cpu (descending fold)"; }
  DeviceKind kind() const override { return DeviceKind::kGpu; }
  float* allocate(std::size_t n) override { return host().allocate(n); }
  void free(float* p) override { host().free(p); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    host().copy(dst, src, bytes);
  }
  void fold_stacked(const float* stacked, std::uint32_t world, std::size_t slot_stride,
                    std::size_t n, Op op, float* out) override {
    std::vector<float> reversed(world * n);
    for (std::uint32_t k = 0; k < world; ++k) {
      const float* slot = stacked + (world - 1 - k) * slot_stride;
      std::copy(slot, slot + n, reversed.begin() + static_cast<std::ptrdiff_t>(k * n));
    }
    host().fold_stacked(reversed.data(), world, n, n, op, out);
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
};

TEST_P(ReduceScatterTest, TheCheckCatchesAShardFoldedInAnotherOrder) {
  const std::uint32_t w = 4;
  const auto cases = cases_for(w, 1000, {DType::kF32}, {Distribution::kCancel});
  std::vector<std::string> verdicts(w);
  auto outcomes = run_ranks_over(GetParam(), w, [&](std::uint32_t rank, Transport& t) {
    DescendingFoldDevice device;
    FixedOrderReducer reducer(t, device);
    const ScatterCase& c = cases.front();  // fixed-order, sum, FSDP's shard size
    ASSERT_EQ(c.contract, Contract::kFixedOrder);
    const Shard mine = padded_shard_plan(1000, w)[rank];
    std::vector<float> shard(mine.count);
    reducer.reduce_scatter(c.arenas()[rank].data(), 1000, shard.data(), shard.size(), c.op);
    verdicts[rank] = compare_shard(c.all_reduced(), mine, shard);
  });
  expect_no_errors(outcomes);
  for (std::uint32_t r = 0; r < w; ++r) {
    EXPECT_NE(verdicts[r], "") << "rank " << r << ": a descending fold went unnoticed";
  }
}

// An exact device without the owner reduction (the default ExactDevice members): the
// reduce-scatter refuses on every rank, naming it, rather than computing anything another way.
class NoScatterExactDevice final : public ExactDevice {
 public:
  const char* name() const override { return "test device without reduce_stacked"; }
  DeviceKind kind() const override { return DeviceKind::kGpu; }
  std::int64_t* allocate_words(std::size_t n) override { return host().allocate_words(n); }
  void free_words(std::int64_t* p) override { host().free_words(p); }
  void agreement_words(const float* values, std::size_t n, std::int64_t* words) override {
    host().agreement_words(values, n, words);
  }
  void download_words(std::int64_t* to, const std::int64_t* words, std::size_t n) override {
    host().download_words(to, words, n);
  }
  void encode(const float* values, const ExactPlan& plan, std::int64_t* words) override {
    host().encode(values, plan, words);
  }
  void round(const std::int64_t* sums, const ExactPlan& plan, Op op, float* out,
             DType dtype) override {
    host().round(sums, plan, op, out, dtype);
  }
  void synchronize() override {}

 private:
  static ExactDevice& host() { return host_exact_device(); }
};

TEST_P(ReduceScatterTest, AnExactDeviceWithoutTheOwnerReductionRefuses) {
  auto outcomes = run_ranks_over(GetParam(), 2, [&](std::uint32_t, Transport& t) {
    NoScatterExactDevice device;
    ExactReducer reducer(t, device);
    std::vector<float> arena(10, 1.0f), shard(5);
    reducer.reduce_scatter(arena.data(), 10, shard.data(), 5, Op::kSum);
  });
  for (const auto& o : outcomes) {
    ASSERT_TRUE(is_error<InternalError>(o.error)) << error_text(o.error);
    EXPECT_NE(error_text(o.error).find("test device without reduce_stacked: this exact device "
                                       "has no reduce-scatter"),
              std::string::npos)
        << error_text(o.error);
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, ReduceScatterTest, ::testing::ValuesIn(world_transports()),
                         [](const ::testing::TestParamInfo<WorldTransport>& param) {
                           return to_string(param.param);
                         });

}  // namespace
}  // namespace rv::test

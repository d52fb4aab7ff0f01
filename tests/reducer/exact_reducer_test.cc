// The exact reducer, thread per rank over every test-world transport (in-process, and Gloo's
// int64 ring allreduce when built): every rank ends with exactly the bits of the straight
// exact reference (itself held to MPFR in tests/exact) for every W, N, distribution and op,
// through both dataflows (owners, digits); pieces and scratch reuse change no bit;
// gradient-like data moves one int64 per element through the digits, and the owners move
// 4-byte addends and results whatever the data; a length mismatch is a named error on every
// rank.
#include "core/reducer/exact_reducer.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_reduction.h"
#include "core/oracle/case_reduction.h"
#include "tests/reducer/reducer_cases.h"
#include "tests/support/bit_difference.h"
#include "tests/thread_world/world_transport.h"

namespace rv::test {
namespace {

std::vector<ExpectedCase> exact_cases(const WorldCount& wc) {
  return expected_cases(Contract::kExact, wc);
}

// Per case and rank: "" or what differed from the expected bits.
std::vector<std::vector<std::string>> reduce_and_compare(WorldTransport transport,
                                                         std::uint32_t world,
                                                         const std::vector<ExpectedCase>& cases,
                                                         const ExactOptions& options) {
  std::vector<std::vector<std::string>> verdicts(cases.size(), std::vector<std::string>(world));
  auto outcomes = run_ranks_over(transport, world, [&](std::uint32_t rank, Transport& t) {
    ExactReducer reducer(t, host_exact_device(), options);
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

void expect_all_equal(const std::vector<ExpectedCase>& cases,
                      const std::vector<std::vector<std::string>>& verdicts) {
  for (std::size_t c = 0; c < cases.size(); ++c) {
    for (std::size_t r = 0; r < verdicts[c].size(); ++r) {
      EXPECT_EQ(verdicts[c][r], "") << format_case_id(cases[c].id) << " rank " << r;
    }
  }
}

class ExactOverTransport : public ::testing::TestWithParam<std::tuple<WorldTransport, WorldCount>> {
};

// Both dataflows, each as for_device sets it up otherwise.
TEST_P(ExactOverTransport, EveryRankHoldsTheExactBits) {
  const auto [transport, wc] = GetParam();
  const auto cases = exact_cases(wc);
  for (ExactDataflow dataflow : {ExactDataflow::kOwners, ExactDataflow::kDigits}) {
    SCOPED_TRACE(dataflow == ExactDataflow::kOwners ? "owners" : "digits");
    ExactOptions options = ExactOptions::for_device(host_exact_device());
    options.dataflow = dataflow;
    expect_all_equal(cases, reduce_and_compare(transport, wc.world, cases, options));
  }
}

// Digits: about 5 and 11 uneven pieces, every piece planned from its slice of the agreed
// words. Owners: tables of about 5 and 11 pieces of a shard, each reduced while the next
// arrives and sent out while the next is reduced.
TEST_P(ExactOverTransport, PiecesChangeNoBit) {
  const auto [transport, wc] = GetParam();
  const std::size_t blocks = (wc.count + exact::kBlock - 1) / exact::kBlock;
  if (blocks < 11) GTEST_SKIP() << "one piece only at this N";
  const auto cases = exact_cases(wc);
  const std::size_t table_bytes = (wc.count + wc.world - 1) / wc.world * sizeof(float) * wc.world;
  for (std::size_t pieces : {5, 11}) {
    ExactOptions digits;
    digits.piece_elements = (blocks + pieces - 1) / pieces * exact::kBlock;
    expect_all_equal(cases, reduce_and_compare(transport, wc.world, cases, digits));
    ExactOptions owners;
    owners.dataflow = ExactDataflow::kOwners;
    owners.scatter_table_bytes = table_bytes / pieces;
    expect_all_equal(cases, reduce_and_compare(transport, wc.world, cases, owners));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Matrix, ExactOverTransport,
    ::testing::Combine(::testing::ValuesIn(world_transports()),
                       ::testing::ValuesIn(world_count_matrix({2, 5}))),
    [](const ::testing::TestParamInfo<std::tuple<WorldTransport, WorldCount>>& param) {
      return to_string(std::get<0>(param.param)) + "_" + world_count_name(std::get<1>(param.param));
    });

class ExactReducerTest : public ::testing::TestWithParam<WorldTransport> {};

TEST_P(ExactReducerTest, GradientLikeDataMovesOneWordPerElementThroughDigits) {
  constexpr std::uint32_t kWorld = 4;
  constexpr std::size_t kCount = 64 * exact::kBlock;
  std::vector<double> bytes(kWorld);
  auto outcomes = run_ranks_over(GetParam(), kWorld, [&](std::uint32_t rank, Transport& t) {
    ExactOptions options;
    options.dataflow = ExactDataflow::kDigits;
    ExactReducer reducer(t, host_exact_device(), options);
    std::vector<float> arena = generate_arena({1, Distribution::kNormal, 4}, rank, kCount);
    reducer.all_reduce(arena.data(), arena.size(), Op::kSum);
    bytes[rank] = reducer.last_traffic().bytes_per_element();
  });
  expect_no_errors(outcomes);
  for (double b : bytes) {
    EXPECT_LE(b, 8.1) << "one 8-byte limb and the agreement words per element";
    EXPECT_GE(b, 8.0);
  }
}

// The owners move what a float ring does, whatever the data: (W − 1)/W of the arena out to
// the owners and (W − 1) copies of its own shard back, 4 bytes each.
TEST_P(ExactReducerTest, OwnersMoveTheAddendsAndResultsOnly) {
  constexpr std::uint32_t kWorld = 4;
  constexpr std::size_t kCount = 64 * exact::kBlock;
  for (Distribution dist : {Distribution::kNormal, Distribution::kWide, Distribution::kSpecial}) {
    std::vector<double> bytes(kWorld);
    auto outcomes = run_ranks_over(GetParam(), kWorld, [&](std::uint32_t rank, Transport& t) {
      ExactReducer reducer(t, host_exact_device());  // the host's default: owners
      std::vector<float> arena = generate_arena({1, dist, 4}, rank, kCount);
      reducer.all_reduce(arena.data(), arena.size(), Op::kSum);
      bytes[rank] = reducer.last_traffic().bytes_per_element();
    });
    expect_no_errors(outcomes);
    for (double b : bytes) EXPECT_DOUBLE_EQ(b, 2 * 4.0 * (kWorld - 1) / kWorld) << to_string(dist);
  }
}

TEST_P(ExactReducerTest, ScratchIsReusedAcrossCallsOfOtherSizes) {
  std::vector<ExpectedCase> cases;
  for (std::size_t n : {3000, 0, 2, 100003, 7, 3000}) {
    for (auto& c : exact_cases(WorldCount{3, n})) {
      if (c.id.dist == Distribution::kWide || c.id.dist == Distribution::kNormal) {
        cases.push_back(std::move(c));
      }
    }
  }
  expect_all_equal(cases, reduce_and_compare(GetParam(), 3, cases,
                                             ExactOptions::for_device(host_exact_device())));
}

TEST_P(ExactReducerTest, RanksWithDifferentLengthsGetANamedErrorNotAnAbort) {
  auto outcomes = run_ranks_over(GetParam(), 3, [&](std::uint32_t rank, Transport& t) {
    ExactReducer reducer(t, host_exact_device());
    std::vector<float> arena(rank == 1 ? 999 : 1000, 1.0f);
    reducer.all_reduce(arena.data(), arena.size(), Op::kSum);
  });
  for (const auto& o : outcomes) {
    ASSERT_TRUE(is_error<InputError>(o.error)) << error_text(o.error);
    EXPECT_NE(error_text(o.error).find("rank 1 has exact all_reduce of n=999 values"),
              std::string::npos)
        << error_text(o.error);
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, ExactReducerTest, ::testing::ValuesIn(world_transports()),
                         [](const ::testing::TestParamInfo<WorldTransport>& param) {
                           return to_string(param.param);
                         });

}  // namespace
}  // namespace rv::test

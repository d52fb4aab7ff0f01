// The library-sum contract over Gloo's ring allreduce (docs/DESIGN.md §2), and over the
// in-process test world's stand-in library (descending rank order): it must equal the
// fixed-order result where every association is exact (the `exact` distribution) and where
// W ≤ 2 (one addition commutes); everywhere all ranks must hold identical bits and repeated
// calls must agree. Elsewhere no promise, and the last test shows there really is none here:
// both libraries associate differently, so the exact/W ≤ 2 equality is a check that can fail.
#include "core/reducer/library_sum_reducer.h"

#include <gtest/gtest.h>

#include <tuple>

#include "core/error.h"
#include "tests/reducer/reducer_cases.h"
#include "tests/support/bit_difference.h"
#include "tests/thread_world/world_transport.h"

namespace rv::test {
namespace {

// Per case and rank: the first call's result; a repeated call must give the same bits.
std::vector<std::vector<std::vector<float>>> library_sums(WorldTransport transport,
                                                          std::uint32_t world,
                                                          const std::vector<ExpectedCase>& cases) {
  std::vector<std::vector<std::vector<float>>> results(cases.size(),
                                                       std::vector<std::vector<float>>(world));
  auto outcomes = run_ranks_over(transport, world, [&](std::uint32_t rank, Transport& t) {
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const std::vector<float> arena = rank_arena(cases[c].id, rank);
      std::vector<float> first = arena, again = arena;
      library_sum_all_reduce(t, host_fixed_order_device(), first.data(), first.size(),
                             cases[c].id.op);
      library_sum_all_reduce(t, host_fixed_order_device(), again.data(), again.size(),
                             cases[c].id.op);
      if (auto i = first_bit_difference(first.data(), again.data(), first.size())) {
        ADD_FAILURE() << format_case_id(cases[c].id) << " rank " << rank
                      << ": a repeated call differs at "
                      << describe_difference(first.data(), again.data(), *i);
      }
      results[c][rank] = std::move(first);
    }
  });
  expect_no_errors(outcomes);
  return results;
}

class LibrarySumOverTransport
    : public ::testing::TestWithParam<std::tuple<WorldTransport, WorldCount>> {};

TEST_P(LibrarySumOverTransport, AgreesAcrossRanksAndWithFixedOrderWhereItMust) {
  const auto [transport, wc] = GetParam();
  const auto cases = expected_cases(Contract::kLibrarySum, wc);
  const auto results = library_sums(transport, wc.world, cases);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const CaseId& id = cases[c].id;
    for (std::uint32_t r = 1; r < wc.world; ++r) {
      auto i = first_bit_difference(results[c][0].data(), results[c][r].data(), wc.count);
      EXPECT_FALSE(i) << format_case_id(id) << ": rank " << r << " differs from rank 0 at "
                      << describe_difference(results[c][0].data(), results[c][r].data(), *i);
    }
    if (id.dist == Distribution::kExact || wc.world <= 2) {
      auto i = first_bit_difference(cases[c].expected.data(), results[c][0].data(), wc.count);
      EXPECT_FALSE(i) << format_case_id(id) << ": differs from the fixed-order result at "
                      << describe_difference(cases[c].expected.data(), results[c][0].data(), *i);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Matrix, LibrarySumOverTransport,
    ::testing::Combine(::testing::ValuesIn(world_transports()),
                       ::testing::ValuesIn(world_count_matrix({2, 4}))),
    [](const ::testing::TestParamInfo<std::tuple<WorldTransport, WorldCount>>& param) {
      return to_string(std::get<0>(param.param)) + "_" + world_count_name(std::get<1>(param.param));
    });

class LibrarySum : public ::testing::TestWithParam<WorldTransport> {};

TEST_P(LibrarySum, LibraryAssociationDiffersFromFixedOrderOnRoundedData) {
  std::vector<ExpectedCase> cases;
  for (auto& c : expected_cases(Contract::kLibrarySum, WorldCount{4, 1000})) {
    if (c.id.dist == Distribution::kCancel && c.id.op == Op::kSum) cases.push_back(std::move(c));
  }
  const auto results = library_sums(GetParam(), 4, cases);
  std::size_t differing = 0;
  for (std::size_t i = 0; i < 1000; ++i) {
    differing += first_bit_difference(&cases[0].expected[i], &results[0][0][i], 1) ? 1 : 0;
  }
  EXPECT_GT(differing, 0u) << to_string(GetParam())
                           << "'s library summed a cancel case in exactly our order: the "
                              "exact/W ≤ 2 checks above would then prove nothing";
}

INSTANTIATE_TEST_SUITE_P(Transports, LibrarySum, ::testing::ValuesIn(world_transports()),
                         [](const ::testing::TestParamInfo<WorldTransport>& param) {
                           return to_string(param.param);
                         });

}  // namespace
}  // namespace rv::test

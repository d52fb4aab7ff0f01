// The exact reducer over the one-GPU loopback transport (every rank its own CudaExactDevice,
// the int64 all-reduces combined on the GPU) equals the straight reference (reference_exact:
// per element a wide integer sum with no windows or limbs, sharing none of the dataflow's
// code), on every rank, for every distribution, both ops, W from 1 to 256 and lengths around
// the block size; and its bits do not move when the ranks are permuted.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/arena.h"
#include "core/error.h"
#include "core/oracle/reference.h"
#include "verify/live/loopback_ranks.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using cuda_loopback::LoopbackRanks;
using test::arenas_of;
using test::same_bits;
using Arenas = std::vector<std::vector<float>>;

void expect_equals_reference(LoopbackRanks& ranks, const Arenas& arenas, Op op, Distribution dist) {
  const std::vector<float> expected = reference_exact(arenas, op);
  const Arenas reduced = ranks.all_reduce(arenas, Contract::kExact, op);
  ASSERT_EQ(reduced.size(), arenas.size());
  for (std::size_t r = 0; r < reduced.size(); ++r) {
    ASSERT_TRUE(same_bits(expected, reduced[r]))
        << "rank " << r << " W=" << arenas.size() << " n=" << arenas[0].size() << " "
        << to_string(dist) << " " << to_string(op);
  }
}

TEST(LoopbackExact, EqualsReferenceOnEveryRank) {
  RV_SKIP_WITHOUT_GPU();
  for (std::uint32_t world : {1u, 2u, 3u, 8u, 64u, 256u}) {
    LoopbackRanks ranks(world);
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1023}, std::size_t{1024},
                          std::size_t{1025}, std::size_t{3 * 1024 + 77}}) {
      for (Distribution dist : kAllDistributions) {
        for (Op op : {Op::kSum, Op::kMean}) {
          expect_equals_reference(ranks, arenas_of(dist, world, n, 40 + n), op, dist);
        }
      }
    }
  }
}

TEST(LoopbackExact, EqualsReferenceOnLongArenas) {
  RV_SKIP_WITHOUT_GPU();
  const std::size_t n = std::size_t{1} << 20;
  for (std::uint32_t world : {1u, 2u, 3u, 8u}) {
    LoopbackRanks ranks(world);
    for (Distribution dist : kAllDistributions) {
      for (Op op : {Op::kSum, Op::kMean}) {
        expect_equals_reference(ranks, arenas_of(dist, world, n, 9), op, dist);
      }
    }
  }
  // Many ranks over a long arena: the digits of 64 ranks summed in one table.
  LoopbackRanks ranks(64);
  expect_equals_reference(ranks, arenas_of(Distribution::kCancel, 64, n, 9), Op::kMean,
                          Distribution::kCancel);
}

// The exact result is a function of the multiset of addends: reversing and rotating the
// ranks gives the same bits (the fixed-order contract would not).
TEST(LoopbackExact, RankPermutationChangesNoBit) {
  RV_SKIP_WITHOUT_GPU();
  LoopbackRanks ranks(8);
  for (Distribution dist : kAllDistributions) {
    const Arenas arenas = arenas_of(dist, 8, 5000, 77);
    Arenas reversed(arenas.rbegin(), arenas.rend());
    Arenas rotated = arenas;
    std::rotate(rotated.begin(), rotated.begin() + 3, rotated.end());
    for (Op op : {Op::kSum, Op::kMean}) {
      const auto base = ranks.all_reduce(arenas, Contract::kExact, op)[0];
      EXPECT_TRUE(same_bits(base, ranks.all_reduce(reversed, Contract::kExact, op)[5]))
          << to_string(dist) << " " << to_string(op);
      EXPECT_TRUE(same_bits(base, ranks.all_reduce(rotated, Contract::kExact, op)[2]))
          << to_string(dist) << " " << to_string(op);
    }
  }
}

// Ranks with different lengths are an InputError on every rank (the exact reducer agrees on
// n before any word moves); the wrong number of arenas is one before anything runs.
TEST(LoopbackExact, RejectsBadArenas) {
  RV_SKIP_WITHOUT_GPU();
  LoopbackRanks ranks(2);
  EXPECT_THROW(ranks.all_reduce({{1.0f}}, Contract::kExact, Op::kSum), InputError);
  EXPECT_THROW(ranks.all_reduce({{1.0f, 2.0f}, {1.0f}}, Contract::kExact, Op::kSum), InputError);
}

}  // namespace
}  // namespace rv

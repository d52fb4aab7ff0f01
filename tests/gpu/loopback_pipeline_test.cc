// The fixed-order reducer over the loopback transport in pieces (FixedOrderOptions's piece
// tables, LoopbackRanksOptions::piece_table_bytes): over any number of pieces it gives the
// bits of one piece and of EmulatedWorld (the contract) for every rank, for uneven shards,
// n < W, n = 0 and more pieces than a shard has elements; reducing again on the same ranks
// reuses their scratch without a trace; and the GPU default cuts the suite's largest arena in
// two and still gives the contract's bits. A fold that ran before its piece's copies had
// landed, or a piece boundary cut differently in the copies and the fold, shows here as
// different bits (the arenas are large enough for the ranks' streams to race).
#include <gtest/gtest.h>

#include <cstddef>
#include <iterator>
#include <vector>

#include "core/arena.h"
#include "core/cuda/fixed_order/cuda_fixed_order_device.h"
#include "core/oracle/emulated_world.h"
#include "core/reducer/fixed_order_reducer.h"
#include "core/shard_plan.h"
#include "verify/live/loopback_ranks.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using cuda_loopback::LoopbackRanks;
using cuda_loopback::LoopbackRanksOptions;
using test::arenas_of;
using test::same_bits;

// Table bytes that cut rank 0's shard into about `pieces` pieces (the reducer's rule: shard
// 0 is the largest; whole tables of W slots).
std::size_t table_bytes_for(std::uint32_t world, std::size_t n, std::size_t pieces) {
  const std::size_t table = shard_plan(n, world)[0].count * sizeof(float) * world;
  return std::max<std::size_t>(1, table / pieces);
}

LoopbackRanksOptions in_pieces(std::size_t table_bytes, std::uint64_t seed) {
  LoopbackRanksOptions options;
  options.piece_table_bytes = table_bytes;
  options.delivery_seed = seed;
  return options;
}

TEST(LoopbackPipeline, EveryPieceCountGivesTheBitsOfOnePieceAndOfTheContract) {
  RV_SKIP_WITHOUT_GPU();
  std::size_t trial = 0;
  for (std::uint32_t world : {1u, 2u, 3u, 5u, 8u}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{world - 1},
                          std::size_t{world + 1}, std::size_t{4099}, std::size_t{100003}}) {
      for (Op op : {Op::kSum, Op::kMean}) {
        const Distribution dist = kAllDistributions[trial++ % std::size(kAllDistributions)];
        const auto arenas = arenas_of(dist, world, n, 300 + n);
        auto expected = arenas;
        EmulatedWorld(world).all_reduce(expected, op, shuffled_delivery_orders(world, 11, n));
        const auto whole =
            LoopbackRanks(world, in_pieces(0, n)).all_reduce(arenas, Contract::kFixedOrder, op);
        for (std::size_t pieces : {2, 3, 4, 7, 16}) {
          LoopbackRanks ranks(world, in_pieces(table_bytes_for(world, n, pieces), n + pieces));
          const auto pipelined = ranks.all_reduce(arenas, Contract::kFixedOrder, op);
          ASSERT_EQ(pipelined.size(), world);
          for (std::uint32_t r = 0; r < world; ++r) {
            EXPECT_TRUE(same_bits(whole[r], pipelined[r]))
                << "against one piece: rank " << r << " W=" << world << " n=" << n
                << " pieces=" << pieces << " " << to_string(dist) << " " << to_string(op);
            EXPECT_TRUE(same_bits(expected[r], pipelined[r]))
                << "against EmulatedWorld: rank " << r << " W=" << world << " n=" << n
                << " pieces=" << pieces << " " << to_string(dist) << " " << to_string(op);
          }
        }
      }
    }
  }
}

// Large pieces: the copies of one rank run while another folds, so a missing
// synchronisation shows.
TEST(LoopbackPipeline, LongArenasInManyPiecesEqualTheContract) {
  RV_SKIP_WITHOUT_GPU();
  const struct {
    std::uint32_t world;
    std::size_t n;
    std::size_t pieces;
  } cases[] = {{4, 4000037, 5}, {7, 4000037, 8}, {16, 1000003, 3}, {2, 4000037, 64}};
  for (const auto& c : cases) {
    const auto arenas = arenas_of(Distribution::kCancel, c.world, c.n, 17);
    auto expected = arenas;
    EmulatedWorld(c.world).all_reduce(expected, Op::kMean);
    LoopbackRanks ranks(c.world, in_pieces(table_bytes_for(c.world, c.n, c.pieces), 17));
    const auto reduced = ranks.all_reduce(arenas, Contract::kFixedOrder, Op::kMean);
    for (std::uint32_t r = 0; r < c.world; ++r) {
      EXPECT_TRUE(same_bits(expected[r], reduced[r]))
          << "rank " << r << " W=" << c.world << " n=" << c.n << " pieces=" << c.pieces;
    }
  }
}

// The ranks' arenas and tables are reused: a second reduction of the (now equal) arenas,
// and one of another length, must not see the first one's bytes.
TEST(LoopbackPipeline, ReducingAgainReusesTheScratchCleanly) {
  RV_SKIP_WITHOUT_GPU();
  const std::uint32_t world = 3;
  const std::size_t n = 100003;
  for (std::size_t pieces : {1, 2, 5}) {
    LoopbackRanks ranks(world, in_pieces(table_bytes_for(world, n, pieces), pieces));
    auto expected = arenas_of(Distribution::kNormal, world, n, 23);
    auto current = expected;
    for (int round = 0; round < 2; ++round) {
      EmulatedWorld(world).all_reduce(expected, Op::kSum);
      current = ranks.all_reduce(current, Contract::kFixedOrder, Op::kSum);
      for (std::uint32_t r = 0; r < world; ++r) {
        EXPECT_TRUE(same_bits(expected[r], current[r]))
            << "round " << round << " rank " << r << " pieces=" << pieces;
      }
    }
    auto shorter = arenas_of(Distribution::kWide, world, 4099, 29);
    const auto reduced = ranks.all_reduce(shorter, Contract::kFixedOrder, Op::kMean);
    EmulatedWorld(world).all_reduce(shorter, Op::kMean);
    for (std::uint32_t r = 0; r < world; ++r) EXPECT_TRUE(same_bits(shorter[r], reduced[r]));
  }
}

// The GPU default (64 MiB tables, FixedOrderOptions::for_device) at the committed suite's
// largest arena: two pieces, and the contract's bits.
TEST(LoopbackPipeline, TheSuitesLargestArenaInDefaultPiecesEqualsTheContract) {
  RV_SKIP_WITHOUT_GPU();
  const std::uint32_t world = 2;
  const std::size_t n = 16777259;
  const std::size_t table = shard_plan(n, world)[0].count * sizeof(float) * world;
  const std::size_t limit =
      FixedOrderOptions::for_device(CudaFixedOrderDevice(0)).piece_table_bytes;
  ASSERT_EQ((table + limit - 1) / limit, 2u);
  const auto arenas = arenas_of(Distribution::kWide, world, n, 3);
  auto expected = arenas;
  EmulatedWorld(world).all_reduce(expected, Op::kSum);
  const auto reduced = LoopbackRanks(world).all_reduce(arenas, Contract::kFixedOrder, Op::kSum);
  for (std::uint32_t r = 0; r < world; ++r) EXPECT_TRUE(same_bits(expected[r], reduced[r]));
}

}  // namespace
}  // namespace rv

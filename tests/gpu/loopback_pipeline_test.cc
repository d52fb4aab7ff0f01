// The loopback world in pieces (core/cuda/loopback_pipeline.h): pipelined over any number of
// pieces it gives the bits of one piece and of EmulatedWorld (the contract) for every rank,
// for uneven shards, n < W, n = 0 and more pieces than a shard has elements; reducing the
// same arenas again reuses the tables without a trace; the default piece count is the GPU
// reducer's. A fold that ran before its piece's copies had landed, or an all-gather before
// its fold, or a piece boundary cut differently in the copies and the fold, shows here as
// different bits (the arenas are large enough for the streams to race).
#include "core/cuda/loopback_pipeline.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <iterator>
#include <vector>

#include "core/arena.h"
#include "core/cuda/loopback_world.h"
#include "core/oracle/emulated_world.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using test::arenas_of;
using test::same_bits;

TEST(LoopbackPipeline, EveryPieceCountGivesTheBitsOfOnePieceAndOfTheContract) {
  RV_SKIP_WITHOUT_GPU();
  std::size_t trial = 0;
  for (std::uint32_t world : {1u, 2u, 3u, 5u, 8u}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{world - 1},
                          std::size_t{world + 1}, std::size_t{4099}, std::size_t{100003}}) {
      for (Op op : {Op::kSum, Op::kMean}) {
        const Distribution dist = kAllDistributions[trial++ % std::size(kAllDistributions)];
        const auto arenas = arenas_of(dist, world, n, 300 + n);
        const DeliveryOrders orders = shuffled_delivery_orders(world, 11, n + world);
        auto expected = arenas;
        EmulatedWorld(world).all_reduce(expected, op, orders);
        const auto whole = loopback_all_reduce(arenas, op, orders, 0, 1);
        for (std::size_t pieces : {2, 3, 4, 7, 16}) {
          const auto pipelined = loopback_all_reduce(arenas, op, orders, 0, pieces);
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

// Large pieces on many streams: the copies of one piece run long enough to overlap the
// fold of the other, so a missing event shows.
TEST(LoopbackPipeline, LongArenasInManyPiecesEqualTheContract) {
  RV_SKIP_WITHOUT_GPU();
  const struct {
    std::uint32_t world;
    std::size_t n;
    std::size_t pieces;
  } cases[] = {{4, 4000037, 5}, {7, 4000037, 8}, {16, 1000003, 3}, {2, 4000037, 64}};
  for (const auto& c : cases) {
    const auto arenas = arenas_of(Distribution::kCancel, c.world, c.n, 17);
    const DeliveryOrders orders = shuffled_delivery_orders(c.world, 17, 2);
    auto expected = arenas;
    EmulatedWorld(c.world).all_reduce(expected, Op::kMean, orders);
    const auto reduced = loopback_all_reduce(arenas, Op::kMean, orders, 0, c.pieces);
    for (std::uint32_t r = 0; r < c.world; ++r) {
      EXPECT_TRUE(same_bits(expected[r], reduced[r]))
          << "rank " << r << " W=" << c.world << " n=" << c.n << " pieces=" << c.pieces;
    }
  }
}

// The tables and the reduced shards are reused: a second reduction of the (now equal)
// arenas must not see the first one's bytes.
TEST(LoopbackPipeline, ReducingAgainReusesTheTablesCleanly) {
  RV_SKIP_WITHOUT_GPU();
  const std::uint32_t world = 3;
  const std::size_t n = 100003;
  for (std::size_t pieces : {1, 2, 5}) {
    auto expected = arenas_of(Distribution::kNormal, world, n, 23);
    LoopbackPipeline pipeline(0, world, n, pieces);
    ASSERT_EQ(pipeline.pieces(), pieces);
    for (std::uint32_t r = 0; r < world; ++r) pipeline.upload(r, expected[r]);
    for (int round = 0; round < 2; ++round) {
      const DeliveryOrders orders = shuffled_delivery_orders(world, 5, round);
      EmulatedWorld(world).all_reduce(expected, Op::kSum, orders);
      pipeline.enqueue(Op::kSum, orders);
      pipeline.synchronize();
      for (std::uint32_t r = 0; r < world; ++r) {
        EXPECT_TRUE(same_bits(expected[r], pipeline.download(r)))
            << "round " << round << " rank " << r << " pieces=" << pieces;
      }
    }
  }
}

// An empty world and an empty arena enqueue and reduce nothing, in any number of pieces.
TEST(LoopbackPipeline, EmptyArenasInPieces) {
  RV_SKIP_WITHOUT_GPU();
  for (std::size_t pieces : {0, 1, 3}) {
    LoopbackPipeline pipeline(0, 4, 0, pieces);
    EXPECT_GE(pipeline.pieces(), 1u);
    pipeline.enqueue(Op::kMean, {});
    pipeline.synchronize();
    EXPECT_TRUE(pipeline.download(3).empty());
  }
}

// 0 pieces: as many as a GPU rank of the fixed-order reducer (64 MiB tables) cuts: one up
// to a 64 MiB table, then one more per 64 MiB.
TEST(LoopbackPipeline, DefaultPiecesAreTheGpuReducers) {
  RV_SKIP_WITHOUT_GPU();
  EXPECT_EQ(LoopbackPipeline(0, 4, 1000).pieces(), 1u);
  EXPECT_EQ(LoopbackPipeline(0, 2, std::size_t{16} << 20).pieces(), 1u);  // a 64 MiB table
  EXPECT_EQ(LoopbackPipeline(0, 2, (std::size_t{16} << 20) + 2).pieces(), 2u);
  EXPECT_EQ(LoopbackPipeline(0, 4, std::size_t{48} << 20).pieces(), 3u);  // 192 MiB tables
}

// The default at the committed suite's largest arena (two pieces): the contract's bits.
TEST(LoopbackPipeline, TheSuitesLargestArenaInDefaultPiecesEqualsTheContract) {
  RV_SKIP_WITHOUT_GPU();
  const std::uint32_t world = 2;
  const std::size_t n = 16777259;
  ASSERT_EQ(LoopbackPipeline(0, world, n).pieces(), 2u);
  const auto arenas = arenas_of(Distribution::kWide, world, n, 3);
  const DeliveryOrders orders = shuffled_delivery_orders(world, 3, 1);
  auto expected = arenas;
  EmulatedWorld(world).all_reduce(expected, Op::kSum, orders);
  const auto reduced = loopback_all_reduce(arenas, Op::kSum, orders, 0);
  for (std::uint32_t r = 0; r < world; ++r) EXPECT_TRUE(same_bits(expected[r], reduced[r]));
}

}  // namespace
}  // namespace rv

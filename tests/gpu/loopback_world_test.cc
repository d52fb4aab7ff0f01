// The one-GPU loopback world equals EmulatedWorld (the contract) bit for bit for every
// rank, under shuffled delivery orders, for worlds and lengths the suite uses, uneven
// shards and empty ones included.
#include "core/cuda/loopback_world.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/arena.h"
#include "core/oracle/emulated_world.h"
#include "core/error.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using test::arenas_of;
using test::same_bits;

TEST(LoopbackWorld, EqualsEmulatedWorldForEveryRank) {
  RV_SKIP_WITHOUT_GPU();
  for (std::uint32_t world : {1u, 2u, 3u, 5u, 8u, 16u, 64u}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{world - 1},
                          std::size_t{1000}, std::size_t{4099}}) {
      for (Distribution dist : kAllDistributions) {
        for (Op op : {Op::kSum, Op::kMean}) {
          const auto arenas = arenas_of(dist, world, n, 100 + n);
          const DeliveryOrders orders = shuffled_delivery_orders(world, 9, n);
          auto expected = arenas;
          EmulatedWorld(world).all_reduce(expected, op, orders);
          const auto reduced = loopback_all_reduce(arenas, op, orders, 0);
          ASSERT_EQ(reduced.size(), world);
          for (std::uint32_t r = 0; r < world; ++r) {
            EXPECT_TRUE(same_bits(expected[r], reduced[r]))
                << "rank " << r << " W=" << world << " n=" << n << " " << to_string(dist) << " "
                << to_string(op);
          }
        }
      }
    }
  }
}

TEST(LoopbackWorld, EqualsEmulatedWorldAt256RanksAndLongArenas) {
  RV_SKIP_WITHOUT_GPU();
  const struct {
    std::uint32_t world;
    std::size_t n;
  } cases[] = {{256, 100003}, {4, 1000003}, {7, 1000003}};
  for (const auto& c : cases) {
    const auto arenas = arenas_of(Distribution::kCancel, c.world, c.n, 5);
    const DeliveryOrders orders = shuffled_delivery_orders(c.world, 5, 1);
    auto expected = arenas;
    EmulatedWorld(c.world).all_reduce(expected, Op::kMean, orders);
    const auto reduced = loopback_all_reduce(arenas, Op::kMean, orders, 0);
    for (std::uint32_t r = 0; r < c.world; r += 37) {
      EXPECT_TRUE(same_bits(expected[r], reduced[r])) << "rank " << r << " W=" << c.world;
    }
    EXPECT_TRUE(same_bits(expected.back(), reduced.back()));
  }
}

// Checks that need no device: they fail before any CUDA call.
TEST(LoopbackWorld, RejectsBadArenasAndOrders) {
  EXPECT_THROW(loopback_all_reduce({}, Op::kSum, {}, 0), InputError);
  EXPECT_THROW(loopback_all_reduce({{1.0f, 2.0f}, {1.0f}}, Op::kSum, {}, 0), InputError);
  EXPECT_THROW(loopback_all_reduce({{1.0f}, {2.0f}}, Op::kSum, {{0, 1}, {1, 1}}, 0), InputError);
  EXPECT_THROW(loopback_all_reduce({{1.0f}, {2.0f}}, Op::kSum, {{0, 1}}, 0), InputError);
}

TEST(LoopbackWorld, SlotStrideIsWholeVectorUnits) {
  EXPECT_EQ(stacked_slot_stride(0), 0u);
  EXPECT_EQ(stacked_slot_stride(1), 4u);
  EXPECT_EQ(stacked_slot_stride(4), 4u);
  EXPECT_EQ(stacked_slot_stride(391), 392u);
}

}  // namespace
}  // namespace rv

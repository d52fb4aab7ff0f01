// The in-process world's shuffled delivery (InProcessWorld with a delivery seed, the same
// world the one-GPU loopback transport runs on): every exchange issues its copies into a rank
// in a new seeded order of the source ranks, each still into its source rank's slot, so the
// fixed-order reducer over it gives EmulatedWorld's bits. A copy written to the slot of its
// place in the order instead would change them, and this test would fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/arena.h"
#include "core/fold_law.h"
#include "core/oracle/emulated_world.h"
#include "core/reducer/fixed_order_device.h"
#include "core/reducer/fixed_order_reducer.h"
#include "core/transport/in_process/in_process_world.h"
#include "core/transport/in_process/rank_threads.h"

namespace rv {
namespace {

using in_process::InProcessWorld;
using in_process::RankThreads;

TEST(InProcessDelivery, OrdersArePermutationsNewAtEveryExchange) {
  const std::uint32_t world = 6;
  const InProcessWorld plain(world, std::chrono::milliseconds(1000));
  const InProcessWorld shuffled(world, std::chrono::milliseconds(1000), 17);
  std::vector<std::uint32_t> ascending(world);
  std::iota(ascending.begin(), ascending.end(), 0u);
  int unsorted = 0;
  for (std::uint32_t rank = 0; rank < world; ++rank) {
    for (std::uint64_t trial = 1; trial <= 4; ++trial) {
      EXPECT_EQ(plain.delivery_order(rank, trial), ascending);
      std::vector<std::uint32_t> order = shuffled.delivery_order(rank, trial);
      EXPECT_EQ(order, shuffled_delivery_orders(world, 17, trial)[rank]);
      unsorted += !std::is_sorted(order.begin(), order.end());
      std::sort(order.begin(), order.end());
      EXPECT_EQ(order, ascending) << "rank " << rank << " trial " << trial;
    }
    EXPECT_NE(shuffled.delivery_order(rank, 1), shuffled.delivery_order(rank, 2));
  }
  EXPECT_GT(unsorted, 20) << "the shuffles must mostly differ from ascending";
}

TEST(InProcessDelivery, TheFixedOrderReducerGivesTheContractsBits) {
  const std::uint32_t world = 5;
  const std::size_t n = 10007;
  std::vector<std::vector<float>> arenas;
  for (std::uint32_t r = 0; r < world; ++r) {
    arenas.push_back(generate_arena(ArenaSpec{kLatestGenerator, Distribution::kCancel, 4}, r, n));
  }
  auto expected = arenas;
  EmulatedWorld(world).all_reduce(expected, Op::kSum);
  // Small tables: several pieces, so several exchanges, each in its own order.
  FixedOrderOptions options = FixedOrderOptions::for_device(host_fixed_order_device());
  options.piece_table_bytes = 4096;
  InProcessWorld shuffled(world, std::chrono::milliseconds(20000), 23);
  RankThreads threads(world);
  auto reduced = arenas;
  const auto outcome = threads.run([&](std::uint32_t rank) {
    auto transport = shuffled.connect(rank);
    FixedOrderReducer reducer(*transport, host_fixed_order_device(), options);
    reducer.all_reduce(reduced[rank].data(), n, Op::kSum);
  });
  in_process::expect_no_errors(outcome.ranks);
  for (std::uint32_t r = 0; r < world; ++r) {
    ASSERT_EQ(reduced[r].size(), n);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(float_bits(reduced[r][i]), float_bits(expected[r][i]))
          << "rank " << r << " element " << i;
    }
  }
}

}  // namespace
}  // namespace rv

// The one-GPU loopback transport (core/transport/cuda_loopback) and the fixed-order reducer
// over it: every rank equals EmulatedWorld (the contract) bit for bit, under the shuffled
// delivery its exchanges issue, for the worlds and lengths the suite uses, uneven shards and
// empty ones included; and the transport's collectives do what the Transport contract says
// for device and host memory.
#include "core/transport/cuda_loopback/cuda_loopback_world.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "core/arena.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/fixed_order/cuda_fixed_order_device.h"
#include "core/error.h"
#include "core/oracle/emulated_world.h"
#include "verify/live/loopback_ranks.h"
#include "core/transport/in_process/rank_threads.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using cuda_loopback::CudaLoopbackWorld;
using cuda_loopback::LoopbackRanks;
using cuda_loopback::LoopbackRanksOptions;
using test::arenas_of;
using test::same_bits;

LoopbackRanksOptions seeded(std::uint64_t seed) {
  LoopbackRanksOptions options;
  options.delivery_seed = seed;
  return options;
}

TEST(LoopbackWorld, EqualsEmulatedWorldForEveryRank) {
  RV_SKIP_WITHOUT_GPU();
  for (std::uint32_t world : {1u, 2u, 3u, 5u, 8u, 16u, 64u}) {
    LoopbackRanks ranks(world, seeded(9 + world));
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{world - 1},
                          std::size_t{1000}, std::size_t{4099}}) {
      for (Distribution dist : kAllDistributions) {
        for (Op op : {Op::kSum, Op::kMean}) {
          const auto arenas = arenas_of(dist, world, n, 100 + n);
          auto expected = arenas;
          EmulatedWorld(world).all_reduce(expected, op, shuffled_delivery_orders(world, 9, n));
          const auto reduced = ranks.all_reduce(arenas, Contract::kFixedOrder, op);
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
    auto expected = arenas;
    EmulatedWorld(c.world).all_reduce(expected, Op::kMean, shuffled_delivery_orders(c.world, 5, 1));
    LoopbackRanks ranks(c.world, seeded(5));
    const auto reduced = ranks.all_reduce(arenas, Contract::kFixedOrder, Op::kMean);
    for (std::uint32_t r = 0; r < c.world; r += 37) {
      EXPECT_TRUE(same_bits(expected[r], reduced[r])) << "rank " << r << " W=" << c.world;
    }
    EXPECT_TRUE(same_bits(expected.back(), reduced.back()));
  }
}

// Ranks with different lengths are an InputError on every rank (the reducer's agreement),
// the wrong number of arenas an InputError before anything runs, and library-sum is refused:
// the loopback has no library.
TEST(LoopbackWorld, RejectsBadArenasAndTheLibrarySum) {
  RV_SKIP_WITHOUT_GPU();
  {
    LoopbackRanks ranks(2);
    EXPECT_THROW(ranks.all_reduce({{1.0f}}, Contract::kFixedOrder, Op::kSum), InputError);
    EXPECT_THROW(ranks.all_reduce({{1.0f}, {2.0f}}, Contract::kLibrarySum, Op::kSum), InputError);
  }
  LoopbackRanks ranks(2);
  EXPECT_THROW(ranks.all_reduce({{1.0f, 2.0f}, {1.0f}}, Contract::kFixedOrder, Op::kSum),
               InputError);
  // A failed world refuses further work instead of hanging.
  EXPECT_THROW(ranks.all_reduce({{1.0f}, {2.0f}}, Contract::kFixedOrder, Op::kSum), RuntimeFailure);
}

// The transport itself, one rank thread per rank, each with its own device (stream).
class LoopbackTransport : public ::testing::Test {
 protected:
  template <typename Body>
  void on_every_rank(std::uint32_t world, Body body) {
    CudaLoopbackWorld loopback(world, 0, std::chrono::milliseconds(20000), 3);
    in_process::RankThreads threads(world);
    const auto outcome = threads.run([&](std::uint32_t rank) {
      CudaFixedOrderDevice device(0);
      auto transport = loopback.connect(rank, device);
      body(rank, device, *transport);
    });
    in_process::expect_no_errors(outcome.ranks);
  }
};

TEST_F(LoopbackTransport, IntegerAllReduceOfDeviceWordsSumsAndMaxes) {
  RV_SKIP_WITHOUT_GPU();
  for (std::uint32_t world : {1u, 2u, 3u, 8u}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{1001}}) {
      on_every_rank(world, [&](std::uint32_t rank, CudaFixedOrderDevice& device, Transport& t) {
        // Rank r holds r·n + i − 7·(i % 3) at i: sums and maxima differ from any one rank's.
        std::vector<std::int64_t> mine(n), sum(n, 0), max(n);
        for (std::size_t i = 0; i < n; ++i) {
          for (std::uint32_t r = 0; r < world; ++r) {
            const auto v =
                static_cast<std::int64_t>(r * n + i) - 7 * static_cast<std::int64_t>((i + r) % 3);
            if (r == rank) mine[i] = v;
            sum[i] += v;
            max[i] = r == 0 ? v : std::max(max[i], v);
          }
        }
        for (IntReduction op : {IntReduction::kSum, IntReduction::kMax}) {
          DeviceBuffer words(0, n * sizeof(std::int64_t));
          if (n != 0) words.upload(mine.data(), n * sizeof(std::int64_t));
          t.all_reduce_int64(static_cast<std::int64_t*>(words.data()), n, op);
          std::vector<std::int64_t> got(n);
          if (n != 0) words.download(got.data(), n * sizeof(std::int64_t));
          EXPECT_EQ(got, op == IntReduction::kSum ? sum : max)
              << "rank " << rank << " W=" << world << " n=" << n;
        }
        (void)device;
      });
    }
  }
}

TEST_F(LoopbackTransport, GathersAndBroadcastsHostAndDeviceBytes) {
  RV_SKIP_WITHOUT_GPU();
  const std::uint32_t world = 5;
  on_every_rank(world, [&](std::uint32_t rank, CudaFixedOrderDevice& device, Transport& t) {
    // Host memory (the agreement records' case).
    const std::uint64_t mine = 1000 + rank;
    std::vector<std::uint64_t> all(world, 0);
    t.all_gather(&mine, all.data(), sizeof(mine));
    for (std::uint32_t r = 0; r < world; ++r) EXPECT_EQ(all[r], 1000 + r) << "rank " << rank;
    // Device memory.
    DeviceBuffer in(0, sizeof(float)), out(0, world * sizeof(float));
    const float value = 0.5f + static_cast<float>(rank);
    in.upload(&value, sizeof(value));
    t.all_gather(in.data(), out.data(), sizeof(float));
    const std::vector<float> gathered = out.download_floats(world);
    for (std::uint32_t r = 0; r < world; ++r) EXPECT_EQ(gathered[r], 0.5f + static_cast<float>(r));
    t.broadcast(in.data(), sizeof(float), 3);
    EXPECT_EQ(in.download_floats(1)[0], 3.5f) << "rank " << rank;
    EXPECT_EQ(t.max_int(static_cast<std::int64_t>(rank) * 10 - 20), 20);
    t.barrier();
    (void)device;
  });
}

TEST_F(LoopbackTransport, HasNoLibrarySumAndRefusesMismatchedSizes) {
  RV_SKIP_WITHOUT_GPU();
  on_every_rank(1, [](std::uint32_t, CudaFixedOrderDevice&, Transport& t) {
    float value = 1.0f;
    EXPECT_THROW(t.library_sum(&value, 1), InputError);
    EXPECT_EQ(t.name(), "cuda-loopback");
  });
  CudaLoopbackWorld loopback(2, 0, std::chrono::milliseconds(20000), 0);
  in_process::RankThreads threads(2);
  const auto outcome = threads.run([&](std::uint32_t rank) {
    CudaFixedOrderDevice device(0);
    auto transport = loopback.connect(rank, device);
    DeviceBuffer words(0, 2 * sizeof(std::int64_t));
    transport->all_reduce_int64(static_cast<std::int64_t*>(words.data()), rank + 1,
                                IntReduction::kSum);
  });
  for (std::uint32_t r = 0; r < 2; ++r) {
    EXPECT_TRUE(in_process::is_error<InputError>(outcome.ranks[r].error))
        << "rank " << r << ": " << in_process::error_text(outcome.ranks[r].error);
  }
}

}  // namespace
}  // namespace rv

// The reduce-scatter (docs/DESIGN.md §2.6) on one GPU: every rank's shard, from the real
// fixed-order and exact reducers over the loopback transport (shuffled delivery), equals
// EmulatedWorld's reduce-scatter bit for bit, in f32, bf16 and f16, for uneven, empty and
// long shards; and the exact device's owner reduction (CudaExactDevice::reduce_stacked, with
// its narrow-reduce-widen path for the halves) equals the host's on tables whose slots are
// padded apart.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/case_id.h"
#include "core/cuda/exact/cuda_exact_device.h"
#include "core/cuda/fixed_order/cuda_fixed_order_device.h"
#include "core/oracle/case_reduction.h"
#include "core/oracle/emulated_world.h"
#include "core/reducer/exact_device.h"
#include "verify/live/loopback_ranks.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using cuda_loopback::LoopbackRanks;
using cuda_loopback::LoopbackRanksOptions;
using test::same_bits;

CaseId case_of(Contract contract, Op op, DType dtype, std::uint32_t world, std::size_t n,
               Distribution dist) {
  CaseId id;
  id.contract = contract;
  id.op = op;
  id.dtype = dtype;
  id.world = world;
  id.count = n;
  id.dist = dist;
  id.seed = 3;
  id.coll = Collective::kReduceScatter;
  return id;
}

void expect_shards_equal_emulated(LoopbackRanks& ranks, const CaseId& id) {
  const auto arenas = generate_case_arenas(id);
  const EmulatedWorld world(id.world);
  const auto expected = id.contract == Contract::kExact
                            ? world.reduce_scatter_exact(arenas, id.op, {}, id.dtype)
                            : world.reduce_scatter(arenas, id.op, {}, id.dtype);
  std::vector<std::vector<float>> shards(id.world);
  ranks.run([&](std::uint32_t r) {
    shards[r] = ranks.reduce(r, arenas[r], id.contract, id.op, id.dtype,
                             Collective::kReduceScatter);
  });
  for (std::uint32_t r = 0; r < id.world; ++r) {
    EXPECT_TRUE(same_bits(expected[r], shards[r])) << "rank " << r << ": " << format_case_id(id);
  }
}

TEST(LoopbackReduceScatter, EveryShardEqualsEmulatedWorld) {
  RV_SKIP_WITHOUT_GPU();
  for (std::uint32_t world : {1u, 2u, 3u, 5u, 8u}) {
    LoopbackRanksOptions options;
    options.delivery_seed = 40 + world;
    LoopbackRanks ranks(world, options);
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{world - 1},
                          std::size_t{1000}, std::size_t{4099}}) {
      for (Contract contract : {Contract::kFixedOrder, Contract::kExact}) {
        for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
          for (Distribution dist : {Distribution::kNormal, Distribution::kSpecial}) {
            for (Op op : {Op::kSum, Op::kMean}) {
              expect_shards_equal_emulated(ranks, case_of(contract, op, dtype, world, n, dist));
            }
          }
        }
      }
    }
  }
}

TEST(LoopbackReduceScatter, LongShardsEqualEmulatedWorld) {
  RV_SKIP_WITHOUT_GPU();
  LoopbackRanks ranks(3, LoopbackRanksOptions{});
  for (Contract contract : {Contract::kFixedOrder, Contract::kExact}) {
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      expect_shards_equal_emulated(
          ranks, case_of(contract, Op::kMean, dtype, 3, (1u << 20) + 3, Distribution::kCancel));
    }
  }
}

TEST(CudaExactDeviceReduceStacked, EqualsTheHostOnPaddedTables) {
  RV_SKIP_WITHOUT_GPU();
  CudaFixedOrderDevice fixed_order_device(0);
  CudaExactDevice exact(fixed_order_device);
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (std::uint32_t world : {1u, 2u, 7u}) {
      const std::size_t n = 3001;
      const std::size_t stride = n + 5;  // gaps between the slots, never read
      const auto arenas = generate_case_arenas(
          case_of(Contract::kExact, Op::kMean, dtype, world, stride, Distribution::kSpecial));
      std::vector<float> table;
      for (const auto& arena : arenas) table.insert(table.end(), arena.begin(), arena.end());
      for (Op op : {Op::kSum, Op::kMean}) {
        std::vector<float> expected(n);
        host_exact_device().reduce_stacked(table.data(), world, stride, n, op, expected.data(),
                                           dtype);
        float* d_table = fixed_order_device.allocate(table.size());
        float* d_out = fixed_order_device.allocate(n);
        fixed_order_device.upload(d_table, table.data(), table.size() * sizeof(float));
        exact.reduce_stacked(d_table, world, stride, n, op, d_out, dtype);
        exact.synchronize();
        std::vector<float> got(n);
        fixed_order_device.download(got.data(), d_out, n * sizeof(float));
        fixed_order_device.free(d_table);
        fixed_order_device.free(d_out);
        EXPECT_TRUE(same_bits(expected, got))
            << to_string(dtype) << " W=" << world << " " << to_string(op);
      }
    }
  }
}

}  // namespace
}  // namespace rv

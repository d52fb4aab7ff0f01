// The exact contract's rounding to bf16/f16 on a GPU (docs/DESIGN.md §2.5): the round kernel
// with a dtype (launch_exact_round(…, dtype)) against host_exact.h's exact_round(…, dtype), bit
// for bit, on summed words of every distribution (one-limb, two-limb, wide and special blocks);
// and the exact and fixed-order reducers over the one-GPU loopback world with a dtype, on every
// rank, against the straight references of the oracle.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/arena.h"
#include "core/contract.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/dtype.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_plan.h"
#include "core/exact/host_exact.h"
#include "core/oracle/reference.h"
#include "verify/live/loopback_ranks.h"
#include "tests/gpu/exact_kernel_test_support.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using Arenas = std::vector<std::vector<float>>;
using test::same_bits;

constexpr DType kHalfDTypes[] = {DType::kBF16, DType::kF16};

Arenas half_arenas(DType dtype, Distribution dist, std::uint32_t world, std::size_t n,
                   std::uint64_t seed) {
  Arenas arenas;
  for (std::uint32_t r = 0; r < world; ++r) {
    arenas.push_back(generate_arena(ArenaSpec{kLatestGenerator, dist, seed, dtype}, r, n));
  }
  return arenas;
}

// The summed words of the arenas under their agreed plan, as the live reducers form them.
struct Summed {
  ExactPlan plan;
  std::vector<std::int64_t> sums;
};

Summed sum_words(const Arenas& arenas) {
  const auto world = static_cast<std::uint32_t>(arenas.size());
  const std::size_t n = arenas[0].size();
  const std::size_t words = exact_block_count(n) * exact::kAgreementWords;
  std::vector<std::int64_t> agreed(words), mine(words);
  exact_agreement_words(arenas[0].data(), n, agreed.data());
  for (std::uint32_t r = 1; r < world; ++r) {
    exact_agreement_words(arenas[r].data(), n, mine.data());
    merge_agreement_words(agreed.data(), mine.data(), words);
  }
  Summed s{plan_exact_blocks(agreed.data(), n, world), {}};
  s.sums.assign(s.plan.words, 0);
  std::vector<std::int64_t> digits(s.plan.words);
  for (const auto& arena : arenas) {
    exact_encode(arena.data(), s.plan, digits.data());
    for (std::size_t i = 0; i < digits.size(); ++i) s.sums[i] += digits[i];
  }
  return s;
}

TEST(ExactHalfRound, KernelEqualsHostOnEveryDistribution) {
  RV_SKIP_WITHOUT_GPU();
  for (const DType dtype : kHalfDTypes) {
    for (const std::uint32_t world : {1u, 2u, 3u, 7u, 64u}) {
      for (const std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{4099}}) {
        for (const Distribution dist : kAllDistributions) {
          const Summed s = sum_words(half_arenas(dtype, dist, world, n, 31 + n));
          const test::DevicePlan device_plan(s.plan);
          const DeviceBuffer in = test::upload_at(s.sums, 0);
          for (const Op op : {Op::kSum, Op::kMean}) {
            std::vector<float> expected(n);
            exact_round(s.sums.data(), s.plan, op, expected.data(), dtype);
            DeviceBuffer out(test::kDevice, (n + test::kGuard) * sizeof(float));
            out.fill_bytes(test::kPoisonByte);
            launch_exact_round(test::at<std::int64_t>(in, 0), device_plan.view, op, dtype,
                               test::at<float>(out, 0), nullptr);
            const test::Output<float> got = test::download_output<float>(out, 0, n);
            EXPECT_TRUE(got.guards_intact);
            EXPECT_TRUE(same_bits(expected, got.values))
                << to_string(dtype) << " W=" << world << " n=" << n << " " << to_string(dist) << " "
                << to_string(op);
          }
        }
      }
    }
  }
}

// The rounding is to the dtype itself: on this data, binary32's rounding differs (so a kernel
// that ignored the dtype would fail above). Host only.
TEST(ExactHalfRound, HalfResultsDifferFromBinary32s) {
  const Summed s = sum_words(half_arenas(DType::kBF16, Distribution::kNormal, 3, 1000, 2));
  std::vector<float> half(1000), single(1000);
  exact_round(s.sums.data(), s.plan, Op::kMean, half.data(), DType::kBF16);
  exact_round(s.sums.data(), s.plan, Op::kMean, single.data(), DType::kF32);
  EXPECT_FALSE(same_bits(half, single));
}

TEST(LoopbackHalf, ExactAndFixedOrderEqualTheReferenceOnEveryRank) {
  RV_SKIP_WITHOUT_GPU();
  for (const std::uint32_t world : {1u, 2u, 3u, 8u}) {
    cuda_loopback::LoopbackRanks ranks(world);
    for (const DType dtype : kHalfDTypes) {
      for (const std::size_t n : {std::size_t{1}, std::size_t{1025}, std::size_t{3 * 1024 + 77}}) {
        for (const Distribution dist : kAllDistributions) {
          const Arenas arenas = half_arenas(dtype, dist, world, n, 50 + n);
          for (const Op op : {Op::kSum, Op::kMean}) {
            const std::vector<float> exact = reference_exact(arenas, op, dtype);
            const std::vector<float> fold = reference_fixed_order(arenas, op, dtype);
            const Arenas by_exact = ranks.all_reduce(arenas, Contract::kExact, op, dtype);
            const Arenas by_fold = ranks.all_reduce(arenas, Contract::kFixedOrder, op, dtype);
            for (std::uint32_t r = 0; r < world; ++r) {
              EXPECT_TRUE(same_bits(exact, by_exact[r]))
                  << "exact rank " << r << " " << to_string(dtype) << " W=" << world << " n=" << n
                  << " " << to_string(dist) << " " << to_string(op);
              EXPECT_TRUE(same_bits(fold, by_fold[r]))
                  << "fixed-order rank " << r << " " << to_string(dtype) << " W=" << world
                  << " n=" << n << " " << to_string(dist) << " " << to_string(op);
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace rv

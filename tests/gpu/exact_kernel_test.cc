// The exact kernels against core/exact/host_exact.h, bit for bit: every distribution, W from
// 1 to 256, lengths around the block size (0, 1, 1023, 1024, 1025, 3·1024 + 77, 2^20), both
// ops, both mean divisions and both limb-width kernels, aligned and unaligned buffers.
// Outputs are poisoned before each launch and guard words after them must stay untouched,
// so a word written twice, missed or written out of range shows up. The round kernel's
// extreme sums and its mean divisions are in exact_round_kernel_test.cc, the combine kernel
// in exact_combine_kernel_test.cc.
#include "core/cuda/exact/exact_kernel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/cuda/device_buffer.h"
#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_plan.h"
#include "core/exact/host_exact.h"
#include "tests/gpu/exact_kernel_test_support.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using detail::LimbWidth;
using detail::MeanDivision;
using test::at;
using test::DevicePlan;
using test::download_output;
using test::gpu_round;
using test::kDevice;
using test::kGuard;
using test::kPoisonByte;
using test::kWorlds;
using test::Output;
using test::same_bits;
using test::same_words;
using test::upload_at;

constexpr std::size_t kCounts[] = {0, 1, 1023, 1024, 1025, 3 * 1024 + 77, std::size_t{1} << 20};
// Distinct arenas per case: rank r of a world of W holds arena r mod kDistinctRanks, so the
// summed digits of W = 256 ranks are as large as a real world's while the host work stays
// that of three ranks.
constexpr std::uint32_t kDistinctRanks = 3;

std::vector<std::int64_t> host_agreement(const std::vector<float>& values) {
  std::vector<std::int64_t> words(exact_block_count(values.size()) * exact::kAgreementWords);
  exact_agreement_words(values.data(), values.size(), words.data());
  return words;
}

Output<std::int64_t> gpu_agreement(const std::vector<float>& values, std::size_t offset,
                                   detail::AgreementLoads loads) {
  const DeviceBuffer in = upload_at(values, offset);
  const std::size_t words = exact_block_count(values.size()) * exact::kAgreementWords;
  DeviceBuffer out(kDevice, (offset + words + kGuard) * sizeof(std::int64_t));
  out.fill_bytes(kPoisonByte);
  detail::launch_exact_agreement_words_with(at<float>(in, offset), values.size(),
                                            at<std::int64_t>(out, offset), nullptr, loads);
  return download_output<std::int64_t>(out, offset, words);
}

Output<std::int64_t> gpu_encode(const std::vector<float>& values, const ExactPlan& plan,
                                std::size_t offset, LimbWidth width) {
  const DeviceBuffer in = upload_at(values, offset);
  const DevicePlan device_plan(plan);
  DeviceBuffer out(kDevice, (offset + plan.words + kGuard) * sizeof(std::int64_t));
  out.fill_bytes(kPoisonByte);
  detail::launch_exact_encode_with(at<float>(in, offset), device_plan.view,
                                   at<std::int64_t>(out, offset), nullptr, width);
  return download_output<std::int64_t>(out, offset, plan.words);
}

std::string describe(Distribution dist, std::uint32_t world, std::size_t n) {
  std::ostringstream out;
  out << to_string(dist) << " W=" << world << " n=" << n;
  return out.str();
}

// One distribution and length: the agreement words of each distinct rank; then, per world,
// the plan the merged words give, every distinct rank's digits, and the rounding of the
// digits summed over the W ranks, for both ops.
void expect_kernels_equal_host(Distribution dist, std::size_t n, std::size_t offset) {
  std::vector<std::vector<float>> arenas;
  std::vector<std::vector<std::int64_t>> agreement;
  for (std::uint32_t r = 0; r < kDistinctRanks; ++r) {
    arenas.push_back(generate_arena(ArenaSpec{kLatestGenerator, dist, 17 + n}, r, n));
    agreement.push_back(host_agreement(arenas.back()));
    for (detail::AgreementLoads loads : detail::kAllAgreementLoads) {
      const Output<std::int64_t> gpu = gpu_agreement(arenas.back(), offset, loads);
      EXPECT_TRUE(same_words(agreement.back(), gpu.values))
          << "agreement words, rank " << r << " " << describe(dist, 1, n) << " offset " << offset
          << " " << detail::to_string(loads);
      EXPECT_TRUE(gpu.guards_intact) << "agreement words written out of range";
    }
  }
  for (std::uint32_t world : kWorlds) {
    const std::string what = describe(dist, world, n) + " offset " + std::to_string(offset);
    const std::uint32_t distinct = std::min(world, kDistinctRanks);
    std::vector<std::int64_t> agreed = agreement[0];
    for (std::uint32_t r = 1; r < distinct; ++r) {
      merge_agreement_words(agreed.data(), agreement[r].data(), agreed.size());
    }
    const ExactPlan plan = plan_exact_blocks(agreed.data(), n, world);
    std::vector<std::int64_t> sums(plan.words, 0);
    for (std::uint32_t r = 0; r < distinct; ++r) {
      std::vector<std::int64_t> digits(plan.words);
      exact_encode(arenas[r].data(), plan, digits.data());
      for (LimbWidth width : detail::kAllLimbWidths) {
        const Output<std::int64_t> gpu = gpu_encode(arenas[r], plan, offset, width);
        EXPECT_TRUE(same_words(digits, gpu.values))
            << "digits, rank " << r << " " << what << " " << detail::to_string(width);
        EXPECT_TRUE(gpu.guards_intact) << "digits written out of range, " << what;
      }
      // Ranks r, r + 3, r + 6, … hold this arena.
      const auto copies = static_cast<std::int64_t>((world - 1 - r) / kDistinctRanks + 1);
      for (std::size_t i = 0; i < plan.words; ++i) sums[i] += copies * digits[i];
    }
    for (Op op : {Op::kSum, Op::kMean}) {
      std::vector<float> expected(n);
      exact_round(sums.data(), plan, op, expected.data());
      for (MeanDivision division : detail::kAllMeanDivisions) {
        if (!detail::applies_to(division, world)) continue;
        if (op == Op::kSum && division != detail::default_mean_division(world)) continue;
        const Output<float> gpu = gpu_round(sums, plan, op, offset, division);
        EXPECT_TRUE(same_bits(expected, gpu.values))
            << "rounding, " << what << " " << to_string(op) << " " << detail::to_string(division);
        EXPECT_TRUE(gpu.guards_intact) << "results written out of range, " << what;
      }
    }
  }
}

TEST(ExactKernel, EqualsHostOnEveryDistributionWorldAndLength) {
  RV_SKIP_WITHOUT_GPU();
  for (Distribution dist : kAllDistributions) {
    for (std::size_t n : kCounts) expect_kernels_equal_host(dist, n, 0);
  }
}

// Values, digits and results one element off their alignment: every vector access falls
// back to its scalar path (and the odd-sized last block's upper limbs always do).
TEST(ExactKernel, EqualsHostOnUnalignedBuffers) {
  RV_SKIP_WITHOUT_GPU();
  for (Distribution dist : kAllDistributions) {
    for (std::size_t n : {std::size_t{1025}, std::size_t{3 * 1024 + 77}}) {
      expect_kernels_equal_host(dist, n, 1);
    }
  }
}

// ---- checks before any launch (no device needed) -------------------------------------

TEST(ExactKernel, RejectsBadArguments) {
  std::int64_t word = 0;
  EXPECT_THROW(launch_combine_words(&word, 0, 1, 1, IntReduction::kSum, &word, nullptr),
               InputError);
  EXPECT_THROW(launch_combine_words(nullptr, 2, 1, 1, IntReduction::kSum, &word, nullptr),
               InputError);
  std::int64_t table[4] = {};
  // The output overlaps slot 1 (only an in-place combine into slot 0 is allowed).
  EXPECT_THROW(launch_combine_words(table, 2, 2, 2, IntReduction::kSum, table + 1, nullptr),
               InputError);
  EXPECT_THROW(launch_exact_agreement_words(nullptr, 5, &word, nullptr), InputError);

  ExactPlanView view;
  view.count = 1025;
  view.block_count = 1;  // a plan of 1025 elements has 2 blocks
  float value = 0;
  EXPECT_THROW(launch_exact_encode(&value, view, &word, nullptr), InputError);
  view.block_count = 2;  // the slots are not on the device
  EXPECT_THROW(launch_exact_encode(&value, view, &word, nullptr), InputError);
  ExactBlockSlot slot{};
  view.blocks = &slot;
  view.world = 8;  // limb width 62 is W = 1's, not W = 8's
  EXPECT_THROW(launch_exact_round(&word, view, Op::kSum, &value, nullptr), InputError);
  view.world = 3;  // limb width 61 is W = 3's; 3 is no power of two
  view.limb_bits = exact::limb_bits(3);
  view.count = 1;
  view.block_count = 1;
  EXPECT_THROW(detail::launch_exact_round_with(&word, view, Op::kMean, &value, nullptr,
                                               MeanDivision::kPowerOfTwo),
               InputError);
  // Nothing to do: no launch, no error.
  EXPECT_NO_THROW(launch_exact_agreement_words(nullptr, 0, nullptr, nullptr));
  EXPECT_NO_THROW(launch_exact_encode(nullptr, ExactPlanView{}, nullptr, nullptr));
  EXPECT_NO_THROW(launch_exact_round(nullptr, ExactPlanView{}, Op::kMean, nullptr, nullptr));
}

}  // namespace
}  // namespace rv

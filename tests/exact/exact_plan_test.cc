// The exact contract's windows and layout (docs/DESIGN.md §2): the limb width per W, one limb
// for gradient-like data, wider windows where the data is wide, corrupt agreement words
// refused, and results unchanged by a permutation of the ranks.
#include "core/exact/exact_plan.h"
#include "core/oracle/reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/arena.h"
#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_reduction.h"
#include "core/exact/host_exact.h"
#include "core/fold_law.h"
#include "core/oracle/emulated_world.h"
#include "core/seed_law.h"

namespace rv {
namespace {

using Arenas = std::vector<std::vector<float>>;

Arenas make_arenas(std::uint32_t w, std::size_t n, Distribution dist, std::uint64_t seed) {
  Arenas arenas;
  for (std::uint32_t r = 0; r < w; ++r) arenas.push_back(generate_arena({1, dist, seed}, r, n));
  return arenas;
}

ExactPlan agreed_plan(const Arenas& arenas) {
  const std::size_t n = arenas[0].size();
  std::vector<std::int64_t> agreed(exact_block_count(n) * exact::kAgreementWords);
  std::vector<std::int64_t> mine(agreed.size());
  for (std::size_t r = 0; r < arenas.size(); ++r) {
    exact_agreement_words(arenas[r].data(), n, r == 0 ? agreed.data() : mine.data());
    if (r != 0) merge_agreement_words(agreed.data(), mine.data(), agreed.size());
  }
  return plan_exact_blocks(agreed.data(), n, static_cast<std::uint32_t>(arenas.size()));
}

TEST(ExactPlan, LimbWidthKeepsEverySumInsideAnInt64) {
  EXPECT_EQ(exact::limb_bits(1), 62);
  EXPECT_EQ(exact::limb_bits(2), 62);
  EXPECT_EQ(exact::limb_bits(4), 61);
  EXPECT_EQ(exact::limb_bits(5), 60);
  EXPECT_EQ(exact::limb_bits(std::uint32_t{1} << 20), 43);
  for (std::uint32_t w = 1; w <= (1u << 20); w = w * 3 + 1) {
    // W digits of magnitude < 2^L sum to < W × 2^L ≤ 2^63.
    const int bits = exact::limb_bits(w);
    EXPECT_LE(static_cast<long double>(w) * std::ldexp(1.0L, bits), std::ldexp(1.0L, 63)) << w;
  }
}

// Bytes the library's int64 sum moves per element, against binary32's 4.
double bytes_per_element(const ExactPlan& plan) {
  const double agreement = 8.0 * exact::kAgreementWords / exact::kBlock;
  return plan.count == 0
             ? 0
             : 8.0 * static_cast<double>(plan.words) / static_cast<double>(plan.count) + agreement;
}

TEST(ExactPlan, GradientLikeDataNeedsOneLimbAndWideDataMore) {
  for (std::uint32_t w : {2u, 8u, 64u}) {
    const ExactPlan normal =
        agreed_plan(make_arenas(w, 64 * exact::kBlock, Distribution::kNormal, 1));
    for (const ExactBlockSlot& b : normal.blocks) {
      EXPECT_EQ(b.limbs, 1) << "W=" << w;
      EXPECT_EQ(b.special, 0) << "W=" << w;
    }
    EXPECT_LE(bytes_per_element(normal), 16.0) << "at most 4x binary32's bytes";
    const ExactPlan wide = agreed_plan(make_arenas(w, 4 * exact::kBlock, Distribution::kWide, 1));
    for (const ExactBlockSlot& b : wide.blocks) EXPECT_GE(b.limbs, 5) << "W=" << w;
    const ExactPlan special =
        agreed_plan(make_arenas(w, 4 * exact::kBlock, Distribution::kSpecial, 1));
    for (const ExactBlockSlot& b : special.blocks) EXPECT_EQ(b.special, 1) << "W=" << w;
  }
}

TEST(ExactPlan, CorruptAgreementWordsAreRefusedByName) {
  std::vector<std::int64_t> words = {10, exact::kTopPosition - 3, 0, 500, 0, 0};
  try {
    plan_exact_blocks(words.data(), 2 * exact::kBlock, 4);
    FAIL() << "an impossible window was accepted";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("block 1"), std::string::npos) << e.what();
  }
  words = {3, exact::kTopPosition - 9, 0};  // top below bottom
  EXPECT_THROW(plan_exact_blocks(words.data(), 10, 4), RuntimeFailure);
  words = {3, exact::kTopPosition - 1, 0};
  EXPECT_THROW(plan_exact_blocks(words.data(), 10, exact::kMaxWorld + 1), InputError);
}

TEST(ExactPlan, EmptyAndZeroBlocksMoveNoDigits) {
  const Arenas zeros(3, std::vector<float>(exact::kBlock + 5, 0.0f));
  const ExactPlan plan = agreed_plan(zeros);
  EXPECT_EQ(plan.words, 0u);
  std::vector<float> out(zeros[0].size(), 1.0f);
  exact_round(nullptr, plan, Op::kSum, out.data());
  for (float v : out) EXPECT_EQ(float_bits(v), 0u);
  EXPECT_EQ(agreed_plan(Arenas(2, std::vector<float>{})).blocks.size(), 0u);
}

// The true sum does not depend on which arena is which rank.
TEST(ExactPlan, PermutingTheRanksChangesNoBit) {
  for (Distribution dist : {Distribution::kNormal, Distribution::kCancel, Distribution::kWide,
                            Distribution::kSpecial}) {
    const Arenas arenas = make_arenas(7, 3 * exact::kBlock + 11, dist, 2);
    const std::vector<float> straight = reference_exact(arenas, Op::kSum);
    std::vector<std::uint32_t> perm(7);
    std::iota(perm.begin(), perm.end(), 0u);
    for (int trial = 0; trial < 4; ++trial) {
      std::rotate(perm.begin(), perm.begin() + 3, perm.end());
      std::swap(perm[0], perm[trial % 7]);
      Arenas permuted;
      for (std::uint32_t r : perm) permuted.push_back(arenas[r]);
      EmulatedWorld(7).all_reduce_exact(permuted, Op::kSum, shuffled_delivery_orders(7, 4, trial));
      for (std::size_t i = 0; i < straight.size(); ++i) {
        ASSERT_EQ(float_bits(permuted[0][i]), float_bits(straight[i])) << "element " << i;
      }
    }
  }
}

// A digit that goes missing on the wire changes the result: the tests above could fail.
TEST(ExactPlan, ALostDigitChangesTheResult) {
  const Arenas arenas = make_arenas(4, exact::kBlock, Distribution::kNormal, 8);
  const ExactPlan plan = agreed_plan(arenas);
  std::vector<std::int64_t> sums(plan.words), digits(plan.words);
  for (std::size_t r = 0; r < arenas.size(); ++r) {
    exact_encode(arenas[r].data(), plan, r == 0 ? sums.data() : digits.data());
    if (r == 3) continue;  // rank 3's digits never arrive
    if (r != 0) {
      for (std::size_t i = 0; i < sums.size(); ++i) sums[i] += digits[i];
    }
  }
  std::vector<float> out(exact::kBlock);
  exact_round(sums.data(), plan, Op::kSum, out.data());
  const std::vector<float> want = reference_exact(arenas, Op::kSum);
  std::size_t differing = 0;
  for (std::size_t i = 0; i < out.size(); ++i)
    differing += float_bits(out[i]) != float_bits(want[i]);
  EXPECT_GT(differing, exact::kBlock / 2);
}

}  // namespace
}  // namespace rv

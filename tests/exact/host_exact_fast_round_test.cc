// host_exact.h's fast round against the law: adversarial sums, the edges (subnormal
// results, ties, overflow), and the mean for every W up to 64 (host_exact_fast_test.cc).
#include "tests/exact/host_exact_fast_support.h"

#include <gtest/gtest.h>

namespace rv::test {
namespace {

// A plan of one-limb blocks without specials, one block per bottom (the last one holding
// `last_count` values), for summed words made up directly: the round sees nothing else.
ExactPlan one_limb_plan(std::uint32_t world, const std::vector<int>& bottoms,
                        std::size_t last_count) {
  ExactPlan plan;
  plan.world = world;
  plan.limb_bits = exact::limb_bits(world);
  plan.count = bottoms.size() * exact::kBlock - (exact::kBlock - last_count);
  std::int64_t offset = 0;
  for (std::size_t b = 0; b < bottoms.size(); ++b) {
    plan.blocks.push_back(ExactBlockSlot{offset, bottoms[b], 1, 0});
    offset += static_cast<std::int64_t>(plan.block_count(b));
  }
  plan.words = static_cast<std::size_t>(offset);
  return plan;
}

void expect_round_equals_law(const std::vector<std::int64_t>& sums, const ExactPlan& plan,
                             const std::string& what) {
  for (Op op : {Op::kSum, Op::kMean}) {
    std::vector<float> law(plan.count, 2.0f);
    detail::exact_round_by_law(sums.data(), plan, op, law.data());
    for (HostIsa isa : isas()) {
      std::vector<float> fast(plan.count, 1.0f);
      detail::exact_round(sums.data(), plan, op, fast.data(), isa);
      ASSERT_EQ(first_difference(fast, law), "")
          << what << " W=" << plan.world << " op " << to_string(op) << ", " << name_of(isa);
    }
  }
}

// Digit sums that probe every rounding decision of both ops: ties and their neighbours for
// the sum (25 significant bits, last one set) and for the mean (W × a 25-bit midpoint), small
// sums that give subnormal results at low bottoms, sums at the fast paths' 2^51 limit and
// up to the largest |D| < W × 2^L ≤ 2^63, random ones of every length. Every bottom 0 … 276,
// so results run from 2^-149 (and below, for means) past the overflow threshold. A block with
// one |D| ≥ 2^51 is rounded by the law, so `fast` keeps every sum below 2^51: such blocks
// take the fast path.
std::vector<std::int64_t> adversarial_sums(std::mt19937_64& rng, std::uint32_t world,
                                           std::size_t count, bool fast) {
  const int limb = exact::limb_bits(world);
  // The largest |D| the law admits: W digits below 2^L.
  const auto largest = static_cast<std::int64_t>(std::min<long double>(
      static_cast<long double>(world) * (std::ldexp(1.0L, limb) - 1), std::ldexp(1.0L, 63) - 1));
  const std::int64_t limit = fast ? (std::int64_t{1} << 51) - 1 : largest;
  std::vector<std::int64_t> d;
  auto add = [&](std::int64_t v) {
    if (v > limit || v < -limit) return;
    d.push_back(v);
  };
  for (std::int64_t v :
       {std::int64_t{0}, std::int64_t{1}, std::int64_t{2}, std::int64_t{3}, std::int64_t{1} << 23,
        (std::int64_t{1} << 24) - 1, std::int64_t{1} << 24, (std::int64_t{1} << 25) - 1,
        (std::int64_t{1} << 25) + 1, (std::int64_t{1} << 51) - 1, std::int64_t{1} << 51,
        (std::int64_t{1} << 51) + 1, std::int64_t{1} << 53, (std::int64_t{1} << 62) + 1, largest}) {
    add(v);
    add(-v);
  }
  while (d.size() < count) {
    const int kind = static_cast<int>(rng() % 6);
    const int length = 1 + static_cast<int>(rng() % 62);
    std::int64_t v;
    if (kind == 0) {  // a sum tie: 25 significant bits, the last set, shifted
      v = static_cast<std::int64_t>((rng() & 0xFFFFFFu) | 0x1000000u | 1u) << (rng() % 37);
    } else if (kind == 1) {  // a mean tie (W × a 25-bit midpoint) or a neighbour
      const auto midpoint = static_cast<std::int64_t>((rng() & 0xFFFFFFu) | 0x1000000u | 1u);
      // W × midpoint × 2^shift below 2^51 (fast) or 2^62.
      const int room =
          std::max(0, (fast ? 50 : 61) - 25 - (32 - exact::count_leading_zeros32(world)));
      const int shift = static_cast<int>(rng() % static_cast<std::uint64_t>(room + 1));
      v = static_cast<std::int64_t>(world) * (midpoint << shift) +
          static_cast<std::int64_t>(rng() % 3) - 1;
    } else if (kind == 2) {  // small: subnormal results at low bottoms
      v = static_cast<std::int64_t>(rng() % (std::uint64_t{1} << (1 + rng() % 30)));
    } else if (kind == 3) {  // around 2^51
      v = (std::int64_t{1} << 51) + static_cast<std::int64_t>(rng() % 5) - 2;
    } else {
      v = static_cast<std::int64_t>(rng() >> (64 - length));
    }
    if ((rng() & 1u) != 0) v = -v;
    add(v);
  }
  d.resize(count);
  std::shuffle(d.begin(), d.end(), rng);
  return d;
}

TEST(HostExactFast, RoundingOfAdversarialSums) {
  std::mt19937_64 rng(3);
  std::vector<int> bottoms;
  for (int bottom = 0; bottom <= exact::kTopPosition; ++bottom) bottoms.push_back(bottom);
  for (std::uint32_t w : {1u, 2u, 3u, 5u, 7u, 8u, 10u, 12u, 255u, 256u, 1000u, 4096u, 65535u,
                          (1u << 19) + 1, (1u << 20) - 1, 1u << 20}) {
    const ExactPlan plan = one_limb_plan(w, bottoms, 513);
    std::vector<std::int64_t> sums;
    for (std::size_t b = 0; b < plan.blocks.size(); ++b) {
      const std::vector<std::int64_t> block =
          adversarial_sums(rng, w, plan.block_count(b), b % 4 != 3);
      sums.insert(sums.end(), block.begin(), block.end());
    }
    expect_round_equals_law(sums, plan, "adversarial");
  }
}

// The results named in the issue, by hand: where the fast path's argument is tightest.
TEST(HostExactFast, RoundingAtTheEdges) {
  // bottom 252: D × 2^103. 2^25 − 1 is the tie 2^128 − 2^103 (to Inf), 2^25 − 2 is FLT_MAX.
  // bottom 0: D × 2^-149, every subnormal; a mean of 3 below 2^-149 rounds to 0 or 2^-149.
  // bottom 126: 1 + 2^-24 (a tie to 1) and 1 + 2^-24 + 2^-47.
  struct Edge {
    int bottom;
    std::int64_t d;
  };
  const std::vector<Edge> edges = {{252, (1 << 25) - 1},
                                   {252, (1 << 25) - 2},
                                   {252, (1 << 25) - 3},
                                   {252, -((1 << 25) - 1)},
                                   {232, ((std::int64_t{1} << 25) - 1) << 20},
                                   {232, (((std::int64_t{1} << 25) - 1) << 20) - 1},
                                   {0, 1},
                                   {0, 2},
                                   {0, 3},
                                   {0, -1},
                                   {0, (1 << 23) - 1},
                                   {0, 1 << 23},
                                   {0, (1 << 24) + 1},
                                   {126, (1 << 24) + 1},
                                   {103, (std::int64_t{1} << 47) + (1 << 23)},
                                   {103, (std::int64_t{1} << 47) + (1 << 23) + 1},
                                   {10, std::int64_t{1} << 50}};
  for (std::uint32_t w : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 1u << 20}) {
    for (const Edge& e : edges) {
      const ExactPlan plan = one_limb_plan(w, {e.bottom}, 1);
      expect_round_equals_law({e.d}, plan,
                              "bottom " + std::to_string(e.bottom) + " D " + std::to_string(e.d));
    }
  }
  // Spot checks of the law itself at the overflow threshold.
  std::vector<float> y(1);
  exact_round(std::vector<std::int64_t>{(1 << 25) - 1}.data(), one_limb_plan(1, {252}, 1), Op::kSum,
              y.data());
  EXPECT_EQ(float_bits(y[0]), 0x7F800000u);
  exact_round(std::vector<std::int64_t>{(1 << 25) - 2}.data(), one_limb_plan(1, {252}, 1), Op::kSum,
              y.data());
  EXPECT_EQ(float_bits(y[0]), float_bits(std::numeric_limits<float>::max()));
}

// Every mean divisor up to 64 and some large ones, on sums whose quotients sit on or next to
// binary32 midpoints: the division's double rounding is the argued case. (A reciprocal
// multiply instead of the division fails here, at W = 49.)
TEST(HostExactFast, MeanOfEveryWorldUpTo64) {
  std::mt19937_64 rng(17);
  std::vector<int> bottoms = {0, 1, 5, 20, 26, 60, 100, 149, 200, 250, 252, 276};
  std::vector<std::uint32_t> worlds;
  for (std::uint32_t w = 1; w <= 64; ++w) worlds.push_back(w);
  for (std::uint32_t w : {99991u, 524287u, 786432u, 1048575u}) worlds.push_back(w);
  for (std::uint32_t w : worlds) {
    const ExactPlan plan = one_limb_plan(w, bottoms, exact::kBlock);
    std::vector<std::int64_t> sums;
    for (std::size_t b = 0; b < plan.blocks.size(); ++b) {
      const std::vector<std::int64_t> block =
          adversarial_sums(rng, w, plan.block_count(b), b % 4 != 3);
      sums.insert(sums.end(), block.begin(), block.end());
    }
    expect_round_equals_law(sums, plan, "mean worlds");
  }
}

}  // namespace
}  // namespace rv::test

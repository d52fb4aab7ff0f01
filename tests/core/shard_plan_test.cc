// The shard plan (docs/DESIGN.md §5): contiguous shards that tile [0, N) in owner order, sizes
// differing by at most one, the N mod W extra elements on the lowest ranks, empty shards
// allowed. Checked as properties over many (N, W), N = 0 and N < W included. And the
// reduce-scatter's padded plan (docs/DESIGN.md §2.6), FSDP's: shard p = [p·s, (p + 1)·s) cut
// to [0, N), s = ⌈N / W⌉ or the caller's, a size that leaves elements unowned refused.
#include "core/shard_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace rv {
namespace {

std::vector<std::size_t> interesting_counts() {
  std::vector<std::size_t> counts;
  for (std::size_t n = 0; n <= 300; ++n) counts.push_back(n);
  for (std::size_t n : {1000u, 1023u, 1024u, 1025u, 4099u, 65536u, 131101u, 1000003u}) {
    counts.push_back(n);
  }
  counts.push_back((std::size_t{1} << 24) + 43);
  counts.push_back((std::size_t{1} << 40) + 7);  // far beyond 32 bits: no overflow in begin
  return counts;
}

std::vector<std::uint32_t> interesting_worlds() {
  std::vector<std::uint32_t> worlds;
  for (std::uint32_t w = 1; w <= 70; ++w) worlds.push_back(w);
  for (std::uint32_t w : {127u, 128u, 255u, 256u, 257u, 1000u, 4095u, 4096u}) worlds.push_back(w);
  return worlds;
}

void expect_plan_properties(std::size_t n, std::uint32_t w) {
  SCOPED_TRACE("n=" + std::to_string(n) + " w=" + std::to_string(w));
  const std::vector<Shard> plan = shard_plan(n, w);
  ASSERT_EQ(plan.size(), w);
  const std::size_t base = n / w;
  const std::size_t extra = n % w;
  std::size_t next = 0;
  for (std::uint32_t p = 0; p < w; ++p) {
    const Shard& shard = plan[p];
    // Tiling in order: each shard starts where the previous one ended.
    ASSERT_EQ(shard.begin, next) << "owner " << p;
    // The remainder goes one element each to the lowest ranks.
    ASSERT_EQ(shard.count, base + (p < extra ? 1 : 0)) << "owner " << p;
    ASSERT_EQ(shard.end(), shard.begin + shard.count);
    next = shard.end();
    const Shard alone = shard_of(n, w, p);
    ASSERT_EQ(alone.begin, shard.begin) << "owner " << p;
    ASSERT_EQ(alone.count, shard.count) << "owner " << p;
  }
  ASSERT_EQ(next, n) << "the shards must cover [0, n) exactly";
  // Sizes differ by at most one, and never grow with the rank.
  for (std::uint32_t p = 1; p < w; ++p) {
    ASSERT_LE(plan[p].count, plan[p - 1].count);
    ASSERT_LE(plan[0].count - plan[p].count, 1u);
  }
}

TEST(ShardPlan, TilesInOrderWithRemainderOnLowestRanks) {
  for (std::size_t n : interesting_counts()) {
    for (std::uint32_t w : interesting_worlds()) expect_plan_properties(n, w);
  }
}

TEST(ShardPlan, EmptyArenaGivesEveryOwnerAnEmptyShardAtZero) {
  for (std::uint32_t w : {1u, 2u, 7u, 256u}) {
    for (const Shard& shard : shard_plan(0, w)) {
      EXPECT_EQ(shard.begin, 0u);
      EXPECT_EQ(shard.count, 0u);
    }
  }
}

TEST(ShardPlan, FewerElementsThanRanksLeavesHighRanksEmpty) {
  // N = 3, W = 5: ranks 0..2 own one element each; ranks 3 and 4 own empty shards at 3.
  const std::vector<Shard> plan = shard_plan(3, 5);
  for (std::uint32_t p = 0; p < 3; ++p) {
    EXPECT_EQ(plan[p].begin, p);
    EXPECT_EQ(plan[p].count, 1u);
  }
  for (std::uint32_t p = 3; p < 5; ++p) {
    EXPECT_EQ(plan[p].begin, 3u);
    EXPECT_EQ(plan[p].count, 0u);
  }
}

TEST(ShardPlan, KnownPlanWithRemainder) {
  // 10 elements over 4 ranks: 3, 3, 2, 2.
  const std::vector<Shard> plan = shard_plan(10, 4);
  const std::size_t begins[] = {0, 3, 6, 8};
  const std::size_t counts[] = {3, 3, 2, 2};
  for (std::uint32_t p = 0; p < 4; ++p) {
    EXPECT_EQ(plan[p].begin, begins[p]);
    EXPECT_EQ(plan[p].count, counts[p]);
  }
}

TEST(ShardPlan, RejectsEmptyWorldAndOwnerOutOfRange) {
  EXPECT_THROW(shard_of(10, 0, 0), InputError);
  EXPECT_THROW(shard_plan(10, 0), InputError);
  EXPECT_THROW(shard_of(10, 4, 4), InputError);
  EXPECT_THROW(shard_of(10, 4, 1000), InputError);
}

// The padded plan's properties at (n, w, s): shard p starts at min(p·s, n) and holds
// min(s, n − begin); the shards tile [0, n) in order.
void expect_padded_plan_properties(std::size_t n, std::uint32_t w, std::size_t s) {
  SCOPED_TRACE("n=" + std::to_string(n) + " w=" + std::to_string(w) + " s=" + std::to_string(s));
  const std::vector<Shard> plan = padded_shard_plan(n, w, s);
  ASSERT_EQ(plan.size(), w);
  std::size_t next = 0;
  for (std::uint32_t p = 0; p < w; ++p) {
    // p·s with the compiler's overflow check, so the test does not share the plan's guard.
    std::size_t product = 0;
    const bool overflows = __builtin_mul_overflow(std::size_t{p}, s, &product);
    const std::size_t begin = overflows || product >= n ? n : product;
    ASSERT_EQ(plan[p].begin, begin) << "owner " << p;
    ASSERT_EQ(plan[p].count, std::min(s, n - begin)) << "owner " << p;
    ASSERT_EQ(plan[p].begin, next) << "owner " << p;
    next = plan[p].end();
  }
  ASSERT_EQ(next, n) << "the shards must cover [0, n) exactly";
}

TEST(PaddedShardPlan, FsdpsLayoutAndLargerCallerSizesTileTheArena) {
  for (std::size_t n : interesting_counts()) {
    for (std::uint32_t w : interesting_worlds()) {
      const std::size_t fsdp = n / w + (n % w != 0);
      ASSERT_EQ(padded_shard_size(n, w), fsdp) << "n=" << n << " w=" << w;
      // nullopt is FSDP's size.
      const std::vector<Shard> by_default = padded_shard_plan(n, w);
      const std::vector<Shard> named = padded_shard_plan(n, w, fsdp);
      for (std::uint32_t p = 0; p < w; ++p) {
        ASSERT_EQ(by_default[p].begin, named[p].begin);
        ASSERT_EQ(by_default[p].count, named[p].count);
      }
      for (std::size_t s : {fsdp, fsdp + 1, fsdp + 1000, std::size_t{1} << 62}) {
        expect_padded_plan_properties(n, w, s);
      }
    }
  }
}

TEST(PaddedShardPlan, KnownPlansWithPadding) {
  // 10 elements over 4 ranks: s = 3, padded to 12: 3, 3, 3, 1.
  const std::vector<Shard> fsdp = padded_shard_plan(10, 4);
  const std::size_t begins[] = {0, 3, 6, 9};
  const std::size_t counts[] = {3, 3, 3, 1};
  for (std::uint32_t p = 0; p < 4; ++p) {
    EXPECT_EQ(fsdp[p].begin, begins[p]);
    EXPECT_EQ(fsdp[p].count, counts[p]);
  }
  // 3 elements over 5 ranks: s = 1: 1, 1, 1, then two empty shards at 3.
  const std::vector<Shard> few = padded_shard_plan(3, 5);
  for (std::uint32_t p = 0; p < 5; ++p) {
    EXPECT_EQ(few[p].begin, std::min<std::size_t>(p, 3));
    EXPECT_EQ(few[p].count, p < 3 ? 1u : 0u);
  }
  // A caller's size of 4 over 4 ranks for 10 elements: 4, 4, 2, 0 (the last wholly padding).
  const std::vector<Shard> named = padded_shard_plan(10, 4, 4);
  const std::size_t named_begins[] = {0, 4, 8, 10};
  const std::size_t named_counts[] = {4, 4, 2, 0};
  for (std::uint32_t p = 0; p < 4; ++p) {
    EXPECT_EQ(named[p].begin, named_begins[p]);
    EXPECT_EQ(named[p].count, named_counts[p]);
  }
  // n = 0: every shard empty at 0, whatever the size.
  for (const Shard& shard : padded_shard_plan(0, 3, 5)) {
    EXPECT_EQ(shard.begin, 0u);
    EXPECT_EQ(shard.count, 0u);
  }
}

TEST(PaddedShardPlan, RefusesASizeThatLeavesElementsInNoShardAndAnEmptyWorld) {
  EXPECT_THROW(padded_shard_plan(10, 4, 2), InputError);  // 8 < 10
  EXPECT_THROW(padded_shard_plan(1, 2, 0), InputError);
  EXPECT_NO_THROW(padded_shard_plan(0, 2, 0));
  EXPECT_THROW(padded_shard_plan(10, 0), InputError);
  EXPECT_THROW(padded_shard_size(10, 0), InputError);
  try {
    padded_shard_plan(10, 4, 2);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a shard size of 2 elements over 4 ranks leaves "
                                         "elements of an arena of 10 in no shard (the least is 3)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rv

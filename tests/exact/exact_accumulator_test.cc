// ExactAccumulator (core/exact/exact_accumulator.h) against the straight exact reference
// (reference_exact, core/exact/exact_reduction.h) and MPFR: M addend arrays split over W
// ranks, each rank adding its share in its own order and in ranges of its own, give the
// reference's bits for the sum and the mean; and so does every other split, order and
// grouping. Special values, −0 sums, wide blocks, the limits and the entry checks too.
#include "core/exact/exact_accumulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/arena.h"
#include "core/dtype_law.h"
#include "core/error.h"
#include "core/exact/exact_reduction.h"
#include "core/oracle/reference.h"
#include "tests/exact/host_exact_fast_support.h"
#include "tests/exact/mpfr_oracle.h"

namespace rv::test {
namespace {

// One way of accumulating M addend arrays: which rank holds which, in what order, and the
// ranges (block-aligned starts) each add covers, as a trainer's parameters would.
struct Split {
  std::vector<std::vector<std::size_t>> addends_of_rank;
  std::vector<std::size_t> range_starts;  // multiples of kBlock, starting at 0
};

Split random_split(std::size_t m, std::uint32_t world, std::size_t n, std::mt19937_64& rng) {
  Split split;
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  split.addends_of_rank.resize(world);
  // Uneven: ranks may hold none.
  for (std::size_t a : order) split.addends_of_rank[rng() % world].push_back(a);
  split.range_starts.push_back(0);
  for (std::size_t s = exact::kBlock; s < n; s += exact::kBlock) {
    if (rng() % 2 == 0) split.range_starts.push_back(s);
  }
  return split;
}

std::vector<ExactAccumulator> accumulate(const Arenas& addends, const Split& split) {
  const std::size_t n = addends[0].size();
  std::vector<ExactAccumulator> ranks;
  for (const auto& mine : split.addends_of_rank) {
    ExactAccumulator acc(n);
    for (std::size_t a : mine) {
      for (std::size_t r = 0; r < split.range_starts.size(); ++r) {
        const std::size_t begin = split.range_starts[r];
        const std::size_t end = r + 1 < split.range_starts.size() ? split.range_starts[r + 1] : n;
        acc.add(addends[a].data() + begin, begin, end - begin);
      }
      acc.end_micro_batch();
    }
    ranks.push_back(std::move(acc));
  }
  return ranks;
}

std::vector<float> reduce(const std::vector<ExactAccumulator>& ranks, Op op, std::uint64_t m) {
  std::vector<const ExactAccumulator*> pointers;
  for (const auto& r : ranks) pointers.push_back(&r);
  return reduce_in_process(pointers, op, m);
}

// "" when every split of `addends` gives the reference's sum and mean over M.
std::string difference_over_splits(const Arenas& addends, int splits, std::uint64_t seed) {
  const std::size_t m = addends.size();
  const std::vector<float> sum = reference_exact(addends, Op::kSum);
  const std::vector<float> mean = reference_exact(addends, Op::kMean);
  std::mt19937_64 rng(seed);
  for (int s = 0; s < splits; ++s) {
    const auto world = static_cast<std::uint32_t>(1 + rng() % (m + 1));
    const Split split = random_split(m, world, addends[0].size(), rng);
    const std::vector<ExactAccumulator> ranks = accumulate(addends, split);
    std::uint64_t batches = 0;
    for (const auto& r : ranks) batches += r.micro_batches();
    if (batches != m) return "micro-batches counted " + std::to_string(batches);
    std::string d = first_difference(reduce(ranks, Op::kSum, 0), sum);
    if (!d.empty()) return "sum, W = " + std::to_string(world) + ": " + d;
    d = first_difference(reduce(ranks, Op::kMean, m), mean);
    if (!d.empty()) return "mean, W = " + std::to_string(world) + ": " + d;
  }
  return "";
}

TEST(ExactAccumulator, EverySplitOrderAndGroupingGivesTheReferenceOnEveryDistribution) {
  for (Distribution dist : kAllDistributions) {
    for (std::uint32_t m : {1u, 2u, 3u, 8u, 13u}) {
      for (std::size_t n : {std::size_t{1}, std::size_t{1023}, std::size_t{3000}}) {
        const Arenas addends = make_arenas(m, n, dist, 17 + m + n);
        EXPECT_EQ(difference_over_splits(addends, 6, m * 31 + n), "")
            << to_string(dist) << ", M = " << m << ", n = " << n;
      }
    }
  }
}

TEST(ExactAccumulator, NormalDataStaysInOneDigitPerElement) {
  // Gradient-like data: 8 bytes an element (plus a few bytes per block), whatever M.
  const std::size_t n = 8 * exact::kBlock;
  const Arenas addends = make_arenas(64, n, Distribution::kNormal, 5);
  ExactAccumulator acc(n);
  for (const auto& a : addends) acc.add(a.data(), 0, n);
  EXPECT_EQ(acc.wide_blocks(), 0u);
  EXPECT_EQ(acc.flagged_blocks(), 0u);
  EXPECT_LE(acc.bytes(), n * 8 + acc.blocks() * 64);
  EXPECT_EQ(first_difference(reduce_in_process({&acc}, Op::kMean, 64),
                             reference_exact(addends, Op::kMean)),
            "");
}

TEST(ExactAccumulator, WideDataTurnsBlocksWideAndStaysExact) {
  // The whole exponent range in one block: past 62 bits, 56 bytes an element.
  const std::size_t n = 2 * exact::kBlock;
  const Arenas addends = make_arenas(5, n, Distribution::kWide, 9);
  ExactAccumulator acc(n);
  for (const auto& a : addends) acc.add(a.data(), 0, n);
  EXPECT_EQ(acc.wide_blocks(), 2u);
  EXPECT_EQ(
      first_difference(reduce_in_process({&acc}, Op::kSum, 0), reference_exact(addends, Op::kSum)),
      "");
  // A block that is wide on one rank only still combines with the others' digits.
  Arenas mixed = make_arenas(4, n, Distribution::kNormal, 10);
  mixed[3][7] = 1e30f;
  mixed[3][exact::kBlock + 9] = 1e-40f;
  EXPECT_EQ(difference_over_splits(mixed, 8, 3), "");
}

TEST(ExactAccumulator, MeanOverACountOtherThanTheAddendsIsRoundedOnce) {
  // mean_over = samples, not micro-batches: RN(S / M) for any M ≤ 2^20, held to MPFR (the
  // addends padded with −0 to M: the same sum, and no other zero's sign).
  const Arenas addends = make_arenas(3, 2000, Distribution::kNormal, 21);
  ExactAccumulator acc(2000);
  for (const auto& a : addends) acc.add(a.data(), 0, 2000);
  for (std::uint64_t m :
       {std::uint64_t{3}, std::uint64_t{7}, std::uint64_t{96}, std::uint64_t{1} << 20}) {
    const std::vector<float> mean = reduce_in_process({&acc}, Op::kMean, m);
    for (std::size_t i = 0; i<2000; i += m> 1000 ? 401 : 37) {
      std::vector<float> column(m, -0.0f);
      for (std::size_t r = 0; r < addends.size(); ++r) column[r] = addends[r][i];
      ASSERT_EQ(float_bits(mean[i]), mpfr_exact_bits(column, Op::kMean))
          << "M = " << m << ", " << i;
    }
  }
}

TEST(ExactAccumulator, SpecialValuesFollowTheLaw) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Per element, its addends in micro-batch order.
  const std::vector<std::vector<float>> columns = {
      {-0.0f, -0.0f, -0.0f},    {-0.0f, 0.0f, -0.0f}, {1.0f, -1.0f, -0.0f}, {inf, 1.0f, 2.0f},
      {inf, -inf, 1.0f},        {nan, 1.0f, 1.0f},    {-inf, -inf, 3.0f},   {3e38f, 3e38f, 3e38f},
      {-0.0f, 1e-45f, -1e-45f}, {0.0f, 0.0f, 0.0f}};
  const std::size_t n = columns.size();
  Arenas addends(3, std::vector<float>(n));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t r = 0; r < 3; ++r) addends[r][i] = columns[i][r];
  }
  EXPECT_EQ(difference_over_splits(addends, 20, 1), "");
  const std::vector<float> sum = reference_exact(addends, Op::kSum);
  EXPECT_EQ(float_bits(sum[0]), 0x80000000u);
  EXPECT_EQ(float_bits(sum[4]), kCanonicalNanBits);
  EXPECT_EQ(float_bits(sum[7]), 0x7F800000u);
  // A mean whose sum overflows is finite.
  EXPECT_EQ(reference_exact(addends, Op::kMean)[7], 3e38f);
}

TEST(ExactAccumulator, ABlockFinishedAloneIsTheWholeFinishInEveryDType) {
  // finish_accumulated_block (the law per element, what a GPU accumulator's host blocks and
  // half results use) against finish_accumulated (the vectorised round), in f32, bf16 and
  // f16, sum and mean over a power of two and not: one-limb, wide and special blocks alike.
  // The addends are values of every format (bf16 and f16 values are binary32 values too).
  for (const Distribution dist : kAllDistributions) {
    Arenas addends = make_arenas(3, 3 * exact::kBlock + 5, dist, 77);
    for (auto& a : addends) {
      for (std::size_t i = 0; i < a.size(); i += 3) a[i] = round_to_dtype(DType::kF16, a[i]);
    }
    ExactAccumulator acc(addends[0].size());
    for (const auto& a : addends) {
      acc.add(a.data(), 0, a.size());
      acc.end_micro_batch();
    }
    for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (const auto& [op, m] : {std::pair{Op::kSum, std::uint64_t{0}},
                                  std::pair{Op::kMean, std::uint64_t{4}},
                                  std::pair{Op::kMean, std::uint64_t{3}}}) {
        std::vector<std::int64_t> words(acc.agreement_size());
        acc.agreement_words(0, op, m, words.data());
        const AccumulatorPlan plan = acc.plan(words.data(), 1);
        std::vector<std::int64_t> digits(plan.words);
        acc.export_digits(plan, digits.data());
        std::vector<float> whole(acc.count()), blocks(acc.count());
        finish_accumulated(plan, digits.data(), op, m, whole.size(), whole.data(), dtype);
        for (std::size_t b = 0; b < plan.limbs.size(); ++b) {
          finish_accumulated_block(plan, b, digits.data() + plan.offset[b], op, m, acc.count(),
                                   blocks.data() + b * exact::kBlock, dtype);
        }
        EXPECT_EQ(first_difference(blocks, whole), "")
            << to_string(dist) << " " << to_string(dtype) << " m = " << m;
      }
    }
  }
}

TEST(ExactAccumulator, NegativeZeroSumsWhenRangesCoverDifferentPrefixes) {
  // The tail of the block receives addends only from the second rank: where it holds −0,
  // every addend of those elements is −0.
  const std::size_t n = 600;
  ExactAccumulator a(n), b(n);
  std::vector<float> head(300, 2.0f), all(n, -0.0f);
  a.add(head.data(), 0, head.size());
  a.end_micro_batch();
  b.add(all.data(), 0, n);
  b.end_micro_batch();
  const std::vector<float> out = reduce_in_process({&a, &b}, Op::kSum, 0);
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(float_bits(out[300]), 0x80000000u);
  EXPECT_EQ(float_bits(reduce_in_process({&b, &a}, Op::kSum, 0)[599]), 0x80000000u);
}

TEST(ExactAccumulator, ClearStartsAgain) {
  const Arenas addends = make_arenas(2, 100, Distribution::kSpecial, 4);
  ExactAccumulator acc(100);
  acc.add(addends[0].data(), 0, 100);
  acc.clear();
  acc.add(addends[1].data(), 0, 100);
  EXPECT_EQ(acc.micro_batches(), 0u);
  EXPECT_EQ(first_difference(reduce_in_process({&acc}, Op::kSum, 0),
                             reference_exact({addends[1]}, Op::kSum)),
            "");
}

// A plan made into the storage of an earlier one (as the C ABI's handles keep theirs from step
// to step) is the plan made fresh: every field of every block is written again.
TEST(ExactAccumulator, APlanIntoEarlierStorageIsTheFreshPlan) {
  const Arenas wide = make_arenas(1, 3000, Distribution::kSpecial, 6);
  const Arenas normal = make_arenas(1, 3000, Distribution::kNormal, 7);
  ExactAccumulator acc(3000);
  std::vector<std::int64_t> words(acc.agreement_size());
  acc.add(wide[0].data(), 0, 3000);
  acc.agreement_words(0, Op::kSum, 0, words.data());
  AccumulatorPlan kept;
  acc.plan_into(words.data(), 3, kept);
  acc.clear();
  acc.add(normal[0].data(), 0, 1500);
  acc.agreement_words(0, Op::kSum, 0, words.data());
  acc.plan_into(words.data(), 1, kept);
  const AccumulatorPlan fresh = acc.plan(words.data(), 1);
  EXPECT_EQ(kept.world, fresh.world);
  EXPECT_EQ(kept.limb_width, fresh.limb_width);
  EXPECT_EQ(kept.bottom, fresh.bottom);
  EXPECT_EQ(kept.limbs, fresh.limbs);
  EXPECT_EQ(kept.special, fresh.special);
  EXPECT_EQ(kept.offset, fresh.offset);
  EXPECT_EQ(kept.words, fresh.words);
}

// After a clear, a block first added over a prefix and then over all of it: the elements past
// the prefix must start from zero again, not from what the cleared sums held (normal data, so
// no flags and no wide block hide the digits).
TEST(ExactAccumulator, ClearForgetsTheDigitsPastALaterPrefix) {
  const Arenas addends = make_arenas(3, 2048, Distribution::kNormal, 5);
  ExactAccumulator acc(2048);
  acc.add(addends[0].data(), 0, 2048);
  acc.clear();
  acc.add(addends[1].data(), 0, 100);
  acc.add(addends[2].data(), 0, 2048);
  std::vector<float> first(addends[1].begin(), addends[1].begin() + 100);
  first.resize(2048, 0.0f);
  EXPECT_EQ(first_difference(reduce_in_process({&acc}, Op::kSum, 0),
                             reference_exact({first, addends[2]}, Op::kSum)),
            "");
}

// What import_block takes for one block of values (finite, none −0), as the GPU holds it:
// the bottom the host's rule gives one add of them (the lowest bit any can have: the biased
// exponent less one, 0 for a subnormal) and each value's integer at that bottom.
struct Moved {
  int bottom = kNoBottom, magnitude_bits = 0;
  std::vector<std::int64_t> digits;
};
Moved moved_block(const float* values, std::size_t elements) {
  Moved m;
  for (std::size_t i = 0; i < elements; ++i) {
    const std::uint32_t bits = float_bits(values[i]), exponent = (bits >> 23) & 0xFFu;
    if ((bits & 0x7FFFFFFFu) != 0)
      m.bottom = std::min(m.bottom, exponent == 0 ? 0 : static_cast<int>(exponent) - 1);
  }
  std::uint64_t any = 0;
  for (std::size_t i = 0; i < elements; ++i) {
    const std::uint32_t bits = float_bits(values[i]), exponent = (bits >> 23) & 0xFFu;
    const std::uint32_t normal = exponent != 0 ? 1u : 0u;
    const auto significand = static_cast<std::int64_t>((bits & 0x7FFFFFu) | (normal << 23));
    std::int64_t d = 0;
    if (significand != 0) d = significand << (static_cast<int>(exponent - normal) - m.bottom);
    if ((bits >> 31) != 0) d = -d;
    m.digits.push_back(d);
    any |= static_cast<std::uint64_t>(d < 0 ? -d : d);
  }
  while (any != 0) {
    ++m.magnitude_bits;
    any >>= 1;
  }
  return m;
}

// The GPU accumulator's host copy: an accumulator that only takes over a few blocks holds the
// digits of those blocks alone (not 8 bytes an element), and imports, adds to the imported
// blocks, a clear and other imports give a dense accumulator's results, the reference's.
TEST(ExactAccumulator, ImportedBlocksAloneHoldDigits) {
  const std::size_t n = (std::size_t{1} << 20) + 100;  // the last block holds 100
  const std::size_t last = n / exact::kBlock;
  const std::size_t state = (last + 1) * 48 + 1024;  // per-block state, and a little more
  ExactAccumulator sparse(n);
  EXPECT_LE(sparse.bytes(), state);
  auto step = [&](const std::vector<std::size_t>& blocks, std::uint64_t seed) {
    // What the GPU moved: a micro-batch's values in those blocks, as digits.
    const std::vector<float> batch = generate_arena({1, Distribution::kNormal, seed}, 9, n);
    std::vector<float> moved(n, 0.0f);
    for (std::size_t b : blocks) {
      const std::size_t begin = b * exact::kBlock;
      const std::size_t c = std::min<std::size_t>(exact::kBlock, n - begin);
      std::copy_n(batch.begin() + static_cast<std::ptrdiff_t>(begin), c,
                  moved.begin() + static_cast<std::ptrdiff_t>(begin));
      const Moved m = moved_block(batch.data() + begin, c);
      ASSERT_LT(m.magnitude_bits, kDigitBits);
      sparse.import_block(b, m.bottom, m.magnitude_bits, static_cast<std::uint32_t>(c),
                          m.digits.data());
    }
    // Later micro-batches on the moved blocks only (other magnitudes: the windows move).
    Arenas later = make_arenas(2, n, Distribution::kNormal, seed);
    for (auto& a : later) {
      std::vector<float> masked(n, 0.0f);
      for (std::size_t b : blocks) {
        const std::size_t begin = b * exact::kBlock,
                          c = std::min<std::size_t>(exact::kBlock, n - begin);
        std::copy(a.begin() + static_cast<std::ptrdiff_t>(begin),
                  a.begin() + static_cast<std::ptrdiff_t>(begin + c),
                  masked.begin() + static_cast<std::ptrdiff_t>(begin));
        sparse.add(a.data() + begin, begin, c);
      }
      a = masked;
    }
    sparse.end_micro_batch();
    EXPECT_EQ(sparse.wide_blocks(), 0u);  // in digits, as on the GPU
    // The same addends in a dense accumulator, and a second rank that adds to every block.
    ExactAccumulator dense(n), other(n);
    for (const auto* a : {&moved, &later[0], &later[1]}) dense.add(a->data(), 0, n);
    const std::vector<float> everywhere = generate_arena({1, Distribution::kNormal, seed}, 7, n);
    other.add(everywhere.data(), 0, n);
    const Arenas all = {moved, later[0], later[1], everywhere};
    for (Op op : {Op::kSum, Op::kMean}) {
      const std::uint64_t m = op == Op::kMean ? 4 : 0;
      const std::vector<float> want = reference_exact(all, op);
      EXPECT_EQ(first_difference(reduce_in_process({&sparse, &other}, op, m), want), "");
      EXPECT_EQ(first_difference(reduce_in_process({&other, &dense}, op, m), want), "");
    }
    const std::vector<float> alone = reduce_in_process({&sparse}, Op::kSum, 0);
    EXPECT_EQ(first_difference(alone, reduce_in_process({&dense}, Op::kSum, 0)), "");
  };
  step({3, last}, 31);
  const std::size_t two_blocks = 2 * exact::kBlock * sizeof(std::int64_t);
  EXPECT_GE(sparse.bytes(), two_blocks);
  EXPECT_LE(sparse.bytes(), two_blocks + state) << "not 8 MiB of digits";
  // A clear gives the slots back: two other blocks take them, nothing more is allocated.
  const std::size_t before = sparse.bytes();
  sparse.clear();
  EXPECT_EQ(sparse.bytes(), before);
  step({0, 700}, 32);
  EXPECT_EQ(sparse.bytes(), before);
}

TEST(ExactAccumulator, BlocksWithoutNonzeroSumsHoldNoDigits) {
  // Zeros added everywhere: no digits.
  const std::size_t n = std::size_t{1} << 20;
  ExactAccumulator zeros(n);
  const std::vector<float> zero(n, 0.0f);
  zeros.add(zero.data(), 0, n);
  EXPECT_LE(zeros.bytes(), zeros.blocks() * 48 + 1024);
  // A block that turns wide gives its digits back, and the next block takes them.
  const Arenas normal = make_arenas(2, 2 * exact::kBlock, Distribution::kNormal, 12);
  ExactAccumulator acc(2 * exact::kBlock);
  acc.add(normal[0].data(), 0, exact::kBlock);
  const std::size_t one_slot = acc.bytes();
  std::vector<float> span(exact::kBlock, 1e-40f);
  span[5] = 1e30f;
  acc.add(span.data(), 0, exact::kBlock);
  ASSERT_EQ(acc.wide_blocks(), 1u);
  acc.add(normal[1].data() + exact::kBlock, exact::kBlock, exact::kBlock);
  const std::size_t wide = exact::kBlock * sizeof(exact::ExactSum);
  EXPECT_LT(acc.bytes(), one_slot + wide + 64);
  std::vector<float> second(2 * exact::kBlock, 0.0f), first(normal[0]);
  std::copy(normal[1].begin() + exact::kBlock, normal[1].end(), second.begin() + exact::kBlock);
  std::fill(first.begin() + exact::kBlock, first.end(), 0.0f);
  span.resize(2 * exact::kBlock, 0.0f);
  EXPECT_EQ(first_difference(reduce_in_process({&acc}, Op::kSum, 0),
                             reference_exact({first, span, second}, Op::kSum)),
            "");
}

TEST(ExactAccumulator, EntryChecksNameTheCause) {
  ExactAccumulator acc(3000);
  std::vector<float> x(3000, 1.0f);
  EXPECT_THROW(acc.add(x.data(), 5, 10), InputError);       // not a block's start
  EXPECT_THROW(acc.add(x.data(), 2048, 2000), InputError);  // beyond the end
  EXPECT_THROW(acc.add(nullptr, 0, 10), InputError);
  acc.add(x.data(), 0, 3000);
  EXPECT_THROW(reduce_in_process({&acc}, Op::kMean, 0), InputError);
  EXPECT_THROW(reduce_in_process({&acc}, Op::kMean, (1u << 20) + 1), InputError);
  // Accumulators of other lengths: the header's max and min differ, on every rank.
  ExactAccumulator other(2999);
  std::vector<std::int64_t> mine(acc.agreement_size()), theirs(other.agreement_size());
  acc.agreement_words(0, Op::kSum, 0, mine.data());
  other.agreement_words(0, Op::kSum, 0, theirs.data());
  for (int i = 0; i < kAccumulatorHeaderWords; ++i) mine[i] = std::max(mine[i], theirs[i]);
  try {
    acc.plan(mine.data(), 2);
    FAIL() << "no disagreement found";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("accumulator length: from 2999 to 3000"),
              std::string::npos)
        << e.what();
  }
  // Another layout fingerprint (the caller's shapes and dtypes), or another op or mean_over.
  std::vector<std::int64_t> words(acc.agreement_size()), layout(acc.agreement_size());
  acc.agreement_words(1, Op::kMean, 8, words.data());
  acc.agreement_words(2, Op::kMean, 8, layout.data());
  for (std::size_t i = 0; i < words.size(); ++i) words[i] = std::max(words[i], layout[i]);
  EXPECT_EQ(find_header_disagreement(words.data()).field, AccumulatorField::kLayout);
}

}  // namespace
}  // namespace rv::test

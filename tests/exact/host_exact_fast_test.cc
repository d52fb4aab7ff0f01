// host_exact.h's fast paths, compiled for each instruction set this CPU has (the baseline and
// AVX2), against the element laws applied one element at a time (host_exact_law.h), bit for
// bit: every distribution and world, hand-made windows on both
// sides of the fast paths' 51-bit limit, adversarial sums (subnormal results, ties, the
// overflow threshold 2^128 − 2^103, |D| near 2^63 at W = 2^20, mean ties for odd W), both
// ops, and a process whose floating-point state is not IEEE's default (the fast paths must
// notice it and give the law's bits anyway).
#include "core/exact/host_exact.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/exact/host_exact_law.h"
#include "core/fold_law.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace rv {
namespace {

using Arenas = std::vector<std::vector<float>>;
using detail::HostIsa;

// Every instruction set the fast loops are compiled for that this CPU runs.
std::vector<HostIsa> isas() {
  std::vector<HostIsa> out;
  for (HostIsa isa : {HostIsa::kBaseline, HostIsa::kAvx2}) {
    if (detail::host_isa_available(isa)) out.push_back(isa);
  }
  return out;
}

const char* name_of(HostIsa isa) { return isa == HostIsa::kAvx2 ? "avx2" : "baseline"; }

// The first element where two word arrays differ, or "" when they are equal.
std::string first_difference(const std::vector<std::int64_t>& fast,
                             const std::vector<std::int64_t>& law) {
  if (fast.size() != law.size()) return "sizes differ";
  for (std::size_t i = 0; i < fast.size(); ++i) {
    if (fast[i] != law[i]) {
      return "word " + std::to_string(i) + ": fast " + std::to_string(fast[i]) + ", law " +
             std::to_string(law[i]);
    }
  }
  return "";
}

std::string first_difference(const std::vector<float>& fast, const std::vector<float>& law) {
  if (fast.size() != law.size()) return "sizes differ";
  for (std::size_t i = 0; i < fast.size(); ++i) {
    if (float_bits(fast[i]) != float_bits(law[i])) {
      char text[128];
      std::snprintf(text, sizeof text, "element %zu: fast 0x%08x, law 0x%08x", i,
                    float_bits(fast[i]), float_bits(law[i]));
      return text;
    }
  }
  return "";
}

std::vector<std::int64_t> agreement_law(const std::vector<float>& x) {
  std::vector<std::int64_t> words(exact_block_count(x.size()) * exact::kAgreementWords);
  detail::exact_agreement_words_by_law(x.data(), x.size(), words.data());
  return words;
}

std::vector<std::int64_t> agreement_fast(const std::vector<float>& x, HostIsa isa) {
  std::vector<std::int64_t> words(exact_block_count(x.size()) * exact::kAgreementWords);
  detail::exact_agreement_words(x.data(), x.size(), words.data(), isa);
  return words;
}

// "" when every instruction set's agreement words equal the law's.
std::string agreement_difference(const std::vector<float>& x) {
  const std::vector<std::int64_t> law = agreement_law(x);
  for (HostIsa isa : isas()) {
    const std::string difference = first_difference(agreement_fast(x, isa), law);
    if (!difference.empty()) return std::string(name_of(isa)) + ": " + difference;
  }
  return "";
}

// The plan every rank derives from the law's agreement words, max-combined.
ExactPlan agreed_plan(const Arenas& arenas, std::uint32_t world) {
  const std::size_t n = arenas[0].size();
  std::vector<std::int64_t> agreed(exact_block_count(n) * exact::kAgreementWords, -1);
  for (const auto& arena : arenas) {
    const std::vector<std::int64_t> mine = agreement_law(arena);
    merge_agreement_words(agreed.data(), mine.data(), agreed.size());
  }
  return plan_exact_blocks(agreed.data(), n, world);
}

// Fast and law agree on every rank's agreement words and digits, and on the summed words'
// results for both ops.
void expect_fast_equals_law(const Arenas& arenas, std::uint32_t world, const std::string& what) {
  SCOPED_TRACE(what + " W=" + std::to_string(world));
  const std::size_t n = arenas[0].size();
  for (const auto& arena : arenas) ASSERT_EQ(agreement_difference(arena), "") << "agreement";
  const ExactPlan plan = agreed_plan(arenas, world);
  std::vector<std::int64_t> sums(plan.words, 0);
  for (const auto& arena : arenas) {
    std::vector<std::int64_t> law(plan.words, 7);
    detail::exact_encode_by_law(arena.data(), plan, law.data());
    for (HostIsa isa : isas()) {
      std::vector<std::int64_t> fast(plan.words, 7);
      detail::exact_encode(arena.data(), plan, fast.data(), isa);
      ASSERT_EQ(first_difference(fast, law), "") << "encode, " << name_of(isa);
    }
    for (std::size_t i = 0; i < sums.size(); ++i) sums[i] += law[i];
  }
  for (Op op : {Op::kSum, Op::kMean}) {
    std::vector<float> law(n, 2.0f);
    detail::exact_round_by_law(sums.data(), plan, op, law.data());
    for (HostIsa isa : isas()) {
      std::vector<float> fast(n, 1.0f);
      detail::exact_round(sums.data(), plan, op, fast.data(), isa);
      ASSERT_EQ(first_difference(fast, law), "")
          << "round, op " << to_string(op) << ", " << name_of(isa);
    }
  }
}

Arenas make_arenas(std::uint32_t w, std::size_t n, Distribution dist, std::uint64_t seed) {
  Arenas arenas;
  for (std::uint32_t r = 0; r < w; ++r) arenas.push_back(generate_arena({1, dist, seed}, r, n));
  return arenas;
}

TEST(HostExactFast, EveryDistributionAndWorld) {
  ASSERT_TRUE(detail::host_fp_state_is_ieee()) << "the tests need the IEEE default state";
  // The public functions use one of the instruction sets tested here.
  const Arenas arenas = make_arenas(3, 5000, Distribution::kNormal, 1);
  const ExactPlan plan = agreed_plan(arenas, 3);
  std::vector<std::int64_t> fast(plan.words), law(plan.words);
  exact_encode(arenas[0].data(), plan, fast.data());
  detail::exact_encode_by_law(arenas[0].data(), plan, law.data());
  EXPECT_EQ(first_difference(fast, law), "");

  for (Distribution dist : {Distribution::kNormal, Distribution::kWide, Distribution::kCancel,
                            Distribution::kExact, Distribution::kSpecial}) {
    for (std::uint32_t w : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 64u}) {
      // Two blocks and a short third.
      expect_fast_equals_law(make_arenas(w, 2 * exact::kBlock + 77, dist, 11 + w), w,
                             std::string(to_string(dist)));
    }
  }
}

// Values s × 2^e, s a random 24-bit integer with random trailing zeros, e in [low, low + span]:
// windows of about span + 24 bits, so both sides of the fast encode's 51-bit limit and of the
// one-limb width L are reached.
std::vector<float> spanning_values(std::mt19937_64& rng, std::size_t n, int low, int span,
                                   bool with_negatives) {
  std::vector<float> x(n);
  for (auto& v : x) {
    const auto s = static_cast<std::int64_t>((rng() & 0xFFFFFFu) >> (rng() % 24));
    const int e = low + static_cast<int>(rng() % static_cast<std::uint64_t>(span + 1));
    v = std::ldexp(static_cast<float>(s), e);
    if (with_negatives && (rng() & 1u) != 0) v = -v;
  }
  return x;
}

TEST(HostExactFast, WindowsAroundTheFiftyOneBitLimit) {
  std::mt19937_64 rng(5);
  for (std::uint32_t w : {1u, 2u, 3u, 6u, 1000u}) {
    for (int span : {0, 10, 20, 26, 27, 28, 29, 30, 36, 38, 40}) {
      for (int low : {-149, -140, -126, -60, 0, 40, 80}) {
        Arenas arenas;
        for (std::uint32_t r = 0; r < std::min(w, 4u); ++r) {
          arenas.push_back(
              spanning_values(rng, 3 * exact::kBlock + 5, low, std::min(span, 104 - low), r != 1));
        }
        expect_fast_equals_law(arenas, w,
                               "span " + std::to_string(span) + " low " + std::to_string(low));
      }
    }
  }
}

// Agreement words of single values (every exponent, every trailing-zero count, both signs,
// the specials) and of blocks of arbitrary bit patterns.
TEST(HostExactFast, AgreementOfAnyBitPattern) {
  std::vector<float> singles;
  for (std::uint32_t exponent = 0; exponent < 256; ++exponent) {
    for (int zeros = 0; zeros < 23; ++zeros) {
      for (std::uint32_t fraction : {std::uint32_t{1} << zeros, (0x7FFFFFu >> zeros) << zeros,
                                     (0x5A5A5Bu >> zeros) << zeros, 0u}) {
        for (std::uint32_t sign : {0u, 0x80000000u}) {
          singles.push_back(float_from_bits(sign | exponent << 23 | (fraction & 0x7FFFFFu)));
        }
      }
    }
  }
  for (float v : singles) {
    ASSERT_EQ(agreement_difference({v}), "") << "bits 0x" << std::hex << float_bits(v);
  }
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 400; ++trial) {
    // Blocks of one kind of pattern each: any bits, finite only, subnormals only, or a few
    // nonzero values among zeros.
    std::vector<float> x(exact::kBlock * 2 + 3);
    const int kind = trial % 4;
    for (auto& v : x) {
      auto bits = static_cast<std::uint32_t>(rng());
      if (kind == 1 && (bits & 0x7F800000u) == 0x7F800000u) bits &= 0xBFFFFFFFu;
      if (kind == 2) bits &= 0x807FFFFFu;
      if (kind == 3 && rng() % 64 != 0) bits &= 0x80000000u;
      v = float_from_bits(bits);
    }
    ASSERT_EQ(agreement_difference(x), "") << "trial " << trial;
  }
  // Every 251st bit pattern, in blocks.
  std::vector<float> sweep;
  for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << 32); bits += 251) {
    sweep.push_back(float_from_bits(static_cast<std::uint32_t>(bits)));
  }
  ASSERT_EQ(agreement_difference(sweep), "");
}

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

// Restores the rounding mode and (x86) MXCSR on scope exit.
class FpStateGuard {
 public:
  FpStateGuard() : rounding_(std::fegetround()) {
#if defined(__x86_64__) || defined(__i386__)
    csr_ = _mm_getcsr();
#endif
  }
  ~FpStateGuard() {
    std::fesetround(rounding_);
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(csr_);
#endif
  }
  FpStateGuard(const FpStateGuard&) = delete;
  FpStateGuard& operator=(const FpStateGuard&) = delete;

 private:
  int rounding_;
  unsigned csr_ = 0;
};

// A sum tie (1 + 2^-24 at bottom 126), a mean tie (W = 3) and subnormal addends: each is
// rounded or read another way by the fast path's binary64 steps in another state.
Arenas state_sensitive_arenas() {
  std::vector<float> a(exact::kBlock), b(exact::kBlock), c(exact::kBlock);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = 1.0f;
    b[i] = i % 2 == 0 ? 0x1p-24f : float_from_bits(static_cast<std::uint32_t>(i % 7));
    c[i] = i % 3 == 0 ? 0x1p-23f : -0x1p-24f;
  }
  return {a, b, c};
}

void expect_law_bits_in_this_state(const char* state) {
  SCOPED_TRACE(state);
  EXPECT_FALSE(detail::host_fp_state_is_ieee());
  const Arenas arenas = state_sensitive_arenas();
  const ExactPlan plan = agreed_plan(arenas, 3);
  std::vector<std::int64_t> sums(plan.words, 0);
  for (const auto& arena : arenas) {
    std::vector<std::int64_t> law(plan.words);
    detail::exact_encode_by_law(arena.data(), plan, law.data());
    for (HostIsa isa : isas()) {
      std::vector<std::int64_t> fast(plan.words);
      detail::exact_encode(arena.data(), plan, fast.data(), isa);
      ASSERT_EQ(first_difference(fast, law), "") << name_of(isa);
    }
    for (std::size_t i = 0; i < sums.size(); ++i) sums[i] += law[i];
  }
  for (Op op : {Op::kSum, Op::kMean}) {
    std::vector<float> law(plan.count);
    detail::exact_round_by_law(sums.data(), plan, op, law.data());
    for (HostIsa isa : isas()) {
      std::vector<float> fast(plan.count);
      detail::exact_round(sums.data(), plan, op, fast.data(), isa);
      ASSERT_EQ(first_difference(fast, law), "") << to_string(op) << ", " << name_of(isa);
    }
  }
}

TEST(HostExactFast, OtherRoundingModesGiveTheLawsBits) {
  ASSERT_TRUE(detail::host_fp_state_is_ieee());
  for (int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
    FpStateGuard guard;
    ASSERT_EQ(std::fesetround(mode), 0);
    // The probe matters: in these modes a binary64 → binary32 tie or a value just above it
    // rounds another way, so a fast path that did not check would differ from the law.
    volatile double tie = 1.0 + 0x1p-24, above = 1.0 + 0x1p-24 + 0x1p-40;
    EXPECT_TRUE(static_cast<float>(tie) != 1.0f || static_cast<float>(above) != 1.0f + 0x1p-23f);
    expect_law_bits_in_this_state(mode == FE_UPWARD     ? "upward"
                                  : mode == FE_DOWNWARD ? "downward"
                                                        : "toward zero");
  }
  EXPECT_TRUE(detail::host_fp_state_is_ieee());
}

#if defined(__x86_64__) || defined(__i386__)
TEST(HostExactFast, FlushToZeroAndDenormalsAreZeroGiveTheLawsBits) {
  for (unsigned bit : {1u << 15, 1u << 6}) {  // MXCSR.FTZ, MXCSR.DAZ
    FpStateGuard guard;
    _mm_setcsr(_mm_getcsr() | bit);
    // The state does change what the fast paths' conversions give.
    volatile float tiny = 0x1p-149f;
    volatile double tiny_double = 0x1p-149;
    EXPECT_TRUE(static_cast<double>(tiny) == 0.0 ||
                float_bits(static_cast<float>(tiny_double)) == 0u);
    expect_law_bits_in_this_state(bit == (1u << 15) ? "FTZ" : "DAZ");
  }
  EXPECT_TRUE(detail::host_fp_state_is_ieee());
}
#endif

TEST(HostExactFast, AnInstructionSetTheCpuLacksIsRefused) {
  if (detail::host_isa_available(HostIsa::kAvx2)) GTEST_SKIP() << "this CPU has every one";
  float x = 1.0f;
  std::int64_t words[exact::kAgreementWords];
  EXPECT_THROW(detail::exact_agreement_words(&x, 1, words, HostIsa::kAvx2), InputError);
}

}  // namespace
}  // namespace rv

// host_exact.h's fast paths in a floating-point state that is not IEEE's default: they must
// notice it and give the law's bits; and an instruction set the CPU lacks is refused.
#include "tests/exact/host_exact_fast_support.h"

#include <gtest/gtest.h>

namespace rv::test {
namespace {

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
}  // namespace rv::test

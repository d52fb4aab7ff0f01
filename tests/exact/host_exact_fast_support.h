// What the host fast-path tests share: the instruction sets to try, first differences
// between fast and law results, the law's agreement and plan, and the fast-vs-law check.
#pragma once

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
#include "core/exact/host_exact.h"
#include "core/exact/host_exact_law.h"
#include "core/fold_law.h"
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace rv::test {

using Arenas = std::vector<std::vector<float>>;
using detail::HostIsa;

// Every instruction set the fast loops are compiled for that this CPU runs.
inline std::vector<HostIsa> isas() {
  std::vector<HostIsa> out;
  for (HostIsa isa : {HostIsa::kBaseline, HostIsa::kAvx2}) {
    if (detail::host_isa_available(isa)) out.push_back(isa);
  }
  return out;
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

inline const char* name_of(HostIsa isa) { return isa == HostIsa::kAvx2 ? "avx2" : "baseline"; }

// The first element where two word arrays differ, or "" when they are equal.
inline std::string first_difference(const std::vector<std::int64_t>& fast,
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

inline std::string first_difference(const std::vector<float>& fast, const std::vector<float>& law) {
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

inline std::vector<std::int64_t> agreement_law(const std::vector<float>& x) {
  std::vector<std::int64_t> words(exact_block_count(x.size()) * exact::kAgreementWords);
  detail::exact_agreement_words_by_law(x.data(), x.size(), words.data());
  return words;
}

inline std::vector<std::int64_t> agreement_fast(const std::vector<float>& x, HostIsa isa) {
  std::vector<std::int64_t> words(exact_block_count(x.size()) * exact::kAgreementWords);
  detail::exact_agreement_words(x.data(), x.size(), words.data(), isa);
  return words;
}

// "" when every instruction set's agreement words equal the law's.
inline std::string agreement_difference(const std::vector<float>& x) {
  const std::vector<std::int64_t> law = agreement_law(x);
  for (HostIsa isa : isas()) {
    const std::string difference = first_difference(agreement_fast(x, isa), law);
    if (!difference.empty()) return std::string(name_of(isa)) + ": " + difference;
  }
  return "";
}

// The plan every rank derives from the law's agreement words, max-combined.
inline ExactPlan agreed_plan(const Arenas& arenas, std::uint32_t world) {
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
inline void expect_fast_equals_law(const Arenas& arenas, std::uint32_t world,
                                   const std::string& what) {
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

inline Arenas make_arenas(std::uint32_t w, std::size_t n, Distribution dist, std::uint64_t seed) {
  Arenas arenas;
  for (std::uint32_t r = 0; r < w; ++r) arenas.push_back(generate_arena({1, dist, seed}, r, n));
  return arenas;
}

}  // namespace rv::test

// The element law of the exact contract (docs/DESIGN.md §2), shared by the CPU and the CUDA
// kernels so both compile the very same expressions.
//
// Every finite binary32 x is an integer multiple of 2^-149: x = ±k × 2^-149 with k < 2^277.
// A block of kExactBlock elements is carried as fixed-point integers over a window of bit
// positions [bottom, top] that covers every |k| of the block on every rank (agreed by a max
// all-reduce), cut into limbs of limb_bits(W) bits. Each rank writes, per element and limb,
// the signed digit of its own k in that limb; the library's int64 sum all-reduce adds the
// digits; every rank recombines the limbs into one big integer S (the exact sum, in units of
// 2^bottom × 2^-149) and rounds it once. Integer addition is associative, so neither the
// library's algorithm nor the ranks' order can move a bit.
#pragma once

#include <cstdint>

#include "core/dtype_law.h"
#include "core/fold_law.h"
#include "core/host_device.h"

namespace rv {
namespace exact {

// Elements per agreed window. Aligned to element index 0 of the arena.
inline constexpr std::uint32_t kBlock = 1024;
// The largest world the encoding supports: digits of limb_bits(W) bits cannot overflow an
// int64 when summed over W ≤ 2^20 ranks, and the special word's counts need 21 bits each.
inline constexpr std::uint32_t kMaxWorld = std::uint32_t{1} << 20;
// Bit positions of |k| run from 0 (2^-149) to 276 (the top bit of FLT_MAX).
inline constexpr int kTopPosition = 276;
// The agreement words of one block, max-reduced over the ranks.
inline constexpr int kAgreementWords = 3;
// Limbs of the widest window: 277 bits in limbs of at least 43 bits.
inline constexpr int kMaxLimbs = 7;
// The exact sum in two's complement 64-bit words: at most (kMaxLimbs − 1) × 43 + 63 + 1 or
// (5 − 1) × 62 + 63 + 1 bits, under 6 words; one more keeps the top word a pure sign.
inline constexpr int kSumWords = 7;

RV_HD int count_leading_zeros32(std::uint32_t v) {
#if defined(__CUDA_ARCH__)
  return __clz(static_cast<int>(v));
#else
  return v == 0 ? 32 : __builtin_clz(v);
#endif
}

RV_HD int count_trailing_zeros32(std::uint32_t v) {
#if defined(__CUDA_ARCH__)
  return __ffs(static_cast<int>(v)) - 1;
#else
  return __builtin_ctz(v);
#endif
}

RV_HD int count_leading_zeros64(std::uint64_t v) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(v));
#else
  return v == 0 ? 64 : __builtin_clzll(v);
#endif
}

RV_HD bool is_finite_bits(std::uint32_t bits) { return (bits & 0x7F800000u) != 0x7F800000u; }

// |x| = significand << shift, in units of 2^-149, for a finite x. significand is 0 for ±0.
struct Magnitude {
  std::uint32_t significand;  // at most 24 bits
  int shift;                  // 0 … 253
};

RV_HD Magnitude magnitude_of(std::uint32_t bits) {
  const std::uint32_t exponent = (bits >> 23) & 0xFFu;
  const std::uint32_t fraction = bits & 0x7FFFFFu;
  if (exponent == 0) return Magnitude{fraction, 0};  // zero or subnormal
  return Magnitude{fraction | 0x800000u, static_cast<int>(exponent) - 1};
}

// The highest and lowest set bit positions of |k| (significand ≠ 0).
RV_HD int top_position(const Magnitude& m) { return m.shift + 31 - count_leading_zeros32(m.significand); }
RV_HD int bottom_position(const Magnitude& m) {
  return m.shift + count_trailing_zeros32(m.significand);
}

// ⌈log2 W⌉: the bits a sum of W addends may grow by.
RV_HD int log2_ceiling(std::uint32_t world) {
  int k = 0;
  while ((std::uint64_t{1} << k) < world) ++k;
  return k;
}

// The bits a limb carries: digits |d| < 2^L summed over W ranks stay below W × 2^L ≤ 2^63.
RV_HD int limb_bits(std::uint32_t world) {
  const int bits = 63 - log2_ceiling(world);
  return bits > 62 ? 62 : bits;
}

// The agreement words of one element, to be max-combined over a block and over the ranks:
//   [0] the highest bit position of any |k| (−1: no nonzero finite value),
//   [1] kTopPosition − the lowest bit position (so that max gives the lowest; −1: none),
//   [2] 1 when a NaN, ±Inf or −0 needs the special word.
struct AgreementWords {
  std::int64_t top = -1;
  std::int64_t bottom_complement = -1;
  std::int64_t special = 0;
};

RV_HD void widen_agreement(AgreementWords& words, std::uint32_t bits) {
  if (!is_finite_bits(bits) || bits == 0x80000000u) {
    words.special = 1;
    return;
  }
  const Magnitude m = magnitude_of(bits);
  if (m.significand == 0) return;
  const int top = top_position(m);
  const int bottom_complement = kTopPosition - bottom_position(m);
  if (top > words.top) words.top = top;
  if (bottom_complement > words.bottom_complement) words.bottom_complement = bottom_complement;
}

RV_HD void merge_agreement(AgreementWords& into, const AgreementWords& other) {
  if (other.top > into.top) into.top = other.top;
  if (other.bottom_complement > into.bottom_complement) {
    into.bottom_complement = other.bottom_complement;
  }
  if (other.special > into.special) into.special = other.special;
}

// The window of one block as every rank derives it from the agreed words.
struct Window {
  int bottom;  // the bit position of limb 0's lowest bit
  int limbs;   // 0 when the block holds no nonzero finite value
  bool special;
};

RV_HD Window window_of(const AgreementWords& agreed, std::uint32_t world) {
  Window w{0, 0, agreed.special != 0};
  if (agreed.top < 0) return w;
  w.bottom = kTopPosition - static_cast<int>(agreed.bottom_complement);
  const int width = static_cast<int>(agreed.top) - w.bottom + 1;
  const int bits = limb_bits(world);
  w.limbs = (width + bits - 1) / bits;
  return w;
}

// The signed digits of one element in a window: digit j holds bits [bottom + jL, bottom +
// (j+1)L) of |k|, with x's sign. A significand of 24 bits touches at most two limbs.
struct Digits {
  int first_limb;  // −1: every digit is 0
  std::int64_t low, high;
};

RV_HD Digits digits_of(std::uint32_t bits, int bottom, int limb_width) {
  Digits d{-1, 0, 0};
  if (!is_finite_bits(bits)) return d;
  const Magnitude m = magnitude_of(bits);
  if (m.significand == 0) return d;
  // Without its trailing zeros the significand starts at the value's lowest set bit, which
  // an agreed window never cuts off (bottom ≤ it).
  const int zeros = count_trailing_zeros32(m.significand);
  const int s = m.shift + zeros - bottom;
  const int r = s % limb_width;
  const std::uint64_t mask = (std::uint64_t{1} << limb_width) - 1;
  const std::uint64_t sig = m.significand >> zeros;
  // Bits shifted past 64 are above the limb anyway: the mask keeps the limb's L bits.
  const std::uint64_t low = (sig << r) & mask;
  const std::uint64_t high = sig >> (limb_width - r);
  const bool negative = (bits >> 31) != 0;
  d.first_limb = s / limb_width;
  d.low = negative ? -static_cast<std::int64_t>(low) : static_cast<std::int64_t>(low);
  d.high = negative ? -static_cast<std::int64_t>(high) : static_cast<std::int64_t>(high);
  return d;
}

// The special word of one element: count(+Inf or NaN) + count(−Inf or NaN) × 2^21 +
// count(not −0) × 2^42. A NaN counts as both infinities, so "NaN, or +Inf with −Inf" is
// "both counts nonzero". Each count is at most W ≤ 2^20 < 2^21: fields never collide.
inline constexpr int kSpecialFieldBits = 21;
RV_HD std::int64_t special_word_of(std::uint32_t bits) {
  const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  const bool nan = magnitude > 0x7F800000u;
  const bool negative = (bits >> 31) != 0;
  const std::int64_t pos_inf = (nan || (magnitude == 0x7F800000u && !negative)) ? 1 : 0;
  const std::int64_t neg_inf = (nan || (magnitude == 0x7F800000u && negative)) ? 1 : 0;
  const std::int64_t not_negative_zero = bits == 0x80000000u ? 0 : 1;
  return pos_inf | (neg_inf << kSpecialFieldBits) | (not_negative_zero << (2 * kSpecialFieldBits));
}

// ---- Rounding the exact sum ----------------------------------------------------------

// An unsigned big integer in little-endian 64-bit words.
template <int Words>
struct BigMagnitude {
  std::uint64_t word[Words];
};

// RNE of value = M × 2^(exponent − 149) (plus a nonzero fraction below M's last bit when
// sticky) to the format F (binary32 unless named; docs/DESIGN.md §2.5) with subnormals; the
// sign is applied by the caller. M ≠ 0. Returns F's bits.
template <class F = Binary32Format, int Words>
RV_HD std::uint32_t round_magnitude(const BigMagnitude<Words>& m, int exponent, bool sticky) {
  constexpr int p = F::kPrecision;
  int top_word = Words - 1;
  while (m.word[top_word] == 0) --top_word;
  const int h = top_word * 64 + 63 - count_leading_zeros64(m.word[top_word]);
  // The lowest kept bit, in units of 2^-149: p significant bits, but never below F's
  // smallest subnormal.
  int lsb = h + exponent - (p - 1);
  if (lsb < F::kLsbMin) lsb = F::kLsbMin;
  const int drop = lsb - exponent;  // low bits of M below the kept ones
  std::uint64_t kept;
  if (drop <= 0) {
    kept = m.word[0] << (-drop);  // exact: h < p here, so M fits one word
  } else if (drop > h) {
    // Every bit of M lies below the kept place (a value under F's smallest subnormal; binary32
    // meets it only in a mean): the round bit is M's top bit when it sits right below.
    bool below = sticky;
    for (int i = 0; i < top_word && !below; ++i) below = m.word[i] != 0;
    if (!below) below = (m.word[top_word] & ~(std::uint64_t{1} << (h % 64))) != 0;
    kept = (drop == h + 1 && below) ? 1u : 0u;
  } else {
    const int w = drop / 64, b = drop % 64;
    kept = m.word[w] >> b;
    if (b != 0 && w + 1 < Words) kept |= m.word[w + 1] << (64 - b);
    kept &= (std::uint64_t{1} << (p + 1)) - 1;  // at most p bits are kept (h − drop ≤ p − 1)
    const int round_pos = drop - 1;
    const bool round_bit = (m.word[round_pos / 64] >> (round_pos % 64)) & 1u;
    bool below = sticky;
    for (int i = 0; i < round_pos / 64 && !below; ++i) below = m.word[i] != 0;
    if (!below && round_pos % 64 != 0) {
      below = (m.word[round_pos / 64] & ((std::uint64_t{1} << (round_pos % 64)) - 1)) != 0;
    }
    if (round_bit && (below || (kept & 1u))) ++kept;
    if (kept == (std::uint64_t{1} << p)) {
      kept >>= 1;
      ++lsb;
    }
  }
  if (kept < (std::uint64_t{1} << (p - 1))) return static_cast<std::uint32_t>(kept);  // subnormal
  // value = kept × 2^(lsb − 149), kept in [2^(p−1), 2^p)
  const int biased = lsb - F::kLsbMin + 1;
  if (biased >= F::kMaxBiased) return F::kInfBits;
  return (static_cast<std::uint32_t>(biased) << (p - 1)) |
         static_cast<std::uint32_t>(kept & ((std::uint64_t{1} << (p - 1)) - 1));
}

// RNE of (M / W) × 2^(exponent − 149), M ≠ 0, W < 2^21: the mean, rounded once. T = M's top
// 64 bits (bit 63 set; M × 2^-t = T + a fraction f ∈ [0, 1)), q = floor(T / W), so
//   M / W = (q + (T mod W + f) / W) × 2^t, with (T mod W + f) / W ∈ [0, 1),
// and the fraction is zero exactly when T mod W = 0 and f = 0. q ≥ 2^63 / 2^21 has at least
// 43 bits, more than the 24 kept plus the round bit, so RNE of (q, sticky = fraction ≠ 0)
// is RNE of the true quotient. (A quotient that small lies far above the subnormal range, so
// round_magnitude always drops bits of q and sees the sticky bit; F's precision is at most 24.)
template <class F = Binary32Format, int Words>
RV_HD std::uint32_t round_mean(const BigMagnitude<Words>& m, int exponent, std::uint32_t world) {
  int top_word = Words - 1;
  while (m.word[top_word] == 0) --top_word;
  const int bit_length = top_word * 64 + 64 - count_leading_zeros64(m.word[top_word]);
  const int t = bit_length - 64;
  std::uint64_t top;
  bool below = false;
  if (t <= 0) {
    top = m.word[0] << (-t);  // M fits one word here
  } else {
    const int w = t / 64, b = t % 64;
    top = m.word[w] >> b;
    if (b != 0) top |= m.word[w + 1] << (64 - b);
    for (int i = 0; i < w && !below; ++i) below = m.word[i] != 0;
    if (!below && b != 0) below = (m.word[w] & ((std::uint64_t{1} << b) - 1)) != 0;
  }
  const BigMagnitude<1> q{{top / world}};
  return round_magnitude<F>(q, exponent + t, below || top % world != 0);
}

// A signed big integer in two's complement, kSumWords words: the limb sums recombined.
struct ExactSum {
  std::uint64_t word[kSumWords];
};

// S = Σ_j D_j × 2^(j·L): each D_j sign-extended and added at bit j·L.
RV_HD void add_shifted(ExactSum& s, std::int64_t digit, int shift) {
  const int w = shift / 64, b = shift % 64;
  const std::uint64_t extension = digit < 0 ? ~std::uint64_t{0} : 0;
  const auto d = static_cast<std::uint64_t>(digit);
  std::uint64_t carry = 0;
  for (int i = w; i < kSumWords; ++i) {
    std::uint64_t part;
    if (i == w) {
      part = d << b;
    } else if (i == w + 1 && b != 0) {
      part = (d >> (64 - b)) | (extension << b);
    } else {
      part = extension;
    }
    const std::uint64_t sum = s.word[i] + part;
    const std::uint64_t carry_out = (sum < part) ? 1u : 0u;
    s.word[i] = sum + carry;
    carry = carry_out | ((s.word[i] < sum) ? 1u : 0u);
  }
}

// The result bits from the recombined limbs (or the one-limb sum), the window's bottom, W, op
// and, in a special block, the summed special word (0 and has_special = false otherwise), as
// the bits of the format F (binary32 unless named).
template <class F = Binary32Format>
RV_HD std::uint32_t round_exact_sum(const ExactSum& s, int bottom, std::uint32_t world, bool mean,
                                    bool has_special, std::int64_t special) {
  if (has_special) {
    const std::int64_t field = (std::int64_t{1} << kSpecialFieldBits) - 1;
    const bool pos_inf = (special & field) != 0;
    const bool neg_inf = ((special >> kSpecialFieldBits) & field) != 0;
    if (pos_inf && neg_inf) return F::kNanBits;
    if (pos_inf) return F::kInfBits;
    if (neg_inf) return F::kSignBit | F::kInfBits;
  }
  const bool negative = (s.word[kSumWords - 1] >> 63) != 0;
  BigMagnitude<kSumWords> m{};
  std::uint64_t borrow = 1;
  bool zero = true;
  for (int i = 0; i < kSumWords; ++i) {  // |S|
    std::uint64_t v = s.word[i];
    if (negative) {
      v = ~v + borrow;
      borrow = (borrow != 0 && v == 0) ? 1u : 0u;
    }
    m.word[i] = v;
    zero = zero && v == 0;
  }
  if (zero) {
    // An exact zero is +0 unless every addend was −0 (no addend counted as "not −0").
    const bool all_negative_zero =
        has_special && ((special >> (2 * kSpecialFieldBits)) & ((1 << kSpecialFieldBits) - 1)) == 0;
    return all_negative_zero ? F::kSignBit : 0u;
  }
  const std::uint32_t sign = negative ? F::kSignBit : 0u;
  return sign | (mean ? round_mean<F>(m, bottom, world) : round_magnitude<F>(m, bottom, false));
}

// The common case, a one-limb window: S is the digit sum D itself (|D| < 2^63).
template <class F = Binary32Format>
RV_HD std::uint32_t round_one_limb(std::int64_t d, int bottom, std::uint32_t world, bool mean) {
  if (d == 0) return 0u;
  const std::uint32_t sign = d < 0 ? F::kSignBit : 0u;
  const BigMagnitude<1> m{{d < 0 ? 0 - static_cast<std::uint64_t>(d) : static_cast<std::uint64_t>(d)}};
  return sign | (mean ? round_mean<F>(m, bottom, world) : round_magnitude<F>(m, bottom, false));
}

// A two-limb window without specials: S = D0 + D1 × 2^L in 128-bit two's complement
// (|S| < 2^63 + 2^125, so it fits).
template <class F = Binary32Format>
RV_HD std::uint32_t round_two_limbs(std::int64_t d0, std::int64_t d1, int limb_width, int bottom,
                                    std::uint32_t world, bool mean) {
  const std::uint64_t lo0 = static_cast<std::uint64_t>(d0);
  const std::uint64_t hi0 = d0 < 0 ? ~std::uint64_t{0} : 0;
  const std::uint64_t lo1 = static_cast<std::uint64_t>(d1) << limb_width;
  const auto hi1 = static_cast<std::uint64_t>(d1 >> (64 - limb_width));  // arithmetic shift
  std::uint64_t lo = lo0 + lo1;
  std::uint64_t hi = hi0 + hi1 + (lo < lo0 ? 1u : 0u);
  const bool negative = (hi >> 63) != 0;
  if (negative) {
    lo = ~lo + 1;
    hi = ~hi + (lo == 0 ? 1u : 0u);
  }
  if (lo == 0 && hi == 0) return 0u;
  const std::uint32_t sign = negative ? F::kSignBit : 0u;
  const BigMagnitude<2> m{{lo, hi}};
  return sign | (mean ? round_mean<F>(m, bottom, world) : round_magnitude<F>(m, bottom, false));
}

}  // namespace exact
}  // namespace rv

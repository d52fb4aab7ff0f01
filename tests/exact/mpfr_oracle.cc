#include "mpfr_oracle.h"

#include <gmp.h>
#include <mpfr.h>

#include <cmath>
#include <cstring>

namespace rv {
namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// x (or x / divisor) rounded once to a binary format of `precision` bits whose normal values
// start at 2^min_normal and whose finite values lie below 2^max_exponent: RNE with subnormals
// and overflow to ±Inf. The quotient is first rounded to `precision` bits in MPFR's default
// (huge) exponent range, keeping its ternary value; mpfr_check_range then brings it into the
// format's range (overflow to Inf under RN) and mpfr_subnormalize rounds it again to the
// subnormal grid, using the ternary value so that the two steps round as one.
float round_to_format(mpfr_srcptr exact_value, std::uint32_t divisor, int precision, int min_normal,
                      int max_exponent) {
  const mpfr_exp_t old_emin = mpfr_get_emin(), old_emax = mpfr_get_emax();
  mpfr_t r;
  mpfr_init2(r, precision);
  int t = divisor == 1 ? mpfr_set(r, exact_value, MPFR_RNDN)
                       : mpfr_div_ui(r, exact_value, divisor, MPFR_RNDN);
  // MPFR's exponent e means [2^(e-1), 2^e): the smallest normal 2^min_normal has e =
  // min_normal + 1, and subnormalize keeps precision − 1 bits below it, so the smallest
  // subnormal 2^(min_normal − precision + 1) is e = min_normal − precision + 2.
  mpfr_set_emin(min_normal - precision + 2);
  mpfr_set_emax(max_exponent);
  t = mpfr_check_range(r, t, MPFR_RNDN);
  mpfr_subnormalize(r, t, MPFR_RNDN);
  const float f = mpfr_get_flt(r, MPFR_RNDN);  // exact: every such value is a binary32 value
  mpfr_set_emin(old_emin);
  mpfr_set_emax(old_emax);
  mpfr_clear(r);
  return f;
}

}  // namespace

std::uint32_t mpfr_exact_bits(const std::vector<float>& addends, Op op, const MpfrFormat& format) {
  bool nan = false, pos_inf = false, neg_inf = false, all_negative_zero = true;
  for (float a : addends) {
    nan = nan || std::isnan(a);
    pos_inf = pos_inf || (std::isinf(a) && a > 0);
    neg_inf = neg_inf || (std::isinf(a) && a < 0);
    all_negative_zero = all_negative_zero && bits_of(a) == 0x80000000u;
  }
  if (nan || (pos_inf && neg_inf)) return 0x7FC00000u;
  if (pos_inf) return 0x7F800000u;
  if (neg_inf) return 0xFF800000u;
  // Any binary32 sum of up to 2^20 addends fits 277 + 20 bits: 400 bits hold it exactly.
  std::vector<mpfr_t> values(addends.size());
  std::vector<mpfr_ptr> pointers;
  for (std::size_t r = 0; r < addends.size(); ++r) {
    mpfr_init2(values[r], 24);
    mpfr_set_flt(values[r], addends[r], MPFR_RNDN);  // exact
    pointers.push_back(values[r]);
  }
  mpfr_t sum;
  mpfr_init2(sum, 400);
  const int inexact = mpfr_sum(sum, pointers.data(), pointers.size(), MPFR_RNDN);
  std::uint32_t bits;
  if (inexact != 0) {
    bits = 0xFFFFFFFFu;  // cannot happen at 400 bits; makes the test fail loudly
  } else if (mpfr_zero_p(sum)) {
    bits = all_negative_zero ? 0x80000000u : 0u;
  } else {
    const auto divisor = op == Op::kMean ? static_cast<std::uint32_t>(addends.size()) : 1u;
    bits = bits_of(round_to_format(sum, divisor, format.precision, format.min_normal_exponent,
                                   format.max_exponent));
  }
  mpfr_clear(sum);
  for (auto& v : values) mpfr_clear(v);
  return bits;
}

std::uint32_t mpfr_exact_bits(const std::vector<float>& addends, Op op) {
  return mpfr_exact_bits(addends, op, kMpfrBinary32);
}

}  // namespace rv

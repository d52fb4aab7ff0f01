// The bf16/f16 exact kernels' mean for a W that is not a power of two
// (core/cuda/exact/exact_stacked_half_kernel.cu): the exact double sum divided by W, rounded to
// odd in binary64 (truncated toward zero, the last bit set when the quotient is not exact).
// One rounding of that to bf16 or f16 is the true mean's rounding, since 53 ≥ p + 2 bits keep
// "above, below or on a midpoint" apart, so no correctly rounded division is needed: this costs
// a multiplication and at most four FMAs where a division costs a reciprocal's iterations and a
// slow path (docs/results.md, "Decisions behind the code"). One definition for the kernels and
// the CPU test that holds it to exact arithmetic (tests/exact/odd_quotient_test.cc).
#pragma once

#include <cmath>
#include <cstdint>
#include "core/fold_law.h"
#include "core/host_device.h"

namespace rv::exact {

RV_HD double multiply_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

RV_HD double fma_rn(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// y / w rounded to odd. y: finite, 0 or of magnitude at least 2^-960 (the kernels' sums are
// multiples of 2^-133); w: an integer from 3 to 2^20; reciprocal: 1 / w rounded to nearest.
// Signs of zero are kept (±0 / w = ±0).
//
// q0 = |y| × reciprocal is within 2 ulps of |y| / w, and one correction
// q1 = q0 + (|y| − q0 × w) × reciprocal (the remainder exact by FMA) within half an ulp and a
// little (the rounding of q1 itself; the reciprocal's error is 2^-53 of the correction). So the
// truncated quotient t is q1 or, when q1 lies above |y| / w, the double below it (at a power of
// two too: q1 = 2^k is the nearest double to something within 2^-54 · 2^k of |y| / w, above the
// double below it); |y| − q1 × w, exact by FMA (q1 is within an ulp of the quotient), says which,
// and |y| − t × w whether t is exact.
RV_HD double odd_quotient(double y, double w, double reciprocal) {
  const double a = fabs(y);
  const double q0 = multiply_rn(a, reciprocal);
  const double q1 = fma_rn(fma_rn(-q0, w, a), reciprocal, q0);
  std::uint64_t t = double_bits(q1);
  double remainder = fma_rn(-q1, w, a);
  if (remainder < 0.0) {
    t -= 1;  // q1 > 0 here: the next double toward zero
    remainder = fma_rn(-double_from_bits(t), w, a);
  }
  const std::uint64_t odd = t | (remainder != 0.0 ? 1u : 0u);
  return copysign(double_from_bits(odd), y);
}

}  // namespace rv::exact

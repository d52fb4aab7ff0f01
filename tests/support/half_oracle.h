// Oracles for the half-precision formats that share no code with core/dtype_law.h, for tests
// that need a result of bf16 or f16 computed independently (docs/DESIGN.md §2.5):
//   f16: GCC's _Float16 conversions (libgcc or F16C: IEEE round-to-nearest-even, subnormals);
//   bf16: widening is the definition (binary32's top half); narrowing picks the nearer of the
//   two bf16 values around x, distances compared exactly in double, ties to the even one.
// NaN narrows to the format's canonical quiet NaN (0x7E00, 0x7FC0), as the contracts write it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace rv::test {

inline std::uint32_t oracle_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
inline float oracle_float(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

inline float oracle_widen_f16(std::uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, sizeof h);
  return static_cast<float>(h);
}
inline std::uint16_t oracle_narrow_f16(float f) {
  if (std::isnan(f)) return 0x7E00u;
  volatile float v = f;  // the run-time conversion, never a compile-time fold
  const auto h = static_cast<_Float16>(v);
  std::uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

inline float oracle_widen_bf16(std::uint16_t bits) {
  return oracle_float(std::uint32_t{bits} << 16);
}
inline std::uint16_t oracle_narrow_bf16(float x) {
  if (std::isnan(x)) return 0x7FC0u;
  const std::uint32_t b = oracle_bits(x);
  const auto t = static_cast<std::uint16_t>(b >> 16);
  if ((b & 0xFFFFu) == 0) return t;
  const auto m = static_cast<std::uint16_t>(t & 0x7FFFu);
  const double ax = std::fabs(static_cast<double>(x));
  const double low = static_cast<double>(oracle_widen_bf16(m));
  // After the largest finite (0x7F7F) comes Inf: for rounding it stands for 2^128.
  const double high =
      m == 0x7F7Fu ? std::ldexp(1.0, 128)
                   : static_cast<double>(oracle_widen_bf16(static_cast<std::uint16_t>(m + 1)));
  const bool up = high - ax < ax - low || (high - ax == ax - low && (t & 1u) != 0);
  return static_cast<std::uint16_t>(up ? t + 1 : t);
}

// x rounded to the format (f16 when `f16`, else bf16), widened back; NaN as 0x7FC00000.
inline float oracle_round(bool f16, float x) {
  return f16 ? oracle_widen_f16(oracle_narrow_f16(x)) : oracle_widen_bf16(oracle_narrow_bf16(x));
}

}  // namespace rv::test

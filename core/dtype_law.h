// The element law of the half-precision dtypes (docs/DESIGN.md §2.5), shared by the CPU and
// the CUDA kernels so both compile the very same expressions.
//
// Every bfloat16 and every binary16 value is exactly a binary32 value, so a half-precision
// element is carried through the contracts as its binary32 widening (exact, no rounding),
// and rounded back to its format once, where the contract says (fixed-order: after the
// binary32 fold; exact: the exact sum itself). `narrow_*` are that rounding:
// round-to-nearest-even, subnormals kept, overflow to ±Inf, every NaN written as the
// format's canonical NaN (the quiet NaN with a zero payload, whose widening is binary32's
// canonical 0x7FC00000).
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/fold_law.h"
#include "core/host_device.h"

namespace rv {

inline constexpr std::uint16_t kCanonicalBf16NanBits = 0x7FC0u;
inline constexpr std::uint16_t kCanonicalF16NanBits = 0x7E00u;

// The layout of a binary format, in the terms the exact contract's rounding needs
// (core/exact/exact_law.h): values are counted in units of 2^-149 (binary32's smallest
// subnormal, which every format here is a multiple of).
//   kPrecision  significant bits of a normal value, the hidden bit included
//   kLsbMin     the bit position of the smallest subnormal (2^(kLsbMin − 149))
//   kMaxBiased  the biased exponent of ±Inf and NaN
struct Binary32Format {
  static constexpr int kPrecision = 24;
  static constexpr int kLsbMin = 0;
  static constexpr int kMaxBiased = 255;
  static constexpr std::uint32_t kSignBit = 0x80000000u;
  static constexpr std::uint32_t kInfBits = 0x7F800000u;
  static constexpr std::uint32_t kNanBits = kCanonicalNanBits;
};
struct BFloat16Format {
  static constexpr int kPrecision = 8;
  static constexpr int kLsbMin = 16;  // 2^-133
  static constexpr int kMaxBiased = 255;
  static constexpr std::uint32_t kSignBit = 0x8000u;
  static constexpr std::uint32_t kInfBits = 0x7F80u;
  static constexpr std::uint32_t kNanBits = kCanonicalBf16NanBits;
};
struct Float16Format {
  static constexpr int kPrecision = 11;
  static constexpr int kLsbMin = 125;  // 2^-24
  static constexpr int kMaxBiased = 31;
  static constexpr std::uint32_t kSignBit = 0x8000u;
  static constexpr std::uint32_t kInfBits = 0x7C00u;
  static constexpr std::uint32_t kNanBits = kCanonicalF16NanBits;
};

// ---- Widening: exact ----------------------------------------------------------------

RV_HD float widen_bf16(std::uint16_t bits) {
  return float_from_bits(static_cast<std::uint32_t>(bits) << 16);
}

RV_HD float widen_f16(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  const std::uint32_t fraction = bits & 0x3FFu;
  if (exponent == 31) return float_from_bits(sign | 0x7F800000u | (fraction << 13));
  if (exponent != 0) return float_from_bits(sign | ((exponent + 112u) << 23) | (fraction << 13));
  if (fraction == 0) return float_from_bits(sign);
  // A subnormal f × 2^-24 with its top bit at position p (0 … 9) is 1.xxx × 2^(p − 24).
  int p = 9;
  while (((fraction >> p) & 1u) == 0) --p;
  const std::uint32_t normalised = (fraction << (10 - p)) & 0x3FFu;
  return float_from_bits(sign | (static_cast<std::uint32_t>(p + 103) << 23) | (normalised << 13));
}

// A format's bits (as the exact rounding returns them) as their binary32 widening.
template <class F>
RV_HD float widen_format(std::uint32_t bits);
template <>
RV_HD float widen_format<Binary32Format>(std::uint32_t bits) {
  return float_from_bits(bits);
}
template <>
RV_HD float widen_format<BFloat16Format>(std::uint32_t bits) {
  return widen_bf16(static_cast<std::uint16_t>(bits));
}
template <>
RV_HD float widen_format<Float16Format>(std::uint32_t bits) {
  return widen_f16(static_cast<std::uint16_t>(bits));
}

// ---- Narrowing: one rounding to nearest, ties to even ---------------------------------

RV_HD std::uint16_t narrow_bf16(float value) {
  const std::uint32_t bits = float_bits(value);
  if (is_nan_bits(bits)) return kCanonicalBf16NanBits;
  // bfloat16 is binary32's top half: adding 0x7FFF plus the kept half's lowest bit rounds the
  // low half to nearest-even, a carry moving into the exponent (up to Inf) as it should.
  return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

RV_HD std::uint16_t narrow_f16(float value) {
  const std::uint32_t bits = float_bits(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return kCanonicalF16NanBits;
  if (magnitude == 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7C00u);
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  if (exponent < -26) return sign;  // below 2^-26: under half the smallest subnormal
  const std::uint32_t significand = (magnitude & 0x7FFFFFu) | 0x800000u;  // × 2^(exponent − 23)
  // Keep the bits at or above binary16's last place: 2^(exponent − 10) for a normal result,
  // 2^-24 for a subnormal one.
  const int drop = exponent >= -14 ? 13 : -1 - exponent;  // 13 … 25
  const std::uint32_t kept = significand >> drop;
  const std::uint32_t rest = significand & ((1u << drop) - 1u);
  const std::uint32_t half = 1u << (drop - 1);
  const std::uint32_t rounded = kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
  // A normal result is (exponent + 15) × 2^10 + the 11-bit significand less its hidden bit;
  // written as (exponent + 14) × 2^10 + significand, a carry out of the significand moves
  // into the exponent, and past 30 it is Inf (0x7C00) exactly.
  std::uint32_t result =
      exponent >= -14 ? (static_cast<std::uint32_t>(exponent + 14) << 10) + rounded : rounded;
  if (result > 0x7C00u) result = 0x7C00u;
  return static_cast<std::uint16_t>(sign | result);
}

// ---- On widened values ----------------------------------------------------------------

// The bits of a value of `dtype` held as its binary32 widening (exact for a value of the
// format; otherwise the nearest one). f32 values keep their bits.
RV_HD std::uint16_t half_bits(DType dtype, float value) {
  return dtype == DType::kF16 ? narrow_f16(value) : narrow_bf16(value);
}
RV_HD float widen_half(DType dtype, std::uint16_t bits) {
  return dtype == DType::kF16 ? widen_f16(bits) : widen_bf16(bits);
}

// The value of `dtype` nearest to `value`, as its binary32 widening: the one rounding that
// takes a binary32 result to a half-precision one. The identity for f32.
RV_HD float round_to_dtype(DType dtype, float value) {
  switch (dtype) {
    case DType::kF32:
      return value;
    case DType::kBF16:
      return widen_bf16(narrow_bf16(value));
    case DType::kF16:
      return widen_f16(narrow_f16(value));
  }
  return value;
}

}  // namespace rv

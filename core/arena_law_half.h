// The value law of seeded arenas of the half-precision dtypes, generator version 1
// (docs/DESIGN.md §4): the five distributions of core/arena_law.h mapped onto the range of
// bfloat16 and of binary16, each value a pure function of (generator version, seed, dtype,
// distribution, logical rank, element index) built by bit assembly from the same keys.
// Values are returned as their exact binary32 widening (core/dtype_law.h). Changing anything
// here is a new generator version.
#pragma once

#include <cstdint>

#include "core/arena_law.h"
#include "core/dtype_law.h"

namespace rv {
namespace arena_half_v1 {

// The layout of the format's fields.
struct HalfFields {
  int fraction_bits;         // 7 (bf16) or 10 (f16)
  std::uint32_t bias;        // 127 or 15
  std::uint32_t max_biased;  // 255 or 31: the exponent of ±Inf and NaN
};
RV_HD HalfFields fields_of(DType dtype) {
  return dtype == DType::kF16 ? HalfFields{10, 15, 31} : HalfFields{7, 127, 255};
}

RV_HD float assemble(DType dtype, std::uint32_t sign, std::uint32_t exponent,
                     std::uint32_t fraction) {
  const HalfFields f = fields_of(dtype);
  const auto bits = static_cast<std::uint16_t>(
      (sign << 15) | (exponent << f.fraction_bits) | (fraction & ((1u << f.fraction_bits) - 1u)));
  return widen_half(dtype, bits);
}

RV_HD std::uint32_t bit_of(std::uint64_t h, int bit) {
  return static_cast<std::uint32_t>((h >> bit) & 1u);
}

// binary32's gradient-like values rounded once to the format; binary16's scaled by 2^6 first
// (exact), so its block scales 2^-3 … 2^-14 land in 2^3 … 2^-8, where binary16 keeps its
// 11 bits (the smallest values still reach its subnormals).
RV_HD float normal(DType dtype, const ArenaKeys& k, std::uint64_t i) {
  const float v = arena_v1::normal(k, i);
  return round_to_dtype(dtype, dtype == DType::kF16 ? v * arena_v1::pow2(6) : v);
}

// Every finite value of the format: random sign, exponent field 0 … max − 1 (0 = subnormal
// or ±0), random fraction.
RV_HD float wide(DType dtype, const ArenaKeys& k, std::uint64_t i) {
  const std::uint64_t h = mix_in(k.rank_key, i);
  const HalfFields f = fields_of(dtype);
  const auto exponent = static_cast<std::uint32_t>(((h >> 23) & 0xFFu) % f.max_biased);
  return assemble(dtype, bit_of(h, 63), exponent, static_cast<std::uint32_t>(h));
}

// As binary32's: ¾ large values shared by all ranks with the sign alternating with the rank's
// parity and the lowest fraction bits perturbed per rank, ¼ small residues. bf16: large in
// [2^16, 2^24), residues in [2^-15, 2^-7); f16: large in [2^8, 2^14), so that partial sums of
// alternating signs stay below binary16's 65504, residues in [2^-9, 2^-3).
RV_HD float cancel(DType dtype, const ArenaKeys& k, std::uint32_t rank, std::uint64_t i) {
  const std::uint64_t h = mix_in(k.rank_key, i);
  const HalfFields f = fields_of(dtype);
  const bool half16 = dtype == DType::kF16;
  if ((h & 3u) == 0) {
    const auto exponent = f.bias - (half16 ? 4u : 8u) - static_cast<std::uint32_t>((h >> 2) % (half16 ? 6u : 8u));
    return assemble(dtype, bit_of(h, 40), exponent, static_cast<std::uint32_t>(h >> 8));
  }
  const std::uint64_t s = mix_in(k.shared_key, i);
  const auto exponent = f.bias + (half16 ? 8u : 16u) + static_cast<std::uint32_t>(s % (half16 ? 6u : 8u));
  const auto fraction =
      static_cast<std::uint32_t>(s >> 8) ^ static_cast<std::uint32_t>((h >> 8) & (half16 ? 0xFu : 0x3u));
  return assemble(dtype, bit_of(s, 40) ^ (rank & 1u), exponent, fraction);
}

// Small integers: [−2, 2] for bf16, [−16, 16] for f16, so that every partial sum of W ≤ 128
// addends is an integer of at most 8 (bf16) or 11 (f16) bits, exact in the format: every
// association of those gives the same bits, including the library's half-precision sum.
inline constexpr std::uint32_t kExactSumWorld = 128;
RV_HD float exact(DType dtype, const ArenaKeys& k, std::uint64_t i) {
  const std::uint64_t h = mix_in(k.rank_key, i);
  const std::int32_t range = dtype == DType::kF16 ? 16 : 2;
  return static_cast<float>(static_cast<std::int32_t>(h % static_cast<std::uint64_t>(2 * range + 1)) - range);
}

// ±0, ±Inf, quiet and signalling NaNs with assorted payloads, subnormals, tiny normals, and
// ordinary values between 2^-4 and 2^5, in the proportions of binary32's.
RV_HD float special(DType dtype, const ArenaKeys& k, std::uint64_t i) {
  const std::uint64_t h = mix_in(k.rank_key, i);
  const HalfFields f = fields_of(dtype);
  const std::uint32_t sign = bit_of(h, 40);
  const auto fraction = static_cast<std::uint32_t>(h >> 8) & ((1u << f.fraction_bits) - 1u);
  const std::uint32_t quiet = 1u << (f.fraction_bits - 1);
  const std::uint32_t payload = fraction & (quiet - 1u);
  const auto kind = static_cast<std::uint32_t>(h & 63u);
  if (kind < 4) return assemble(dtype, kind < 2 ? 0u : 1u, 0, 0);                // +0, −0
  if (kind < 6) return assemble(dtype, kind == 4 ? 0u : 1u, f.max_biased, 0);    // ±Inf
  if (kind == 6) return assemble(dtype, sign, f.max_biased, quiet | payload);      // quiet NaN
  if (kind == 7) return assemble(dtype, sign, f.max_biased, payload ? payload : 1u);  // sNaN
  if (kind < 24) return assemble(dtype, sign, 0, fraction ? fraction : 1u);      // subnormal
  if (kind < 32) {  // tiny normals: their differences land in the subnormal range
    return assemble(dtype, sign, 1u + static_cast<std::uint32_t>((h >> 32) % 3u), fraction);
  }
  return assemble(dtype, sign, f.bias - 4u + static_cast<std::uint32_t>((h >> 32) % 9u), fraction);
}

}  // namespace arena_half_v1

// The value of element i of `rank`'s arena of a half-precision dtype (bf16 or f16), widened.
RV_HD float arena_value_half_v1(DType dtype, const ArenaKeys& keys, Distribution dist,
                                std::uint32_t rank, std::uint64_t i) {
  switch (dist) {
    case Distribution::kNormal:
      return arena_half_v1::normal(dtype, keys, i);
    case Distribution::kWide:
      return arena_half_v1::wide(dtype, keys, i);
    case Distribution::kCancel:
      return arena_half_v1::cancel(dtype, keys, rank, i);
    case Distribution::kExact:
      return arena_half_v1::exact(dtype, keys, i);
    case Distribution::kSpecial:
      return arena_half_v1::special(dtype, keys, i);
  }
  return 0.0f;
}

}  // namespace rv

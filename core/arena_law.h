// The value law of seeded arenas, generator version 1 (docs/DESIGN.md §4). Each value is a pure
// function of (generator version, seed, distribution, logical rank, element index), built
// from integer mixing and exact float construction (bit assembly, or a small integer times
// a power of two): no libm, no RNG state, so the CPU and a GPU regenerate any slice of any
// rank's arena bit for bit. Changing anything here is a new generator version.
#pragma once

#include <cstdint>

#include "core/fold_law.h"
#include "core/host_device.h"
#include "core/seed_law.h"

namespace rv {

enum class Distribution : std::uint8_t {
  kNormal,   // gradient-like: bell-shaped, mixed signs, a scale per block of 1024 elements
  kWide,     // the whole finite exponent range, subnormals included
  kCancel,   // large values that cancel across ranks plus small residues: order-sensitive
  kExact,    // small integers: every association exact, so only lost bytes change a sum
  kSpecial,  // ±0, ±inf, NaNs with assorted payloads, subnormals, among ordinary values
};
inline constexpr int kDistributionCount = 5;

// The keys of one rank's arena, computed once per (spec, rank) so the per-element work is
// one or two mixes.
struct ArenaKeys {
  std::uint64_t rank_key;    // values that differ per rank
  std::uint64_t shared_key;  // structure all ranks share at an index
};

RV_HD ArenaKeys arena_keys(std::uint64_t seed, Distribution dist, std::uint32_t rank) {
  const SeedLaw law(seed);
  const auto d = static_cast<std::uint64_t>(dist);
  return ArenaKeys{law.key(SeedDomain::kArenaValues, d, rank),
                   law.key(SeedDomain::kArenaShared, d)};
}

namespace arena_v1 {

RV_HD float pow2(int exponent) {  // exact for the normal range only
  return float_from_bits(static_cast<std::uint32_t>(127 + exponent) << 23);
}

RV_HD std::uint32_t sign_bit(std::uint64_t h, int bit) {
  return static_cast<std::uint32_t>((h >> bit) & 1u) << 31;
}

RV_HD float normal(const ArenaKeys& k, std::uint64_t i) {
  const std::uint64_t h = mix_in(k.rank_key, i);
  const std::uint64_t h2 = mix64(h ^ 0xD6E8FEB86659FD93ull);
  // Irwin–Hall of four 21-bit uniforms: bell-shaped, |k| < 2^22, so exact in binary32.
  const std::int64_t sum =
      static_cast<std::int64_t>(h & 0x1FFFFF) + static_cast<std::int64_t>((h >> 21) & 0x1FFFFF) +
      static_cast<std::int64_t>((h >> 42) & 0x1FFFFF) + static_cast<std::int64_t>(h2 & 0x1FFFFF);
  const std::int64_t centred = sum - 2 * 0x1FFFFF;
  // The block scale is shared by all ranks (one "layer"); a small per-element shift mixes
  // magnitudes within it so the sums round differently in every association.
  const std::uint64_t block_hash = mix_in(k.shared_key, i >> 10);
  const int block_exponent = -3 - static_cast<int>(block_hash % 12);
  const int element_shift = static_cast<int>((h2 >> 60) & 3u);
  return static_cast<float>(centred) * pow2(block_exponent - element_shift - 22);
}

RV_HD float wide(const ArenaKeys& k, std::uint64_t i) {
  const std::uint64_t h = mix_in(k.rank_key, i);
  const auto exponent = static_cast<std::uint32_t>(((h >> 23) & 0xFFu) % 255u);  // 0 = subnormal
  const auto mantissa = static_cast<std::uint32_t>(h & 0x7FFFFFu);
  return float_from_bits(sign_bit(h, 63) | (exponent << 23) | mantissa);
}

RV_HD float cancel(const ArenaKeys& k, std::uint32_t rank, std::uint64_t i) {
  const std::uint64_t h = mix_in(k.rank_key, i);
  if ((h & 3u) == 0) {  // a small residue, 2^-15 … 2^-8
    const auto exponent = static_cast<std::uint32_t>(127 - 8 - static_cast<int>((h >> 2) % 8));
    return float_from_bits(sign_bit(h, 40) | (exponent << 23) |
                           static_cast<std::uint32_t>((h >> 8) & 0x7FFFFFu));
  }
  // A large value shared by all ranks, 2^16 … 2^24, its sign alternating with the rank's
  // parity and its low mantissa bits perturbed per rank: partial sums cancel to residues
  // that the next large addend rounds away differently in every association.
  const std::uint64_t s = mix_in(k.shared_key, i);
  const auto exponent = static_cast<std::uint32_t>(127 + 16 + static_cast<int>(s % 8));
  const auto mantissa = static_cast<std::uint32_t>(((s >> 8) & 0x7FFFFFu) ^ ((h >> 8) & 0xFFu));
  const std::uint32_t sign = sign_bit(s, 40) ^ (static_cast<std::uint32_t>(rank & 1u) << 31);
  return float_from_bits(sign | (exponent << 23) | mantissa);
}

RV_HD float exact(const ArenaKeys& k, std::uint64_t i) {
  // Integers in [-1000, 1000]: with W ≤ 4096 every partial sum stays below 2^24.
  const std::uint64_t h = mix_in(k.rank_key, i);
  return static_cast<float>(static_cast<std::int32_t>(h % 2001u) - 1000);
}

RV_HD float special(const ArenaKeys& k, std::uint64_t i) {
  const std::uint64_t h = mix_in(k.rank_key, i);
  const std::uint32_t sign = sign_bit(h, 40);
  const auto payload = static_cast<std::uint32_t>((h >> 8) & 0x3FFFFFu);
  const auto mantissa = static_cast<std::uint32_t>((h >> 8) & 0x7FFFFFu);
  const auto kind = static_cast<std::uint32_t>(h & 63u);
  if (kind < 4) return float_from_bits(kind < 2 ? 0u : 0x80000000u);                   // +0, −0
  if (kind < 6) return float_from_bits((kind == 4 ? 0u : 0x80000000u) | 0x7F800000u);  // ±inf
  if (kind == 6) return float_from_bits(sign | 0x7FC00000u | payload);                 // quiet NaN
  if (kind == 7) return float_from_bits(sign | 0x7F800000u | (payload ? payload : 1u));  // sNaN
  if (kind < 24) return float_from_bits(sign | (mantissa ? mantissa : 1u));  // subnormal
  if (kind < 32) {  // tiny normals: their differences land in the subnormal range
    const auto exponent = 1u + static_cast<std::uint32_t>((h >> 32) % 3u);
    return float_from_bits(sign | (exponent << 23) | mantissa);
  }
  const auto exponent = static_cast<std::uint32_t>(123 + static_cast<int>((h >> 32) % 9u));
  return float_from_bits(sign | (exponent << 23) | mantissa);
}

}  // namespace arena_v1

// The value of element i of `rank`'s arena. `keys` must come from arena_keys(seed, dist, rank).
RV_HD float arena_value_v1(const ArenaKeys& keys, Distribution dist, std::uint32_t rank,
                           std::uint64_t i) {
  switch (dist) {
    case Distribution::kNormal:
      return arena_v1::normal(keys, i);
    case Distribution::kWide:
      return arena_v1::wide(keys, i);
    case Distribution::kCancel:
      return arena_v1::cancel(keys, rank, i);
    case Distribution::kExact:
      return arena_v1::exact(keys, i);
    case Distribution::kSpecial:
      return arena_v1::special(keys, i);
  }
  return 0.0f;
}

}  // namespace rv

// The seed law: every random stream of a run is derived from one user seed through
// domain-separated, counter-based mixing, so each value is a pure function of its
// coordinates and any slice can be regenerated alone, on any device, in any order.
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace rv {

// A 64-bit finaliser with full avalanche (the "moremur" constants): a bijection, so distinct
// counters never collide.
RV_HD std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 27;
  x *= 0x3C79AC492BA7B653ull;
  x ^= x >> 33;
  x *= 0x1C69B3F74AC4AE35ull;
  x ^= x >> 27;
  return x;
}

// Combines a key with one more coordinate; the golden-ratio increment keeps
// (key, 0), (key, 1), … far apart before mixing, as in SplitMix64.
RV_HD std::uint64_t mix_in(std::uint64_t key, std::uint64_t coordinate) {
  return mix64(key ^ (coordinate * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull));
}

// Domains separate the streams: a change to one never moves another. Numbers are part of
// the generator law and never reused.
enum class SeedDomain : std::uint64_t {
  kArenaValues = 1,    // per-rank addends of a seeded arena (keyed on rank: they differ)
  kArenaShared = 2,    // per-element structure every rank shares (block scale, cancel base)
  kDeliveryOrder = 3,  // shuffled delivery orders of EmulatedWorld and loopback worlds
  kDataOrder = 4,      // a trainer's global sample order (never keyed on rank)
  kParameterInit = 5,  // a trainer's parameter initialisation (never keyed on rank)
};

class SeedLaw {
 public:
  constexpr explicit SeedLaw(std::uint64_t seed) : seed_(seed) {}
  constexpr std::uint64_t seed() const { return seed_; }

  // The key of one stream. Training randomness (data order, init) is derived with no rank
  // coordinate, so every rank draws the same stream and the world stays consistent.
  RV_HD std::uint64_t key(SeedDomain domain) const {
    return mix_in(mix64(seed_ ^ 0xA0761D6478BD642Full), static_cast<std::uint64_t>(domain));
  }
  RV_HD std::uint64_t key(SeedDomain domain, std::uint64_t a) const {
    return mix_in(key(domain), a);
  }
  RV_HD std::uint64_t key(SeedDomain domain, std::uint64_t a, std::uint64_t b) const {
    return mix_in(key(domain, a), b);
  }

 private:
  std::uint64_t seed_;
};

}  // namespace rv

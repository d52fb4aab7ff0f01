// Seeded arenas (docs/DESIGN.md §4) on the CPU: any slice of any rank's arena, regenerated alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/arena_law.h"
#include "core/dtype.h"

namespace rv {

// The generator versions this build can produce. A generator never changes silently: a
// change is a new version with new goldens, and old versions stay reproducible.
inline constexpr std::uint32_t kLatestGenerator = 1;
bool is_known_generator(std::uint32_t gen);

std::string_view to_string(Distribution dist);
std::optional<Distribution> parse_distribution(std::string_view text);
inline constexpr Distribution kAllDistributions[] = {Distribution::kNormal, Distribution::kWide,
                                                     Distribution::kCancel, Distribution::kExact,
                                                     Distribution::kSpecial};

struct ArenaSpec {
  std::uint32_t gen = kLatestGenerator;
  Distribution dist = Distribution::kNormal;
  std::uint64_t seed = 0;
  // bf16 and f16 arenas follow core/arena_law_half.h; their values are held as their exact
  // binary32 widening, so every float array below may carry any dtype.
  DType dtype = DType::kF32;
};

// Writes elements [begin, begin + count) of `rank`'s arena to out.
void generate_arena_slice(const ArenaSpec& spec, std::uint32_t rank, std::uint64_t begin,
                          std::size_t count, float* out);

// The whole arena of one rank.
std::vector<float> generate_arena(const ArenaSpec& spec, std::uint32_t rank, std::size_t n);

}  // namespace rv

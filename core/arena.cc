#include "core/arena.h"

#include "core/arena_law_half.h"
#include "core/error.h"

namespace rv {

bool is_known_generator(std::uint32_t gen) { return gen == 1; }

std::string_view to_string(Distribution dist) {
  switch (dist) {
    case Distribution::kNormal:
      return "normal";
    case Distribution::kWide:
      return "wide";
    case Distribution::kCancel:
      return "cancel";
    case Distribution::kExact:
      return "exact";
    case Distribution::kSpecial:
      return "special";
  }
  return "?";
}

std::optional<Distribution> parse_distribution(std::string_view text) {
  for (Distribution dist : kAllDistributions) {
    if (to_string(dist) == text) return dist;
  }
  return std::nullopt;
}

namespace {

template <Distribution D>
void fill(const ArenaKeys& keys, std::uint32_t rank, std::uint64_t begin, std::size_t count,
          float* out) {
  for (std::size_t j = 0; j < count; ++j) out[j] = arena_value_v1(keys, D, rank, begin + j);
}

}  // namespace

void generate_arena_slice(const ArenaSpec& spec, std::uint32_t rank, std::uint64_t begin,
                          std::size_t count, float* out) {
  if (!is_known_generator(spec.gen)) {
    throw InputError("unknown generator version " + std::to_string(spec.gen) +
                     " (this build knows generator 1)");
  }
  const ArenaKeys keys = arena_keys(spec.seed, spec.dist, rank);
  if (spec.dtype != DType::kF32) {
    for (std::size_t j = 0; j < count; ++j) {
      out[j] = arena_value_half_v1(spec.dtype, keys, spec.dist, rank, begin + j);
    }
    return;
  }
  // One instantiation per distribution keeps the switch out of the element loop.
  switch (spec.dist) {
    case Distribution::kNormal:
      return fill<Distribution::kNormal>(keys, rank, begin, count, out);
    case Distribution::kWide:
      return fill<Distribution::kWide>(keys, rank, begin, count, out);
    case Distribution::kCancel:
      return fill<Distribution::kCancel>(keys, rank, begin, count, out);
    case Distribution::kExact:
      return fill<Distribution::kExact>(keys, rank, begin, count, out);
    case Distribution::kSpecial:
      return fill<Distribution::kSpecial>(keys, rank, begin, count, out);
  }
}

std::vector<float> generate_arena(const ArenaSpec& spec, std::uint32_t rank, std::size_t n) {
  std::vector<float> arena(n);
  generate_arena_slice(spec, rank, 0, n, arena.data());
  return arena;
}

}  // namespace rv

// The shard plans of the sharded owner dataflow (docs/DESIGN.md §5): contiguous shards in rank
// order. The all-reduce's balanced plan gives the N mod W remainder one element each to the
// lowest ranks; the reduce-scatter's padded plan (docs/DESIGN.md §2.6) is FSDP's, equal shards
// of a zero-padded arena with the padding dropped. Shards may be empty in both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace rv {

struct Shard {
  std::size_t begin = 0;
  std::size_t count = 0;
  std::size_t end() const { return begin + count; }
};

// The shard owned by rank `owner` of `world` over an arena of n elements.
Shard shard_of(std::size_t n, std::uint32_t world, std::uint32_t owner);

// All W shards, in owner order; they tile [0, n) without gaps or overlap.
std::vector<Shard> shard_plan(std::size_t n, std::uint32_t world);

// The reduce-scatter's shard size when the caller names none: FSDP's ⌈n / W⌉.
std::size_t padded_shard_size(std::size_t n, std::uint32_t world);

// The reduce-scatter's plan (docs/DESIGN.md §2.6): the arena padded to W × shard_size, shard p
// = elements [p × shard_size, (p + 1) × shard_size) with the padding cut off, so a shard that
// falls partly or wholly in the padding is shorter or empty. shard_size nullopt means
// padded_shard_size(n, world). Throws InputError naming both numbers when W × shard_size < n
// (elements no shard would hold).
std::vector<Shard> padded_shard_plan(std::size_t n, std::uint32_t world,
                                     std::optional<std::size_t> shard_size = std::nullopt);

}  // namespace rv

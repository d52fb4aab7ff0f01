// The shard plan of the sharded owner dataflow (docs/DESIGN.md §5): contiguous shards, the
// N mod W remainder given one element each to the lowest ranks; shards may be empty.
#pragma once

#include <cstddef>
#include <cstdint>
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

}  // namespace rv

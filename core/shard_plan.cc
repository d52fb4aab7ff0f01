#include "core/shard_plan.h"

#include <algorithm>

#include "core/error.h"

namespace rv {

Shard shard_of(std::size_t n, std::uint32_t world, std::uint32_t owner) {
  RV_ENFORCE_GE(InputError, world, 1u, "a shard plan needs a world of at least one rank");
  RV_ENFORCE_LT(InputError, owner, world, "shard owner out of range");
  const std::size_t base = n / world;
  const std::size_t extra = n % world;
  Shard shard;
  shard.begin = owner * base + std::min<std::size_t>(owner, extra);
  shard.count = base + (owner < extra ? 1 : 0);
  return shard;
}

std::vector<Shard> shard_plan(std::size_t n, std::uint32_t world) {
  // Checked here too: with no owners the loop below would return an empty plan that
  // silently covers none of the n elements.
  RV_ENFORCE_GE(InputError, world, 1u, "a shard plan needs a world of at least one rank");
  std::vector<Shard> plan;
  plan.reserve(world);
  for (std::uint32_t owner = 0; owner < world; ++owner) plan.push_back(shard_of(n, world, owner));
  return plan;
}

}  // namespace rv

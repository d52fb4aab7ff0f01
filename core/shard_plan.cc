#include "core/shard_plan.h"

#include <algorithm>
#include <string>

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

std::size_t padded_shard_size(std::size_t n, std::uint32_t world) {
  RV_ENFORCE_GE(InputError, world, 1u, "a shard plan needs a world of at least one rank");
  return n / world + (n % world != 0 ? 1 : 0);  // ⌈n / W⌉ without overflowing n + W − 1
}

std::vector<Shard> padded_shard_plan(std::size_t n, std::uint32_t world,
                                     std::optional<std::size_t> shard_size) {
  const std::size_t size = shard_size.value_or(padded_shard_size(n, world));
  // size ≥ ⌈n / W⌉ is W × size ≥ n, asked without the product (which may overflow).
  if (size < padded_shard_size(n, world)) {
    throw InputError("reduce-scatter: a shard size of " + std::to_string(size) + " elements over " +
                     std::to_string(world) + " ranks leaves elements of an arena of " +
                     std::to_string(n) + " in no shard (the least is " +
                     std::to_string(padded_shard_size(n, world)) + ")");
  }
  std::vector<Shard> plan;
  plan.reserve(world);
  for (std::uint32_t owner = 0; owner < world; ++owner) {
    // owner × size clamped to n, without the product overflowing for a huge size.
    const std::size_t begin = size == 0 || owner > n / size ? n : std::min(n, owner * size);
    plan.push_back(Shard{begin, std::min(size, n - begin)});
  }
  return plan;
}

}  // namespace rv

#include "core/emulated_world.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "core/error.h"
#include "core/fold.h"
#include "core/seed_law.h"
#include "core/shard_plan.h"

namespace rv {

DeliveryOrders shuffled_delivery_orders(std::uint32_t world, std::uint64_t seed,
                                        std::uint64_t trial) {
  const SeedLaw law(seed);
  DeliveryOrders orders(world);
  for (std::uint32_t owner = 0; owner < world; ++owner) {
    std::vector<std::uint32_t>& order = orders[owner];
    order.resize(world);
    std::iota(order.begin(), order.end(), 0u);
    const std::uint64_t key = law.key(SeedDomain::kDeliveryOrder, trial, owner);
    for (std::uint32_t i = world; i > 1; --i) {
      const auto j = static_cast<std::uint32_t>(mix_in(key, i) % i);
      std::swap(order[i - 1], order[j]);
    }
  }
  return orders;
}

namespace {

void check_delivery_orders(const DeliveryOrders& delivery, std::uint32_t world) {
  if (delivery.empty()) return;
  RV_ENFORCE_EQ(InputError, delivery.size(), static_cast<std::size_t>(world),
                "one delivery order per owner");
  for (std::uint32_t owner = 0; owner < world; ++owner) {
    const auto& order = delivery[owner];
    RV_ENFORCE_EQ(InputError, order.size(), static_cast<std::size_t>(world),
                  "delivery order of owner", owner, "must name every rank once");
    std::vector<bool> seen(world, false);
    for (std::uint32_t source : order) {
      if (source >= world || seen[source]) {
        throw InputError("delivery order of owner " + std::to_string(owner) +
                         " is not a permutation of the ranks (bad or repeated rank " +
                         std::to_string(source) + ")");
      }
      seen[source] = true;
    }
  }
}

}  // namespace

EmulatedWorld::EmulatedWorld(std::uint32_t world) : world_(world) {
  RV_ENFORCE_GE(InputError, world, 1u, "an emulated world needs at least one rank");
}

void EmulatedWorld::all_reduce(std::vector<std::vector<float>>& arenas, Op op,
                               const DeliveryOrders& delivery) const {
  RV_ENFORCE_EQ(InputError, arenas.size(), static_cast<std::size_t>(world_), "one arena per rank");
  const std::size_t n = arenas[0].size();
  for (std::uint32_t r = 0; r < world_; ++r) {
    RV_ENFORCE_EQ(InputError, arenas[r].size(), n, "arena length of rank", r,
                  "differs from rank 0");
  }
  check_delivery_orders(delivery, world_);

  const std::vector<Shard> plan = shard_plan(n, world_);
  std::vector<std::vector<float>> reduced(world_);
  std::vector<float> stacked;
  for (std::uint32_t owner = 0; owner < world_; ++owner) {
    const Shard shard = plan[owner];
    // The owner's receive table: slot r holds the copy that came from rank r, whatever the
    // arrival order, so the fold below reads the addends in ascending rank order.
    stacked.assign(static_cast<std::size_t>(world_) * shard.count, 0.0f);
    for (std::uint32_t k = 0; k < world_; ++k) {
      const std::uint32_t source = delivery.empty() ? k : delivery[owner][k];
      if (shard.count == 0) continue;
      std::memcpy(stacked.data() + static_cast<std::size_t>(source) * shard.count,
                  arenas[source].data() + shard.begin, shard.count * sizeof(float));
    }
    reduced[owner].resize(shard.count);
    fold_stacked(stacked.data(), world_, shard.count, shard.count, op, reduced[owner].data());
  }
  // All-gather: pure copies of every reduced shard into every arena.
  for (auto& arena : arenas) {
    for (std::uint32_t owner = 0; owner < world_; ++owner) {
      std::copy(reduced[owner].begin(), reduced[owner].end(),
                arena.begin() + static_cast<std::ptrdiff_t>(plan[owner].begin));
    }
  }
}

std::vector<float> reference_fold(const std::vector<std::vector<float>>& arenas, Op op) {
  RV_ENFORCE_GE(InputError, arenas.size(), std::size_t{1}, "the reference fold needs a rank");
  const std::size_t n = arenas[0].size();
  std::vector<const float*> addends;
  for (std::size_t r = 0; r < arenas.size(); ++r) {
    RV_ENFORCE_EQ(InputError, arenas[r].size(), n, "arena length of rank", r,
                  "differs from rank 0");
    addends.push_back(arenas[r].data());
  }
  std::vector<float> out(n);
  fold_ascending(addends.data(), static_cast<std::uint32_t>(arenas.size()), n, op, out.data());
  return out;
}

}  // namespace rv

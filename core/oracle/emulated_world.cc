#include "core/oracle/emulated_world.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "core/dtype_arrays.h"
#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_reduction.h"
#include "core/exact/host_exact.h"
#include "core/fold.h"
#include "core/seed_law.h"
#include "core/shard_plan.h"

namespace rv {

std::vector<std::uint32_t> shuffled_delivery_order(std::uint32_t world, std::uint64_t seed,
                                                   std::uint64_t trial, std::uint32_t owner) {
  std::vector<std::uint32_t> order(world);
  std::iota(order.begin(), order.end(), 0u);
  const std::uint64_t key = SeedLaw(seed).key(SeedDomain::kDeliveryOrder, trial, owner);
  for (std::uint32_t i = world; i > 1; --i) {
    const auto j = static_cast<std::uint32_t>(mix_in(key, i) % i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

DeliveryOrders shuffled_delivery_orders(std::uint32_t world, std::uint64_t seed,
                                        std::uint64_t trial) {
  DeliveryOrders orders;
  for (std::uint32_t owner = 0; owner < world; ++owner) {
    orders.push_back(shuffled_delivery_order(world, seed, trial, owner));
  }
  return orders;
}

namespace {

// Owner p combines shard p of the W ranks' word buffers in its delivery order.
template <typename Combine>
void emulate_word_all_reduce(std::vector<std::vector<std::int64_t>>& words,
                             const DeliveryOrders& delivery, Combine combine) {
  const auto world = static_cast<std::uint32_t>(words.size());
  const std::vector<Shard> plan = shard_plan(words[0].size(), world);
  std::vector<std::int64_t> total;
  for (std::uint32_t owner = 0; owner < world; ++owner) {
    const Shard shard = plan[owner];
    total.assign(shard.count, 0);
    for (std::uint32_t k = 0; k < world; ++k) {
      const std::uint32_t source = delivery.empty() ? k : delivery[owner][k];
      const std::int64_t* from = words[source].data() + shard.begin;
      for (std::size_t i = 0; i < shard.count; ++i) {
        total[i] = k == 0 ? from[i] : combine(total[i], from[i]);
      }
    }
    for (auto& buffer : words) {
      std::copy(total.begin(), total.end(),
                buffer.begin() + static_cast<std::ptrdiff_t>(shard.begin));
    }
  }
}

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

// One arena per rank, all of rank 0's length, and well-formed orders; returns the length.
std::size_t check_world_input(const std::vector<std::vector<float>>& arenas, std::uint32_t world,
                              const DeliveryOrders& delivery) {
  RV_ENFORCE_EQ(InputError, arenas.size(), static_cast<std::size_t>(world), "one arena per rank");
  const std::size_t n = arenas[0].size();
  for (std::uint32_t r = 0; r < world; ++r) {
    RV_ENFORCE_EQ(InputError, arenas[r].size(), n, "arena length of rank", r,
                  "differs from rank 0");
  }
  check_delivery_orders(delivery, world);
  return n;
}

}  // namespace

EmulatedWorld::EmulatedWorld(std::uint32_t world) : world_(world) {
  RV_ENFORCE_GE(InputError, world, 1u, "an emulated world needs at least one rank");
}

void EmulatedWorld::all_reduce(std::vector<std::vector<float>>& arenas, Op op,
                               const DeliveryOrders& delivery, DType dtype) const {
  const std::size_t n = check_world_input(arenas, world_, delivery);

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
    round_to_dtype_in_place(reduced[owner].data(), shard.count, dtype);
  }
  // All-gather: pure copies of every reduced shard into every arena.
  for (auto& arena : arenas) {
    for (std::uint32_t owner = 0; owner < world_; ++owner) {
      std::copy(reduced[owner].begin(), reduced[owner].end(),
                arena.begin() + static_cast<std::ptrdiff_t>(plan[owner].begin));
    }
  }
}

void EmulatedWorld::all_reduce_exact(std::vector<std::vector<float>>& arenas, Op op,
                                     const DeliveryOrders& delivery, DType dtype) const {
  const std::size_t n = check_world_input(arenas, world_, delivery);
  // Chunks of whole window blocks bound the word buffers' memory.
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  static_assert(kChunk % exact::kBlock == 0, "chunks hold whole blocks");
  std::vector<std::vector<std::int64_t>> words(world_);
  for (std::size_t begin = 0; begin < n; begin += kChunk) {
    const std::size_t count = std::min(kChunk, n - begin);
    for (std::uint32_t r = 0; r < world_; ++r) {
      words[r].resize(exact_block_count(count) * exact::kAgreementWords);
      exact_agreement_words(arenas[r].data() + begin, count, words[r].data());
    }
    emulate_word_all_reduce(words, delivery,
                            [](std::int64_t a, std::int64_t b) { return std::max(a, b); });
    // Every rank plans from its own copy of the agreed words, as live ranks do.
    std::vector<ExactPlan> plans;
    for (std::uint32_t r = 0; r < world_; ++r) {
      plans.push_back(plan_exact_blocks(words[r].data(), count, world_));
    }
    for (std::uint32_t r = 0; r < world_; ++r) {
      words[r].resize(plans[r].words);
      exact_encode(arenas[r].data() + begin, plans[r], words[r].data());
    }
    emulate_word_all_reduce(words, delivery, [](std::int64_t a, std::int64_t b) { return a + b; });
    for (std::uint32_t r = 0; r < world_; ++r) {
      exact_round(words[r].data(), plans[r], op, arenas[r].data() + begin, dtype);
    }
  }
}

std::vector<float> EmulatedWorld::owner_table(const std::vector<std::vector<float>>& arenas,
                                              const DeliveryOrders& delivery, std::uint32_t owner,
                                              std::size_t begin, std::size_t count) const {
  std::vector<float> stacked(static_cast<std::size_t>(world_) * count, 0.0f);
  for (std::uint32_t k = 0; k < world_; ++k) {
    const std::uint32_t source = delivery.empty() ? k : delivery[owner][k];
    if (count == 0) continue;
    std::memcpy(stacked.data() + static_cast<std::size_t>(source) * count,
                arenas[source].data() + begin, count * sizeof(float));
  }
  return stacked;
}

std::vector<std::vector<float>> EmulatedWorld::scatter_to_owners(
    const std::vector<std::vector<float>>& arenas, const DeliveryOrders& delivery,
    std::optional<std::size_t> shard_size, const TableReduction& reduce_table) const {
  const std::size_t n = check_world_input(arenas, world_, delivery);
  const std::vector<Shard> plan = padded_shard_plan(n, world_, shard_size);
  std::vector<std::vector<float>> shards(world_);
  for (std::uint32_t owner = 0; owner < world_; ++owner) {
    const Shard shard = plan[owner];
    const std::vector<float> stacked =
        owner_table(arenas, delivery, owner, shard.begin, shard.count);
    shards[owner].resize(shard.count);
    reduce_table(stacked.data(), shard.count, shards[owner].data());
  }
  return shards;
}

std::vector<std::vector<float>> EmulatedWorld::reduce_scatter(
    const std::vector<std::vector<float>>& arenas, Op op, const DeliveryOrders& delivery,
    DType dtype, std::optional<std::size_t> shard_size) const {
  return scatter_to_owners(arenas, delivery, shard_size,
                           [&](const float* table, std::size_t count, float* shard) {
                             fold_stacked(table, world_, count, count, op, shard);
                             round_to_dtype_in_place(shard, count, dtype);
                           });
}

std::vector<std::vector<float>> EmulatedWorld::reduce_scatter_exact(
    const std::vector<std::vector<float>>& arenas, Op op, const DeliveryOrders& delivery,
    DType dtype, std::optional<std::size_t> shard_size) const {
  return scatter_to_owners(arenas, delivery, shard_size,
                           [&](const float* table, std::size_t count, float* shard) {
                             exact_reduce_stacked(table, world_, count, count, op, shard, dtype);
                           });
}

}  // namespace rv

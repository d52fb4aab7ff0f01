// EmulatedWorld: all W arenas in one process, reduced by the sharded owner dataflow of the
// live reducers (docs/DESIGN.md §5). Each owner receives the peers' copies of its shard in a
// caller-given delivery order into a rank-indexed stacked table, folds ascending, and the
// reduced shards are all-gathered back into every arena. Its bits are the contract.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/contract.h"
#include "core/dtype.h"

namespace rv {

// delivery[p] is the order in which owner p receives the W copies of its shard: a
// permutation of [0, W). An empty DeliveryOrders means ascending for every owner.
using DeliveryOrders = std::vector<std::vector<std::uint32_t>>;

// A seeded shuffle of the delivery order for every owner (Fisher–Yates over the seed law's
// delivery-order domain); `trial` selects one of many.
DeliveryOrders shuffled_delivery_orders(std::uint32_t world, std::uint64_t seed,
                                        std::uint64_t trial);
// Owner `owner`'s order of those: shuffled_delivery_orders(world, seed, trial)[owner].
std::vector<std::uint32_t> shuffled_delivery_order(std::uint32_t world, std::uint64_t seed,
                                                   std::uint64_t trial, std::uint32_t owner);

class EmulatedWorld {
 public:
  explicit EmulatedWorld(std::uint32_t world);
  std::uint32_t world_size() const { return world_; }

  // Reduces the W arenas in place: afterwards every arena holds the reduced values.
  // Throws InputError when the arena count or lengths or the orders are wrong. For bf16/f16
  // (values widened) each owner rounds its folded shard to the dtype before the all-gather.
  void all_reduce(std::vector<std::vector<float>>& arenas, Op op,
                  const DeliveryOrders& delivery = {}, DType dtype = DType::kF32) const;

  // The exact contract's dataflow (docs/DESIGN.md §2): every rank's agreement words and
  // digits as the live reducer makes them, combined as a library's integer all-reduce would
  // (a reduce-scatter: shard p of each word buffer is combined by owner p in delivery[p]'s
  // order), then rounded on every rank. Integer sums: no order may change a bit, and the
  // golden maker checks that none does.
  void all_reduce_exact(std::vector<std::vector<float>>& arenas, Op op,
                        const DeliveryOrders& delivery = {}, DType dtype = DType::kF32) const;

  // The reduce-scatter (docs/DESIGN.md §2.6): the owner dataflow without the all-gather, over
  // padded_shard_plan(n, W, shard_size) (nullopt: FSDP's ⌈n / W⌉). Returns the W shards,
  // shards[p] = rank p's result (the padding dropped: shorter or empty where a shard reaches
  // into it); the arenas are left as they were. Each owner receives the W copies of its shard
  // in delivery[p]'s order into a rank-indexed table and reduces it: fixed-order folds it
  // ascending and rounds to the dtype; exact (reduce_scatter_exact) takes
  // exact_reduce_stacked over the table, the law applied to the shard's own blocks, since the
  // exact result does not depend on how the arena is partitioned. Every element must equal
  // all_reduce's (all_reduce_exact's) at its index.
  std::vector<std::vector<float>> reduce_scatter(
      const std::vector<std::vector<float>>& arenas, Op op, const DeliveryOrders& delivery = {},
      DType dtype = DType::kF32, std::optional<std::size_t> shard_size = std::nullopt) const;
  std::vector<std::vector<float>> reduce_scatter_exact(
      const std::vector<std::vector<float>>& arenas, Op op, const DeliveryOrders& delivery = {},
      DType dtype = DType::kF32, std::optional<std::size_t> shard_size = std::nullopt) const;

 private:
  // Owner p's table of its shard: slot r = rank r's copy, filled in delivery[p]'s order.
  std::vector<float> owner_table(const std::vector<std::vector<float>>& arenas,
                                 const DeliveryOrders& delivery, std::uint32_t owner,
                                 std::size_t begin, std::size_t count) const;
  // The reduce-scatter's dataflow, each owner's table reduced by `reduce_table(table, count,
  // shard)` (the contract's reduction of a W × count table into `shard`).
  using TableReduction = std::function<void(const float*, std::size_t, float*)>;
  std::vector<std::vector<float>> scatter_to_owners(
      const std::vector<std::vector<float>>& arenas, const DeliveryOrders& delivery,
      std::optional<std::size_t> shard_size, const TableReduction& reduce_table) const;

  std::uint32_t world_;
};

}  // namespace rv

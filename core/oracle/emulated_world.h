// EmulatedWorld: all W arenas in one process, reduced by the sharded owner dataflow of the
// live reducers (docs/DESIGN.md §5). Each owner receives the peers' copies of its shard in a
// caller-given delivery order into a rank-indexed stacked table, folds ascending, and the
// reduced shards are all-gathered back into every arena. Its bits are the contract.
#pragma once

#include <cstdint>
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

 private:
  std::uint32_t world_;
};

}  // namespace rv

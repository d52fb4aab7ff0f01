#include "core/reducer/fixed_order_reducer.h"

#include <vector>

#include "core/shard_plan.h"

namespace rv {
namespace {

constexpr std::size_t kFloat = sizeof(float);

// Step 1: rank r's copy of shard p goes to owner p, into the owner's slot r.
ExchangePlan scatter_to_owners(const float* arena, const std::vector<Shard>& plan, std::uint32_t me,
                               float* stacked) {
  const std::size_t world = plan.size();
  const Shard mine = plan[me];
  ExchangePlan x;
  x.send = arena;
  x.recv = stacked;
  for (std::size_t p = 0; p < world; ++p) {
    x.send_offset.push_back(plan[p].begin * kFloat);
    x.send_bytes.push_back(plan[p].count * kFloat);
    x.recv_offset.push_back(p * mine.count * kFloat);
    x.recv_bytes.push_back(mine.count * kFloat);
  }
  return x;
}

// Step 3: owner me's reduced shard to every other rank; the others' shards into place.
ExchangePlan distribute_from_owners(float* arena, const std::vector<Shard>& plan,
                                    std::uint32_t me) {
  const std::size_t world = plan.size();
  const Shard mine = plan[me];
  ExchangePlan x;
  x.send = arena;
  x.recv = arena;
  // Step 1's counts, checked by the transport, say every rank agrees on every shard's size
  // (rank r sent plan_r[p] to p, which expected plan_p[p]); these counts are the same sizes
  // seen from the other side, so a second agreement round would only cost a round trip.
  x.counts_agreed = true;
  for (std::size_t p = 0; p < world; ++p) {
    const bool peer = p != me;
    x.send_offset.push_back(mine.begin * kFloat);
    x.send_bytes.push_back(peer ? mine.count * kFloat : 0);
    x.recv_offset.push_back(plan[p].begin * kFloat);
    x.recv_bytes.push_back(peer ? plan[p].count * kFloat : 0);
  }
  return x;
}

}  // namespace

FixedOrderReducer::FixedOrderReducer(Transport& transport, FoldDevice& device)
    : transport_(transport), device_(device) {}

FixedOrderReducer::~FixedOrderReducer() {
  if (stacked_ != nullptr) device_.free(stacked_);
}

float* FixedOrderReducer::stacked_scratch(std::size_t floats) {
  if (stacked_ == nullptr || stacked_capacity_ < floats) {
    if (stacked_ != nullptr) device_.free(stacked_);
    stacked_ = nullptr;  // stays null if allocate throws
    stacked_ = device_.allocate(floats);
    stacked_capacity_ = floats;
  }
  return stacked_;
}

void FixedOrderReducer::all_reduce(float* arena, std::size_t n, Op op) {
  const std::uint32_t world = transport_.world_size();
  const std::uint32_t me = transport_.rank();
  if (world == 1) {
    // One addend: the fold still applies the mean scale (×1) and the NaN rule.
    device_.fold_stacked(arena, 1, n, n, op, arena);
    device_.synchronize();
    return;
  }
  const std::vector<Shard> plan = shard_plan(n, world);
  const Shard mine = plan[me];
  float* stacked = stacked_scratch(static_cast<std::size_t>(world) * mine.count);

  // The transport and the fold may work on different queues (a GPU stream): the device is
  // synchronised at every hand-over.
  device_.synchronize();
  transport_.exchange(scatter_to_owners(arena, plan, me, stacked));
  device_.fold_stacked(stacked, world, mine.count, mine.count, op, arena + mine.begin);
  device_.synchronize();
  transport_.exchange(distribute_from_owners(arena, plan, me));
}

}  // namespace rv

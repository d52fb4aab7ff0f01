#include "core/reducer/fixed_order_reducer.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/reducer/owner_scatter.h"
#include "core/reducer/reduce_scatter_agreement.h"
#include "core/shard_plan.h"

namespace rv {
FixedOrderOptions FixedOrderOptions::for_device(const FixedOrderDevice& device) {
  FixedOrderOptions options;
  if (device.kind() == DeviceKind::kHost) {
    options.piece_table_bytes = std::size_t{16} << 20;
    options.own_slot_in_place = true;
  } else {
    options.piece_table_bytes = std::size_t{64} << 20;  // a GPU: see the header
  }
  return options;
}

FixedOrderReducer::FixedOrderReducer(Transport& transport, FixedOrderDevice& device)
    : FixedOrderReducer(transport, device, FixedOrderOptions::for_device(device)) {}

FixedOrderReducer::FixedOrderReducer(Transport& transport, FixedOrderDevice& device,
                                     const FixedOrderOptions& options)
    : transport_(transport),
      device_(device),
      options_(options),
      stacked_([&device](std::size_t n) { return device.allocate(n); },
               [&device](float* p) { device.free(p); }) {}

FixedOrderReducer::~FixedOrderReducer() = default;

void FixedOrderReducer::all_reduce(float* arena, std::size_t n, Op op, DType dtype) {
  const std::uint32_t world = transport_.world_size();
  const std::uint32_t me = transport_.rank();
  if (world == 1) {
    // One addend: the fold still applies the mean scale (×1) and the NaN rule.
    device_.fold_stacked(arena, 1, n, n, op, arena);
    device_.round_to_dtype(arena, n, dtype);
    device_.synchronize();
    return;
  }
  const std::vector<Shard> plan = shard_plan(n, world);
  std::vector<std::unique_ptr<PendingExchange>> distributing;
  fold_own_shard(
      arena, plan, arena + plan[me].begin, op, dtype,
      [&](ExchangePlan& first) {
        // Piece 0's exchange is also the length agreement: its counts and n are checked
        // across the ranks before any byte is trusted, so a rank with another n (another
        // number of pieces, other sizes) is an InputError on every rank, never a mismatched
        // transfer. Every later count follows from the agreed n and W.
        first.counts_agreed = false;
        first.has_agreed_value = true;
        first.agreed_value = static_cast<std::uint64_t>(n);
        first.agreed_value_name = "the fixed-order arena length (elements)";
      },
      // The reduced piece k leaves for the other ranks while piece k + 1 is folded.
      [&](std::size_t k, std::size_t pieces) {
        distributing.push_back(
            transport_.start_exchange(distribute_from_owners(arena, plan, me, k, pieces)));
      });
  for (auto& pending : distributing) pending->wait();
}

void FixedOrderReducer::reduce_scatter(const float* arena, std::size_t n, float* out,
                                       std::size_t out_count, Op op, DType dtype,
                                       std::optional<std::size_t> shard_size) {
  const std::vector<Shard> plan = agree_on_reduce_scatter(transport_, Contract::kFixedOrder, op,
                                                          dtype, n, shard_size, out_count);
  if (transport_.world_size() == 1) {
    // One addend, the whole arena the one shard: the fold still applies the mean scale (×1)
    // and the NaN rule, as all_reduce's world of one does.
    device_.fold_stacked(arena, 1, n, n, op, out);
    device_.round_to_dtype(out, n, dtype);
    device_.synchronize();
    return;
  }
  // Every count follows from what the ranks have just agreed: no exchange re-agrees.
  fold_own_shard(arena, plan, out, op, dtype, nullptr, nullptr);
}

void FixedOrderReducer::fold_own_shard(const float* arena, const std::vector<Shard>& plan,
                                       float* out, Op op, DType dtype,
                                       const std::function<void(ExchangePlan&)>& first_scatter,
                                       const std::function<void(std::size_t, std::size_t)>& done) {
  const std::uint32_t world = transport_.world_size();
  const std::uint32_t me = transport_.rank();
  const Shard mine = plan[me];
  const OwnerTables tables = OwnerTables::of(plan, me, options_.piece_table_bytes);
  float* scratch = stacked_.at_least(tables.scratch_floats());
  // Piece k's reduced values go to out + (its offset in the shard).
  auto out_of = [&](std::size_t k) {
    return out + (piece_of(mine, k, tables.pieces).begin - mine.begin);
  };
  std::vector<const float*> slots(world);
  OwnerScatterSteps steps;
  steps.first_scatter = first_scatter;
  steps.table_of = [&](std::size_t k) { return tables.table(scratch, k, out_of(k)); };
  steps.reduce_piece = [&](std::size_t k, float* table) {
    const Shard piece = piece_of(mine, k, tables.pieces);
    float* piece_out = out_of(k);
    if (!options_.own_slot_in_place) {
      device_.fold_stacked(table, world, tables.slot_stride, piece.count, op, piece_out);
    } else {
      for (std::uint32_t r = 0; r < world; ++r) slots[r] = table + r * tables.slot_stride;
      slots[me] = arena + piece.begin;  // the owner's own copy, read where it is
      device_.fold_slots(slots.data(), world, piece.count, op, piece_out);
    }
    device_.round_to_dtype(piece_out, piece.count, dtype);
    device_.synchronize();
  };
  if (done) steps.piece_done = [&](std::size_t k) { done(k, tables.pieces); };
  // The transport and the fold may work on different queues (a GPU stream): the device is
  // synchronised at every hand-over.
  device_.synchronize();
  scatter_to_owners_in_pieces(transport_, arena, plan, tables, options_.own_slot_in_place, steps);
}

}  // namespace rv

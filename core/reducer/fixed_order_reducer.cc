#include "core/reducer/fixed_order_reducer.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/shard_plan.h"

namespace rv {
namespace {

constexpr std::size_t kFloat = sizeof(float);

// Piece k of P of a shard: elements [begin, begin + count).
Shard piece_of(const Shard& shard, std::size_t k, std::size_t pieces) {
  const std::size_t from = shard.count * k / pieces;
  const std::size_t to = shard.count * (k + 1) / pieces;
  return Shard{shard.begin + from, to - from};
}

// Step 1, for one piece: rank r's copy of piece k of shard p goes to owner p, into the
// owner's slot r (at stacked + r × slot_stride).
// With `own_in_place`, the owner's own copy stays in its arena (nothing is sent to itself).
ExchangePlan scatter_to_owners(const float* arena, const std::vector<Shard>& plan, std::uint32_t me,
                               std::size_t k, std::size_t pieces, float* stacked,
                               std::size_t slot_stride, bool own_in_place) {
  const Shard mine = piece_of(plan[me], k, pieces);
  ExchangePlan x;
  x.send = arena;
  x.recv = stacked;
  for (std::size_t p = 0; p < plan.size(); ++p) {
    const Shard theirs = piece_of(plan[p], k, pieces);
    const bool moves = p != me || !own_in_place;
    x.send_offset.push_back(theirs.begin * kFloat);
    x.send_bytes.push_back(moves ? theirs.count * kFloat : 0);
    x.recv_offset.push_back(p * slot_stride * kFloat);
    x.recv_bytes.push_back(moves ? mine.count * kFloat : 0);
  }
  // Every count follows from n and W, which the ranks have just agreed on.
  x.counts_agreed = true;
  return x;
}

// Step 3, for one piece: owner me's reduced piece k to every other rank; the other owners'
// pieces k into place.
ExchangePlan distribute_from_owners(float* arena, const std::vector<Shard>& plan, std::uint32_t me,
                                    std::size_t k, std::size_t pieces) {
  const Shard mine = piece_of(plan[me], k, pieces);
  ExchangePlan x;
  x.send = arena;
  x.recv = arena;
  for (std::size_t p = 0; p < plan.size(); ++p) {
    const bool peer = p != me;
    const Shard theirs = piece_of(plan[p], k, pieces);
    x.send_offset.push_back(mine.begin * kFloat);
    x.send_bytes.push_back(peer ? mine.count * kFloat : 0);
    x.recv_offset.push_back(theirs.begin * kFloat);
    x.recv_bytes.push_back(peer ? theirs.count * kFloat : 0);
  }
  x.counts_agreed = true;
  return x;
}

}  // namespace

FixedOrderOptions FixedOrderOptions::for_device(const FoldDevice& device) {
  FixedOrderOptions options;
  if (device.kind() == FoldDeviceKind::kHost) {
    options.piece_table_bytes = std::size_t{16} << 20;
    options.own_slot_in_place = true;
  } else {
    options.piece_table_bytes = std::size_t{64} << 20;  // a GPU: see the header
  }
  return options;
}

FixedOrderReducer::FixedOrderReducer(Transport& transport, FoldDevice& device)
    : FixedOrderReducer(transport, device, FixedOrderOptions::for_device(device)) {}

FixedOrderReducer::FixedOrderReducer(Transport& transport, FoldDevice& device,
                                     const FixedOrderOptions& options)
    : transport_(transport), device_(device), options_(options) {}

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
  const Shard mine = plan[me];
  // Shard 0 is the largest, so every rank computes the same number of pieces.
  const std::size_t shard_bytes = plan[0].count * kFloat;
  const std::size_t table_bytes = shard_bytes * world;
  const std::size_t pieces =
      options_.piece_table_bytes == 0 || table_bytes <= options_.piece_table_bytes
          ? 1
          : (table_bytes + options_.piece_table_bytes - 1) / options_.piece_table_bytes;
  const std::size_t slot_floats = (mine.count + pieces - 1) / pieces;
  // A GPU fold takes its 16-byte vector path only when every slot and the output start at
  // one 16-byte phase: the stride is padded to whole 16-byte units, and each piece's table
  // is shifted to its output's phase (3 spare floats). The layout changes no bit.
  constexpr std::size_t kLane = 16 / kFloat;
  const std::size_t slot_stride = (slot_floats + kLane - 1) / kLane * kLane;
  const std::size_t table_floats = static_cast<std::size_t>(world) * slot_stride + kLane - 1;
  // Two tables when there are several pieces: piece k + 1 lands in one while piece k is
  // folded from the other.
  const std::size_t tables = pieces > 1 ? 2 : 1;
  float* scratch = stacked_scratch(tables * table_floats);
  auto stacked_for = [&](std::size_t k) {
    float* table = scratch + (k % tables) * table_floats;
    float* out = arena + piece_of(mine, k, pieces).begin;
    const std::size_t table_phase = (reinterpret_cast<std::uintptr_t>(table) / kFloat) % kLane;
    const std::size_t out_phase = (reinterpret_cast<std::uintptr_t>(out) / kFloat) % kLane;
    return table + (out_phase + kLane - table_phase) % kLane;
  };
  auto scatter = [&](std::size_t k) {
    return scatter_to_owners(arena, plan, me, k, pieces, stacked_for(k), slot_stride,
                             options_.own_slot_in_place);
  };
  std::vector<const float*> slots(world);
  auto fold = [&](std::size_t k) {
    const Shard piece = piece_of(mine, k, pieces);
    float* out = arena + piece.begin;
    if (!options_.own_slot_in_place) {
      device_.fold_stacked(stacked_for(k), world, slot_stride, piece.count, op, out);
    } else {
      for (std::uint32_t r = 0; r < world; ++r) slots[r] = stacked_for(k) + r * slot_stride;
      slots[me] = out;
      device_.fold_slots(slots.data(), world, piece.count, op, out);
    }
    device_.round_to_dtype(out, piece.count, dtype);
  };

  // The transport and the fold may work on different queues (a GPU stream): the device is
  // synchronised at every hand-over.
  device_.synchronize();
  // Piece 0's exchange is also the length agreement: its counts and n are checked across
  // the ranks before any byte is trusted, so a rank with another n (another number of
  // pieces, other sizes) is an InputError on every rank, never a mismatched transfer. Every
  // later count follows from the agreed n and W.
  ExchangePlan first = scatter(0);
  first.counts_agreed = false;
  first.has_agreed_value = true;
  first.agreed_value = static_cast<std::uint64_t>(n);
  first.agreed_value_name = "the fixed-order arena length (elements)";
  transport_.exchange(first);
  // The pipeline: the copies of piece k + 1 arrive while piece k is folded, and the reduced
  // piece k leaves for the other ranks while piece k + 1 is folded.
  std::vector<std::unique_ptr<PendingExchange>> distributing;
  for (std::size_t k = 0; k < pieces; ++k) {
    std::unique_ptr<PendingExchange> next;
    if (k + 1 < pieces) next = transport_.start_exchange(scatter(k + 1));
    fold(k);
    device_.synchronize();
    distributing.push_back(
        transport_.start_exchange(distribute_from_owners(arena, plan, me, k, pieces)));
    if (next) next->wait();
  }
  for (auto& pending : distributing) pending->wait();
}

}  // namespace rv

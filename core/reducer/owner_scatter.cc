#include "core/reducer/owner_scatter.h"

#include <memory>

namespace rv {
namespace {

constexpr std::size_t kFloat = sizeof(float);
constexpr std::size_t kLane = 16 / kFloat;  // floats per 16-byte unit

}  // namespace

Shard piece_of(const Shard& shard, std::size_t k, std::size_t pieces) {
  const std::size_t from = shard.count * k / pieces;
  const std::size_t to = shard.count * (k + 1) / pieces;
  return Shard{shard.begin + from, to - from};
}

OwnerTables OwnerTables::of(const std::vector<Shard>& plan, std::uint32_t me,
                            std::size_t piece_table_bytes) {
  const auto world = static_cast<std::size_t>(plan.size());
  OwnerTables t;
  const std::size_t table_bytes = plan[0].count * kFloat * world;
  t.pieces = piece_table_bytes == 0 || table_bytes <= piece_table_bytes
                 ? 1
                 : (table_bytes + piece_table_bytes - 1) / piece_table_bytes;
  const std::size_t slot_floats = (plan[me].count + t.pieces - 1) / t.pieces;
  t.slot_stride = (slot_floats + kLane - 1) / kLane * kLane;
  t.table_floats = world * t.slot_stride + kLane - 1;
  t.tables = t.pieces > 1 ? 2 : 1;
  return t;
}

float* OwnerTables::table(float* scratch, std::size_t k, const float* out) const {
  float* base = scratch + (k % tables) * table_floats;
  const std::size_t table_phase = (reinterpret_cast<std::uintptr_t>(base) / kFloat) % kLane;
  const std::size_t out_phase = (reinterpret_cast<std::uintptr_t>(out) / kFloat) % kLane;
  return base + (out_phase + kLane - table_phase) % kLane;
}

ExchangePlan scatter_to_owners(const float* arena, const std::vector<Shard>& plan, std::uint32_t me,
                               std::size_t k, const OwnerTables& tables, float* stacked,
                               bool own_in_place) {
  const Shard mine = piece_of(plan[me], k, tables.pieces);
  ExchangePlan x;
  x.send = arena;
  x.recv = stacked;
  for (std::size_t p = 0; p < plan.size(); ++p) {
    const Shard theirs = piece_of(plan[p], k, tables.pieces);
    const bool moves = p != me || !own_in_place;
    x.send_offset.push_back(theirs.begin * kFloat);
    x.send_bytes.push_back(moves ? theirs.count * kFloat : 0);
    x.recv_offset.push_back(p * tables.slot_stride * kFloat);
    x.recv_bytes.push_back(moves ? mine.count * kFloat : 0);
  }
  x.counts_agreed = true;
  return x;
}

void scatter_to_owners_in_pieces(Transport& transport, const float* arena,
                                 const std::vector<Shard>& plan, const OwnerTables& tables,
                                 bool own_in_place, const OwnerScatterSteps& steps) {
  const std::uint32_t me = transport.rank();
  auto scatter = [&](std::size_t k) {
    return scatter_to_owners(arena, plan, me, k, tables, steps.table_of(k), own_in_place);
  };
  ExchangePlan first = scatter(0);
  if (steps.first_scatter) steps.first_scatter(first);
  transport.exchange(first);
  // The copies of piece k + 1 arrive while piece k is reduced.
  for (std::size_t k = 0; k < tables.pieces; ++k) {
    std::unique_ptr<PendingExchange> next;
    if (k + 1 < tables.pieces) next = transport.start_exchange(scatter(k + 1));
    steps.reduce_piece(k, steps.table_of(k));
    if (steps.piece_done) steps.piece_done(k);
    if (next) next->wait();
  }
}

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

}  // namespace rv

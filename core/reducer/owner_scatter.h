// The owner dataflow (docs/DESIGN.md §5.3), shared by both contracts' all-reduces and
// reduce-scatters (§2.6): every rank sends its copy of shard p to owner p,
// piece by piece, into slot r of the owner's stacked table (slot r = the copy from rank r,
// whatever order they arrive in), and the owner reduces each piece's table as soon as it has
// landed, while the copies of the next piece arrive (Transport::start_exchange). What the
// owner does with a table (the fold, the exact reduction) is the caller's; the all-reduce then
// sends each reduced piece back out (distribute_from_owners). Only bytes move here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/shard_plan.h"
#include "core/transport/transport.h"

namespace rv {

// Piece k of `pieces` of a shard: elements [begin, begin + count), the pieces as even as
// integer division makes them.
Shard piece_of(const Shard& shard, std::size_t k, std::size_t pieces);

// How one owner's shard is cut into pieces and where their stacked tables sit in the scratch.
struct OwnerTables {
  std::size_t pieces = 1;
  // Floats between slots: a piece's count rounded up to whole 16-byte units, so a GPU fold
  // over slots at one phase takes its vector path (the layout changes no bit).
  std::size_t slot_stride = 0;
  // One table of W slots, with room (3 floats) to be shifted to its output's 16-byte phase.
  std::size_t table_floats = 0;
  // Two tables when there are several pieces: piece k + 1 lands in one while piece k is
  // reduced from the other.
  std::size_t tables = 1;
  std::size_t scratch_floats() const { return tables * table_floats; }

  // The layout over `plan` (every rank's shard, shard 0 the largest, as in both shard
  // plans, so every rank computes the same number of pieces): each piece's table at most
  // piece_table_bytes (0 = the whole shard in one piece).
  static OwnerTables of(const std::vector<Shard>& plan, std::uint32_t me,
                        std::size_t piece_table_bytes);

  // Piece k's table in `scratch` (scratch_floats() floats), shifted to the 16-byte phase of
  // `out`, where the reduced piece will be written.
  float* table(float* scratch, std::size_t k, const float* out) const;
};

// Rank me's side of piece k's scatter: its copy of piece k of every shard p to owner p, into
// the owner's slot me at stacked + me × slot_stride. With own_in_place the owner's own copy
// is not sent (it is read where it is, in the arena). Every count follows from n, W and the
// shard plan, so counts_agreed is set; the caller unsets it for an exchange that is also the
// ranks' agreement.
ExchangePlan scatter_to_owners(const float* arena, const std::vector<Shard>& plan, std::uint32_t me,
                               std::size_t k, const OwnerTables& tables, float* stacked,
                               bool own_in_place);

// The pipeline over the pieces of rank me's shard (me = transport.rank()):
// - table_of(k): where piece k's table is (OwnerTables::table over the caller's scratch);
// - first_scatter(x), if given, adjusts piece 0's exchange before it runs (the fixed-order
//   all-reduce makes it the ranks' length agreement); it runs at once, before any reduction;
// - then for each piece k: piece k + 1's exchange is started, reduce_piece(k, table_of(k))
//   reduces the landed table, piece_done(k) runs if given (the all-reduce starts sending
//   the reduced piece), and piece k + 1's exchange is waited for.
struct OwnerScatterSteps {
  std::function<void(ExchangePlan& first)> first_scatter;
  std::function<float*(std::size_t k)> table_of;
  std::function<void(std::size_t k, float* table)> reduce_piece;
  std::function<void(std::size_t k)> piece_done;
};
void scatter_to_owners_in_pieces(Transport& transport, const float* arena,
                                 const std::vector<Shard>& plan, const OwnerTables& tables,
                                 bool own_in_place, const OwnerScatterSteps& steps);

// The all-reduce's second half, for one piece: owner me's reduced piece k (in place in its
// arena) to every other rank, and every other owner's reduced piece k into its place in
// this rank's arena. Counts follow from the plan (counts_agreed).
ExchangePlan distribute_from_owners(float* arena, const std::vector<Shard>& plan, std::uint32_t me,
                                    std::size_t k, std::size_t pieces);

}  // namespace rv

// The fixed-order reducer (docs/DESIGN.md §5): the sharded owner dataflow of EmulatedWorld over a
// live Transport. Every rank sends its copy of shard p to owner p; the owner receives the
// copies into a rank-indexed stacked buffer (slot r = the copy from rank r, whatever order
// they arrive in), folds them ascending with FixedOrderDevice::fold_stacked (the reference's fold
// code), writes its reduced shard into its arena, and then every owner's reduced shard is
// sent to every other rank. Shards move in pieces, pipelined: the copies of piece k + 1 arrive
// (Transport::start_exchange) while piece k is folded, and the reduced piece k leaves while
// piece k + 1 is folded. Only bytes move between ranks; every float addition happens in
// the fold, so the bits depend on the addends and W alone.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "core/contract.h"
#include "core/dtype.h"
#include "core/reducer/fixed_order_device.h"
#include "core/reducer/growing_scratch.h"
#include "core/shard_plan.h"
#include "core/transport/transport.h"

namespace rv {

struct FixedOrderOptions {
  // The owners receive and fold their shards in pieces, one piece after the other, each
  // piece's stacked table (W slots) at most this many bytes, so each fold reads copies the
  // socket has just written, still in cache. 0 = the whole shard at once. The fold is
  // elementwise, so the pieces change no bit.
  std::size_t piece_table_bytes = 0;

  // The owner folds its own copy where it is, in its arena (FixedOrderDevice::fold_slots, the
  // output aliasing that slot), instead of first copying it into its table: one pass over
  // a W-th of the arena saved (a sixth of the owner's memory traffic at W = 2). The host
  // fold does; a stacked-only device (the GPU kernel) does not.
  bool own_slot_in_place = false;

  // 16 MiB tables for the host fold, pipelined two at a time: the only table size of 2, 4, 8
  // and 16 MiB that kept bench_gloo at or under Gloo's ring at every W and size swept
  // (docs/results.md, "Decisions behind the code"); smaller pieces pay more per-round
  // wake-ups than their finer overlap saves. 64 MiB tables on a GPU: its fold has no cache
  // effect to chase, but pieces let it run under the transfers
  // (NcclTransport::start_exchange) and bound the scratch at two tables instead of a copy of
  // the whole arena; 64 MiB keeps every message large (64 MiB / W per peer: 8 MiB at W = 8,
  // where NCCL's point-to-point bandwidth has levelled off) and the pieces few (16 for a
  // 1 GiB arena), since each costs one more grouped launch and wait.
  static FixedOrderOptions for_device(const FixedOrderDevice& device);
};

class FixedOrderReducer {
 public:
  // The stacked scratch is allocated on `device` at the first call and reused (grown when a
  // later call needs more). Both references must outlive the reducer.
  FixedOrderReducer(Transport& transport, FixedOrderDevice& device);
  FixedOrderReducer(Transport& transport, FixedOrderDevice& device,
                    const FixedOrderOptions& options);
  ~FixedOrderReducer();
  FixedOrderReducer(const FixedOrderReducer&) = delete;
  FixedOrderReducer& operator=(const FixedOrderReducer&) = delete;

  // In place over the n floats of `arena` (in the device's memory); afterwards every rank
  // holds identical bits. Collective: every rank calls it with the same op. The ranks agree
  // on n in the first exchange (no round of its own): a rank with another length is an
  // InputError on every rank, naming who has what. Uneven and empty shards (n < W, n = 0) work.
  // bf16/f16 (docs/DESIGN.md §2.5): the arena holds the dtype's values widened; each owner
  // rounds its folded shard to the dtype before the shards go back, so every rank holds
  // the dtype's values (widened) afterwards. The wire carries the widened 4 bytes.
  void all_reduce(float* arena, std::size_t n, Op op, DType dtype = DType::kF32);

  // The reduce-scatter (docs/DESIGN.md §2.6): the first half of all_reduce, without the
  // distribution. Rank p receives its shard of padded_shard_plan(n, W, shard_size) (nullopt:
  // FSDP's ⌈n / W⌉) in `out`, which holds exactly that shard's out_count elements (fewer than
  // the shard size, or none, where the shard reaches into the padding); every element has the
  // bits all_reduce gives at that index. `arena` is read only; `out` (the device's memory) may
  // be the shard's own place in it, or memory apart from it. Each rank sends (W − 1)/W of
  // its arena and folds one shard. Collective: the ranks first agree on op, dtype, n, the
  // shard size and every output's length (agree_on_reduce_scatter), so a disagreement or a
  // wrong output length is an InputError on every rank naming the numbers.
  void reduce_scatter(const float* arena, std::size_t n, float* out, std::size_t out_count, Op op,
                      DType dtype = DType::kF32,
                      std::optional<std::size_t> shard_size = std::nullopt);

 private:
  // The owner dataflow's first half over `plan` (owner_scatter.h): this rank's shard folded,
  // rounded to dtype, into out (piece by piece). first_scatter may adjust piece 0's exchange;
  // done(k, pieces), if given, runs after piece k is folded.
  void fold_own_shard(const float* arena, const std::vector<Shard>& plan, float* out, Op op,
                      DType dtype, const std::function<void(ExchangePlan&)>& first_scatter,
                      const std::function<void(std::size_t, std::size_t)>& done);

  Transport& transport_;
  FixedOrderDevice& device_;
  FixedOrderOptions options_;
  GrowingScratch<float> stacked_;  // the owners' stacked tables, kept across calls
};

}  // namespace rv

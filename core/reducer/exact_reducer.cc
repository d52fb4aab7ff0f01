#include "core/reducer/exact_reducer.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/reducer/agreement.h"
#include "core/reducer/owner_scatter.h"
#include "core/reducer/reduce_scatter_agreement.h"
#include "core/shard_plan.h"

namespace rv {

ExactOptions ExactOptions::for_device(const ExactDevice& device) {
  ExactOptions options;
  options.dataflow =
      device.kind() == DeviceKind::kHost ? ExactDataflow::kOwners : ExactDataflow::kDigits;
  // 16 Mi elements on every device: scratch bounded to 1 GiB even where every element needs
  // 8 words (wide or special data), and large messages for the library. A GPU wants them;
  // so does the host: smaller pieces were slower over Gloo (docs/results.md, "Decisions
  // behind the code"). Every piece pays the ring's 2(W − 1) steps, and W rank threads
  // sharing the cores wait for each other at every step; the digits leaving the cache
  // between the encode and the round cost less than that.
  options.piece_elements = std::size_t{1} << 24;
  options.scatter_table_bytes = std::size_t{16} << 20;
  return options;
}

ExactReducer::ExactReducer(Transport& transport, ExactDevice& device)
    : ExactReducer(transport, device, ExactOptions::for_device(device)) {}

ExactReducer::ExactReducer(Transport& transport, ExactDevice& device, const ExactOptions& options)
    : transport_(transport),
      device_(device),
      options_(options),
      words_([&device](std::size_t n) { return device.allocate_words(n); },
             [&device](std::int64_t* p) { device.free_words(p); }),
      values_([&device](std::size_t n) { return device.allocate_values(n); },
              [&device](float* p) { device.free_values(p); }) {
  RV_ENFORCE_EQ(InputError, options.piece_elements % exact::kBlock, std::size_t{0},
                "exact reducer: pieces must hold whole blocks of", exact::kBlock, "elements");
  RV_ENFORCE_LE(InputError, transport.world_size(), exact::kMaxWorld,
                "exact reducer: the encoding supports worlds up to 2^20 ranks");
}

ExactReducer::~ExactReducer() = default;

void ExactReducer::all_reduce(float* arena, std::size_t n, Op op, DType dtype) {
  // Every size below follows from n and W (and the agreed words), so once the ranks agree on
  // n they cannot post different sizes.
  agree_across_ranks(transport_, "exact all_reduce of n=" + std::to_string(n) + " values");
  traffic_ = ExactTraffic{};
  traffic_.elements = n;
  if (n == 0) return;
  // A world of one has nothing to move: the digits' path rounds in place.
  if (options_.dataflow == ExactDataflow::kOwners && transport_.world_size() > 1) {
    all_reduce_through_owners(arena, n, op, dtype);
  } else {
    all_reduce_through_digits(arena, n, op, dtype);
  }
}

void ExactReducer::all_reduce_through_owners(float* arena, std::size_t n, Op op, DType dtype) {
  const std::uint32_t world = transport_.world_size();
  const std::uint32_t me = transport_.rank();
  // The fixed-order all-reduce's shards (shard_plan), so the two contracts move the same
  // bytes; only what an owner does with its table differs. The results overwrite the owner's
  // own copy in the arena, and the reduced piece k leaves for the other ranks while piece
  // k + 1 is reduced.
  const std::vector<Shard> plan = shard_plan(n, world);
  std::vector<std::unique_ptr<PendingExchange>> distributing;
  reduce_own_shard(arena, plan, arena + plan[me].begin, op, dtype,
                   [&](std::size_t k, std::size_t pieces) {
                     distributing.push_back(transport_.start_exchange(
                         distribute_from_owners(arena, plan, me, k, pieces)));
                   });
  for (auto& pending : distributing) pending->wait();
  traffic_.sent_floats = (n - plan[me].count) + plan[me].count * (world - 1);
}

void ExactReducer::all_reduce_through_digits(float* arena, std::size_t n, Op op, DType dtype) {
  const std::uint32_t world = transport_.world_size();

  // One max round agrees every block's window for the whole arena.
  const std::size_t agreement_words = exact_block_count(n) * exact::kAgreementWords;
  std::int64_t* words = words_.at_least(agreement_words);
  device_.agreement_words(arena, n, words);
  device_.synchronize();
  // n is agreed, so every rank passes the same count: the transport need not check it.
  transport_.all_reduce_int64_counts_agreed(words, agreement_words, IntReduction::kMax);
  agreed_.resize(agreement_words);
  device_.download_words(agreed_.data(), words, agreement_words);
  traffic_.agreement_words = agreement_words;

  const std::size_t piece = options_.piece_elements == 0 ? n : options_.piece_elements;
  for (std::size_t begin = 0; begin < n; begin += piece) {
    const std::size_t count = std::min(piece, n - begin);
    const std::size_t first_block = begin / exact::kBlock;
    const ExactPlan plan =
        plan_exact_blocks(agreed_.data() + first_block * exact::kAgreementWords, count, world);
    std::int64_t* digits = words_.at_least(plan.words);
    device_.encode(arena + begin, plan, digits);
    device_.synchronize();
    // plan.words follows from n and the agreed words, which the max all-reduce gave every
    // rank alike (plan_exact_blocks refuses words no rank could have sent).
    transport_.all_reduce_int64_counts_agreed(digits, plan.words, IntReduction::kSum);
    device_.round(digits, plan, op, arena + begin, dtype);
    device_.synchronize();
    traffic_.sum_words += plan.words;
  }
}

void ExactReducer::reduce_scatter(const float* arena, std::size_t n, float* out,
                                  std::size_t out_count, Op op, DType dtype,
                                  std::optional<std::size_t> shard_size) {
  const std::vector<Shard> plan =
      agree_on_reduce_scatter(transport_, Contract::kExact, op, dtype, n, shard_size, out_count);
  if (transport_.world_size() == 1) {
    device_.reduce_stacked(arena, 1, n, n, op, out, dtype);
    device_.synchronize();
    return;
  }
  // Every count follows from what the ranks have just agreed: no exchange re-agrees.
  reduce_own_shard(arena, plan, out, op, dtype, nullptr);
}

void ExactReducer::reduce_own_shard(const float* arena, const std::vector<Shard>& plan,
                                    float* out, Op op, DType dtype,
                                    const std::function<void(std::size_t, std::size_t)>& done) {
  const std::uint32_t world = transport_.world_size();
  const std::uint32_t me = transport_.rank();
  const Shard mine = plan[me];
  const OwnerTables tables = OwnerTables::of(plan, me, options_.scatter_table_bytes);
  float* scratch = values_.at_least(tables.scratch_floats());
  auto out_of = [&](std::size_t k) {
    return out + (piece_of(mine, k, tables.pieces).begin - mine.begin);
  };
  OwnerScatterSteps steps;
  steps.table_of = [&](std::size_t k) { return tables.table(scratch, k, out_of(k)); };
  // The stacked reduction reads whole slots, the owner's own included: its copy comes
  // through the exchange (a local copy), not from the arena.
  steps.reduce_piece = [&](std::size_t k, float* table) {
    const Shard piece = piece_of(mine, k, tables.pieces);
    device_.reduce_stacked(table, world, tables.slot_stride, piece.count, op, out_of(k), dtype);
    device_.synchronize();
  };
  if (done) steps.piece_done = [&](std::size_t k) { done(k, tables.pieces); };
  device_.synchronize();
  scatter_to_owners_in_pieces(transport_, arena, plan, tables, /*own_in_place=*/false, steps);
}

}  // namespace rv

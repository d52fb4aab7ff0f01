#include "verify/live/loopback_ranks.h"

#include <string>

#include "core/cuda/exact/cuda_exact_device.h"
#include "core/cuda/fixed_order/cuda_fixed_order_device.h"
#include "core/error.h"
#include "core/reducer/fixed_order_reducer.h"
#include "verify/live/rank_cases.h"

namespace rv::cuda_loopback {
namespace {

RankReducerOptions reducer_options(const FixedOrderDevice& device,
                                   const LoopbackRanksOptions& options) {
  RankReducerOptions reducers;
  if (options.piece_table_bytes != 0) {
    FixedOrderOptions fixed = FixedOrderOptions::for_device(device);
    fixed.piece_table_bytes = options.piece_table_bytes;
    reducers.fixed_order = fixed;
  }
  return reducers;
}

// A peer's "gone" or a deadline follows from another rank's failure: reported only when no
// rank failed of its own accord.
bool follows_from_a_peer(const std::exception_ptr& error) {
  if (in_process::is_error<DeadlineExceeded>(error)) return true;
  return in_process::is_error<RuntimeFailure>(error) &&
         in_process::error_text(error).find(" gone (transport closed)") != std::string::npos;
}

}  // namespace

struct LoopbackRanks::Rank {
  Rank(CudaLoopbackWorld& world, std::uint32_t rank, const LoopbackRanksOptions& options)
      : fixed_order_device(options.device),
        exact(fixed_order_device),
        transport(world.connect(rank, fixed_order_device)),
        reducers(*transport, fixed_order_device, &exact,
                 reducer_options(fixed_order_device, options)) {}

  CudaFixedOrderDevice fixed_order_device;
  CudaExactDevice exact;
  std::unique_ptr<Transport> transport;
  RankReducers reducers;  // run's per-rank reducers, here over the loopback transport
};

LoopbackRanks::LoopbackRanks(std::uint32_t world, const LoopbackRanksOptions& options)
    : world_(world, options.device, options.timeout, options.delivery_seed),
      options_(options),
      ranks_(world),
      threads_(world) {
  run([&](std::uint32_t rank) { ranks_[rank] = std::make_unique<Rank>(world_, rank, options_); });
}

LoopbackRanks::~LoopbackRanks() = default;

void LoopbackRanks::run(const std::function<void(std::uint32_t rank)>& step) {
  if (broken_) {
    throw RuntimeFailure("cuda-loopback world of " + std::to_string(world()) +
                         " ranks: unusable after a rank failed");
  }
  const in_process::StepOutcome outcome = threads_.run([&](std::uint32_t rank) {
    try {
      step(rank);
    } catch (...) {
      world_.leave(rank);
      throw;
    }
  });
  std::exception_ptr first, root;
  for (const in_process::RankOutcome& r : outcome.ranks) {
    if (!r.error) continue;
    if (!first) first = r.error;
    if (!root && !follows_from_a_peer(r.error)) root = r.error;
  }
  if (!first) return;
  broken_ = true;
  std::rethrow_exception(root ? root : first);
}

std::vector<float> LoopbackRanks::reduce(std::uint32_t rank, const std::vector<float>& input,
                                         Contract contract, Op op, DType dtype, Collective coll) {
  Rank& me = *ranks_.at(rank);
  if (contract == Contract::kLibrarySum) {
    throw InputError("cuda-loopback has no library sum (one process)");
  }
  if (coll == Collective::kReduceScatter) {
    return me.reducers.reduce_scatter_shard(input, contract, op, dtype);
  }
  return me.reducers.reduce_once(input, contract, op, dtype);
}

std::vector<std::vector<float>> LoopbackRanks::all_reduce(
    const std::vector<std::vector<float>>& arenas, Contract contract, Op op, DType dtype) {
  RV_ENFORCE_EQ(InputError, arenas.size(), static_cast<std::size_t>(world()),
                "cuda-loopback: one arena per rank");
  std::vector<std::vector<float>> reduced(world());
  run([&](std::uint32_t rank) { reduced[rank] = reduce(rank, arenas[rank], contract, op, dtype);
  });
  return reduced;
}

}  // namespace rv::cuda_loopback

// The W logical ranks of a one-GPU loopback world (cuda_loopback_world.h), as rank threads
// (core/transport/in_process/rank_threads.h) that stay up between reductions, each with its
// own CudaFixedOrderDevice (its own stream), CudaExactDevice, loopback transport and `run`'s
// per-rank reducers over them (RankReducers, rank_cases.h): the one dataflow of each
// contract, on one GPU. `run --transport cuda-loopback` and the GPU tests reduce cases on it.
// No CUDA types here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/contract.h"
#include "core/dtype.h"
#include "core/transport/cuda_loopback/cuda_loopback_world.h"
#include "core/transport/in_process/rank_threads.h"

namespace rv::cuda_loopback {

struct LoopbackRanksOptions {
  int device = 0;
  std::chrono::milliseconds timeout{60000};  // every wait of the world
  std::uint64_t delivery_seed = 0;           // the exchanges' shuffled delivery orders
  // The fixed-order reducer's piece tables; 0: its default for a GPU
  // (FixedOrderOptions::for_device). Smaller tables cut a shard into more pieces.
  std::size_t piece_table_bytes = 0;
};

class LoopbackRanks {
 public:
  // Starts the rank threads and makes every rank's devices, transport and reducers on them.
  // Throws RuntimeFailure when the GPU cannot be used.
  explicit LoopbackRanks(std::uint32_t world, const LoopbackRanksOptions& options = {});
  ~LoopbackRanks();
  LoopbackRanks(const LoopbackRanks&) = delete;
  LoopbackRanks& operator=(const LoopbackRanks&) = delete;

  std::uint32_t world() const { return threads_.world(); }

  // Runs step(rank) on every rank thread at once and waits for all of them. When a rank
  // throws, it leaves the world (its peers stop waiting for it), and run rethrows one rank's
  // error, a root cause before a peer's "gone"; the ranks are unusable afterwards (a later
  // run throws RuntimeFailure).
  void run(const std::function<void(std::uint32_t rank)>& step);

  // Collective, inside a step on every rank: rank `rank` reduces its arena `input` under
  // `contract` (fixed-order or exact; library-sum is an InputError) with the real reducer
  // over the loopback transport, and returns its reduced arena. For bf16/f16 the arena holds
  // the dtype's values widened and the result is rounded to the dtype, widened
  // (docs/DESIGN.md §2.5). A reduce-scatter (docs/DESIGN.md §2.6) returns the rank's shard
  // of FSDP's padded plan only.
  std::vector<float> reduce(std::uint32_t rank, const std::vector<float>& input, Contract contract,
                            Op op, DType dtype = DType::kF32,
                            Collective coll = Collective::kAllReduce);

  // One reduction of `arenas` (one per rank): every rank's reduced arena.
  std::vector<std::vector<float>> all_reduce(const std::vector<std::vector<float>>& arenas,
                                             Contract contract, Op op, DType dtype = DType::kF32);

 private:
  struct Rank;

  CudaLoopbackWorld world_;
  const LoopbackRanksOptions options_;
  std::vector<std::unique_ptr<Rank>> ranks_;  // before threads_: the threads stop first
  in_process::RankThreads threads_;
  bool broken_ = false;
};

}  // namespace rv::cuda_loopback

// The per-rank pipeline of `run`, apart from how the rank connected: agree with the peers on
// each case, generate this rank's arena, reduce it under every contract (--iters times), and
// digest it; then rank 0's verdicts over every rank's digests. The rank worker runs it over
// the link connect_rank_transport made; tests/mutation runs the same code over a
// fault-injecting transport, so what the matrix there proves is what `run` does.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/reducer/exact_device.h"
#include "core/reducer/exact_reducer.h"
#include "core/reducer/fixed_order_reducer.h"
#include "core/reducer/fixed_order_device.h"
#include "core/reducer/growing_scratch.h"
#include "core/transport/transport.h"
#include "verify/live/run_plan.h"
#include "verify/live/run_results.h"

namespace rv {

// The reducers' options where a caller sets them (nullopt: for_device's).
struct RankReducerOptions {
  std::optional<FixedOrderOptions> fixed_order;  // the loopback tests' smaller piece tables
  std::optional<ExactOptions> exact;             // the mutation matrix's dataflow
};

// One rank's reducers over one transport and its devices, kept across cases (their scratch
// and the arena buffer are reused). The references must outlive it. `run`'s ranks and the
// one-GPU loopback world's (loopback_ranks.h) both reduce through it.
class RankReducers {
 public:
  // `exact_device` may be null: exact cases are then an InputError naming the transport.
  RankReducers(Transport& transport, FixedOrderDevice& device, ExactDevice* exact_device,
               const RankReducerOptions& options = {});
  ~RankReducers();
  RankReducers(const RankReducers&) = delete;
  RankReducers& operator=(const RankReducers&) = delete;

  Transport& transport() const { return transport_; }
  FixedOrderDevice& device() const { return device_; }

  // Reduces `arena` once under `contract` (collective) and returns the result on the host.
  // bf16/f16: `arena` holds the dtype's values widened, and so does the result.
  // A reduce-scatter (docs/DESIGN.md §2.6) leaves this rank only its shard; for the case's
  // digest, every rank's shard is then gathered (an all-gather apart from the collective
  // under test) and the result is the shards in rank order, the padding dropped.
  std::vector<float> reduce_once(const std::vector<float>& arena, Contract contract, Op op,
                                 DType dtype = DType::kF32,
                                 Collective coll = Collective::kAllReduce);
  // The reduce-scatter alone: this rank's shard of FSDP's padded plan (its out_count
  // elements, the padding dropped), with no gather after it.
  std::vector<float> reduce_scatter_shard(const std::vector<float>& arena, Contract contract,
                                          Op op, DType dtype = DType::kF32);
  // The device buffer a case of n elements needs: its arena, and a reduce-scatter's shard.
  static std::size_t buffer_floats(std::size_t n, std::uint32_t world);
  // Grows the device buffer to `n` floats now, so a run allocates it once.
  void reserve(std::size_t n);

 private:
  ExactReducer& exact_reducer();
  std::vector<float> reduce_scatter_once(const std::vector<float>& arena, Contract contract,
                                         Op op, DType dtype);

  Transport& transport_;
  FixedOrderDevice& device_;
  ExactDevice* exact_device_;
  RankReducerOptions options_;
  FixedOrderReducer fixed_order_;
  std::unique_ptr<ExactReducer> exact_;  // made at the first exact case
  GrowingScratch<float> buffer_;          // the case's arena (and shard), kept across cases
};

// This rank's records of `cases`: per case, after agreeing on it with every peer, one record
// per contract of `options` (in that order), each with a digest per iteration. A rank whose
// result differs from the contract's golden names its first differing element (the golden's
// reduced arena re-derived by stream_reference_reduction); rank 0 of a library-sum case that
// differs from fixed-order counts the differing elements and holds it to the association
// bound (library_sum_check.h).
// Precondition: the ranks have agreed on `cases` as a whole (the rank worker's selection
// record), so a case record that differs is a RuntimeFailure (the transport changed it), not
// an InputError. Every error names the case and contract it stopped in.
RankReport run_rank_cases(const RunOptions& options, std::uint32_t rank, std::uint32_t world,
                          RankReducers& reducers, const std::vector<PlannedCase>& cases);

// Rank 0's verdicts: one per case and contract of `options`, from every rank's report of
// the same `cases` (reports[r] is rank r's; a short report counts as a rank that reported
// nothing).
std::vector<CaseResult> decide_cases(const RunOptions& options,
                                     const std::vector<PlannedCase>& cases,
                                     const std::vector<RankReport>& reports);

}  // namespace rv

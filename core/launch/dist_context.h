// A per-process handle on a data-parallel world, the surface a trainer links (the seed's
// DistContext). Two backings, one API:
// - Single: world size 1, sharding is the identity, every collective returns at once, so
//   code written for a world runs unchanged with distribution off;
// - Process: one rank of a multi-process world, built from what the launch layer found (the
//   rank, the job directory, a connected Transport, the fixed-order device) and the contract in
//   force; reductions run the fixed-order reducer, the exact reducer or the library's sum.
// Built in rv_launch (reduce_verify::launch), which links the reducers.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/contract.h"
#include "core/reducer/exact_device.h"
#include "core/reducer/fixed_order_device.h"
#include "core/rendezvous/job_directory.h"
#include "core/rendezvous/launcher_env.h"
#include "core/seed_law.h"
#include "core/transport/transport.h"

namespace rv {

class DistContext {
 public:
  // The no-op context: rank 0 of 1 on `device`, the fixed-order contract.
  static DistContext single(std::uint32_t device, std::uint64_t seed);

  // One rank of a live world. `transport` must be connected for launch.rank of launch.world,
  // and `job` opened for the same; `device` (the fixed-order device: host_fixed_order_device() for
  // gloo) must outlive the context. The device ordinal is the launcher's local rank. `timeout` is
  // the barrier's deadline (the transport has its own, set when it connected). All ranks
  // first agree on the contract and the seed (an InputError on every rank naming who has
  // what): a world that mixes contracts or seeds would compute something, just not the
  // same thing everywhere. The exact contract runs on `exact_device` (same memory as
  // `device`); null means host_exact_device() when `device` is the host, and is an
  // InputError for a GPU device under the exact contract.
  static DistContext process(const LaunchRank& launch, JobDirectory job,
                             std::unique_ptr<Transport> transport, FixedOrderDevice& device,
                             Contract contract, std::chrono::milliseconds timeout,
                             std::uint64_t seed = 0, ExactDevice* exact_device = nullptr);

  // Movable, not copyable; a moved-from context must not be used.
  DistContext(DistContext&&) noexcept;
  DistContext& operator=(DistContext&&) noexcept;
  ~DistContext();  // closes the job directory on rank 0 (best effort)

  std::uint32_t rank() const;
  // W, the numeric identity of the run.
  std::uint32_t world_size() const;
  // The GPU this rank should use (the launcher's local rank).
  std::uint32_t device_ordinal() const { return device_; }
  // True on exactly one rank: the one that writes checkpoints and logs.
  bool is_leader() const { return rank() == 0; }
  // Part of the run's numeric identity: stamp it into checkpoints beside W.
  Contract reduce_contract() const { return contract_; }
  // The seed law all ranks share.
  SeedLaw seed_law() const { return seed_; }

  // This rank's strided slice of a rank-identical global order: item k goes to rank k mod W.
  // Take it after the global permutation is fixed, so the sample set of any optimizer step
  // does not depend on W.
  // Collective-count warning: when the global length is not a multiple of W, ranks get
  // unequal item counts. A loop that reduces once per item then desynchronises the world on
  // the tail (some ranks enter a collective the others never post; here that is a named
  // error after the agreement, not a hang, but the run is lost). Reduce once per optimizer
  // step over a schedule derived from the global length (every rank computes the same step
  // count), or drop the tail.
  template <typename T>
  std::vector<T> shard(const std::vector<T>& global) const {
    const std::uint32_t world = world_size(), me = rank();
    std::vector<T> mine;
    mine.reserve(global.size() / world + 1);
    for (std::size_t k = me; k < global.size(); k += world) mine.push_back(global[k]);
    return mine;
  }

  // Waits until every rank has reached the same barrier call (the file barrier in the job
  // directory, one generation per call). DeadlineExceeded names the missing ranks.
  void barrier();

  // In-place sum of the flat f32 gradient arena (n values in the fixed-order device's memory)
  // across ranks: the fixed-order reducer, the exact reducer (the correctly rounded sum), or
  // the library's sum under library-sum. The mean scale and the optimizer stay with the
  // trainer (sum, then × 1/W: never pre-scale).
  void all_reduce_grad_sum(float* arena, std::size_t n);

  // In-place mean of n host f32 values across ranks (sum, then × (1.0f / W), the NaN rule),
  // by the contract in force; staged through the fixed-order device when that is not the host.
  void all_reduce_host_mean(float* values, std::size_t n);

  // Logical OR across ranks (an integer maximum: exact and order-independent, so it is
  // neutral to the contract). Single: the flag itself.
  bool any(bool flag);

  // Process contexts: the job directory and the transport (null for Single).
  const JobDirectory* job() const;
  Transport* transport();

 private:
  struct Process;
  DistContext(std::uint32_t device, SeedLaw seed, Contract contract,
              std::unique_ptr<Process> process);
  // Every collective first agrees on what it is (its kind, its length, its place in the
  // sequence of this context's collectives): a rank that skipped or reordered a collective,
  // or passed another length, is a named error on every rank before any payload moves.
  void agree(const char* collective, std::size_t n);

  std::uint32_t device_ = 0;
  SeedLaw seed_{0};
  Contract contract_ = Contract::kFixedOrder;
  std::unique_ptr<Process> process_;
};

}  // namespace rv

// The benchmark's ranks: W rank threads of this process (core/transport/in_process/rank_threads.h),
// each with its own Gloo TCP device over loopback, holding two connections to the other
// ranks: our Gloo transport (for the fixed-order and exact reducers and library_sum) and a
// bare Gloo context (for Gloo's ring allreduce as it ships, with nothing of ours around it).
// The bytes cross the kernel's TCP stack as between processes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/reducer/exact_reducer.h"
#include "core/reducer/fixed_order_reducer.h"
#include "core/transport/in_process/rank_threads.h"
#include "core/transport/transport.h"

namespace gloo {
class Context;
}  // namespace gloo

namespace rv::bench {

struct Rank {
  std::uint32_t rank = 0;
  std::unique_ptr<Transport> transport;
  std::shared_ptr<::gloo::Context> ring_context;
  std::unique_ptr<FixedOrderReducer> reducer;
  std::unique_ptr<ExactReducer> exact;         // the host's default: the owner dataflow
  std::unique_ptr<ExactReducer> exact_digits;  // the digits dataflow (a GPU's default)
  std::vector<float> pristine, work;  // the rank's arena, and the copy each run reduces
};

class GlooRanks {
 public:
  // Connects every rank, on its own thread (connecting is collective).
  explicit GlooRanks(std::uint32_t world);

  std::uint32_t world() const { return threads_.world(); }
  // Runs step(rank) on every rank thread at once; returns the seconds from the release of
  // the threads to the end of the last one. Throws when a rank failed.
  double run(const std::function<void(Rank&)>& step);

 private:
  std::vector<std::unique_ptr<Rank>> ranks_;
  in_process::RankThreads threads_;  // declared last: joined before the ranks' connections close
};

// Gloo's ring allreduce (the new-style API, Gloo's own element sum) of n floats, in place.
void gloo_ring_allreduce(const std::shared_ptr<::gloo::Context>& context, float* values,
                         std::size_t n);

}  // namespace rv::bench

// The benchmark's world: W rank threads in this process, each with its own Gloo TCP device
// over loopback, holding two connections to the other ranks: our Gloo transport (for the
// fixed-order reducer and library_sum) and a bare Gloo context (for Gloo's ring allreduce as
// it ships, with nothing of ours around it). Threads of one process share the cores exactly
// as W processes on this box would; the bytes still cross the kernel's TCP stack.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/reducer/fixed_order_reducer.h"
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
  std::vector<float> pristine, work;  // the rank's arena, and the copy each run reduces
};

class RankThreads {
 public:
  explicit RankThreads(std::uint32_t world);
  ~RankThreads();
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  std::uint32_t world() const { return static_cast<std::uint32_t>(ranks_.size()); }
  // Runs step(rank) on every rank thread at once; returns the seconds from the release of
  // the threads to the end of the last one. Rethrows the first rank's exception.
  double run(const std::function<void(Rank&)>& step);

 private:
  void serve(Rank& rank);

  std::vector<std::unique_ptr<Rank>> ranks_;
  std::vector<std::thread> threads_;
  std::mutex m_;
  std::condition_variable cv_;
  const std::function<void(Rank&)>* step_ = nullptr;
  std::uint64_t generation_ = 0;
  std::size_t running_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
};

// Gloo's ring allreduce (the new-style API, Gloo's own element sum) of n floats, in place.
void gloo_ring_allreduce(const std::shared_ptr<::gloo::Context>& context, float* values,
                         std::size_t n);

}  // namespace rv::bench

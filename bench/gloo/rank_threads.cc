#include "bench/gloo/rank_threads.h"

#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <stdexcept>

#include "core/transport/gloo/gloo_transport.h"

namespace rv::bench {

RankThreads::RankThreads(std::uint32_t world) {
  auto store = std::make_shared<::gloo::rendezvous::HashStore>();
  for (std::uint32_t r = 0; r < world; ++r) {
    ranks_.push_back(std::make_unique<Rank>());
    ranks_.back()->rank = r;
  }
  // Connecting is collective, so every rank connects on its own thread.
  std::vector<std::thread> connectors;
  std::vector<std::exception_ptr> errors(world);
  for (std::uint32_t r = 0; r < world; ++r) {
    connectors.emplace_back([&, r] {
      try {
        Rank& rank = *ranks_[r];
        GlooConnectOptions options;
        options.rank = r;
        options.world = world;
        options.timeout = std::chrono::milliseconds(60000);
        rank.transport = connect_gloo_with_store(store, options);
        rank.reducer = std::make_unique<FixedOrderReducer>(*rank.transport, host_fold_device());
        ::gloo::rendezvous::PrefixStore ring_store("ring", *store);
        ::gloo::transport::tcp::attr attr;
        attr.hostname = "127.0.0.1";
        auto device = ::gloo::transport::tcp::CreateDevice(attr);
        auto context = std::make_shared<::gloo::rendezvous::Context>(static_cast<int>(r),
                                                                     static_cast<int>(world));
        context->setTimeout(std::chrono::milliseconds(60000));
        context->connectFullMesh(ring_store, device);
        rank.ring_context = std::move(context);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : connectors) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  for (auto& rank : ranks_) threads_.emplace_back([this, &rank] { serve(*rank); });
}

RankThreads::~RankThreads() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

double RankThreads::run(const std::function<void(Rank&)>& step) {
  std::unique_lock<std::mutex> lock(m_);
  step_ = &step;
  running_ = ranks_.size();
  error_ = nullptr;
  const auto start = std::chrono::steady_clock::now();
  ++generation_;
  cv_.notify_all();
  cv_.wait(lock, [&] { return running_ == 0; });
  const auto end = std::chrono::steady_clock::now();
  step_ = nullptr;
  if (error_) std::rethrow_exception(error_);
  return std::chrono::duration<double>(end - start).count();
}

void RankThreads::serve(Rank& rank) {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(Rank&)>* step = nullptr;
    {
      std::unique_lock<std::mutex> lock(m_);
      cv_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      step = step_;
    }
    std::exception_ptr error;
    try {
      (*step)(rank);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(m_);
    if (error && !error_) error_ = error;
    if (--running_ == 0) cv_.notify_all();
  }
}

void gloo_ring_allreduce(const std::shared_ptr<::gloo::Context>& context, float* values,
                         std::size_t n) {
  ::gloo::AllreduceOptions options(context);
  options.setAlgorithm(::gloo::AllreduceOptions::Algorithm::RING);
  options.setOutput(values, n);
  options.setReduceFunction(
      static_cast<void (*)(void*, const void*, const void*, std::size_t)>(&::gloo::sum<float>));
  ::gloo::allreduce(options);
}

}  // namespace rv::bench

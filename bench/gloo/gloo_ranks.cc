#include "bench/gloo/gloo_ranks.h"

#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>

#include "core/transport/gloo/gloo_transport.h"

namespace rv::bench {

GlooRanks::GlooRanks(std::uint32_t world) : threads_(world) {
  for (std::uint32_t r = 0; r < world; ++r) {
    ranks_.push_back(std::make_unique<Rank>());
    ranks_.back()->rank = r;
  }
  auto store = std::make_shared<::gloo::rendezvous::HashStore>();
  const auto connected = threads_.run([&](std::uint32_t r) {
    Rank& rank = *ranks_[r];
    GlooConnectOptions options;
    options.rank = r;
    options.world = world;
    options.timeout = std::chrono::milliseconds(60000);
    rank.transport = connect_gloo_with_store(store, options);
    rank.reducer = std::make_unique<FixedOrderReducer>(*rank.transport, host_fixed_order_device());
    rank.exact = std::make_unique<ExactReducer>(*rank.transport, host_exact_device());
    ExactOptions digits = ExactOptions::for_device(host_exact_device());
    digits.dataflow = ExactDataflow::kDigits;
    rank.exact_digits =
        std::make_unique<ExactReducer>(*rank.transport, host_exact_device(), digits);
    ::gloo::rendezvous::PrefixStore ring_store("ring", *store);
    ::gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto device = ::gloo::transport::tcp::CreateDevice(attr);
    auto context =
        std::make_shared<::gloo::rendezvous::Context>(static_cast<int>(r), static_cast<int>(world));
    context->setTimeout(std::chrono::milliseconds(60000));
    context->connectFullMesh(ring_store, device);
    rank.ring_context = std::move(context);
  });
  in_process::expect_no_errors(connected.ranks);
}

double GlooRanks::run(const std::function<void(Rank&)>& step) {
  const auto outcome = threads_.run([&](std::uint32_t r) { step(*ranks_[r]); });
  in_process::expect_no_errors(outcome.ranks);
  return outcome.seconds;
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

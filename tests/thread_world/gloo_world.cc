#include "tests/thread_world/gloo_world.h"

#include <gloo/rendezvous/hash_store.h>

#include "core/transport/gloo/gloo_transport.h"

namespace rv::test {

std::vector<RankOutcome> run_threads(
    std::uint32_t world,
    const std::function<void(std::uint32_t, std::shared_ptr<gloo::rendezvous::Store>)>& body) {
  auto store = std::make_shared<gloo::rendezvous::HashStore>();
  RankThreads threads(world);
  return threads.run([&](std::uint32_t rank) { body(rank, store); }).ranks;
}

std::vector<RankOutcome> run_ranks(std::uint32_t world,
                                   const std::function<void(std::uint32_t, Transport&)>& body,
                                   std::chrono::milliseconds timeout) {
  return run_threads(world,
                     [&](std::uint32_t rank, std::shared_ptr<gloo::rendezvous::Store> store) {
                       GlooConnectOptions options;
                       options.rank = rank;
                       options.world = world;
                       options.timeout = timeout;
                       auto transport = connect_gloo_with_store(std::move(store), options);
                       body(rank, *transport);
                     });
}

}  // namespace rv::test

// A thread-per-rank world over our Gloo transport: each rank thread has its own Gloo TCP
// device and context over loopback, and all of them meet in one in-process HashStore (built
// only with the gloo transport).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/transport/transport.h"
#include "tests/thread_world/harness_names.h"

namespace gloo {
namespace rendezvous {
class Store;
}  // namespace rendezvous
}  // namespace gloo

namespace rv::test {

// Runs body(rank, store) on W rank threads sharing one fresh HashStore; the body connects
// itself (the rendezvous tests give each rank its own options).
std::vector<RankOutcome> run_threads(
    std::uint32_t world,
    const std::function<void(std::uint32_t, std::shared_ptr<gloo::rendezvous::Store>)>& body);

// Connects every rank (connect_gloo_with_store with `timeout`), then runs body(rank,
// transport). A rank's transport is closed when its body returns, as a process's would be
// when it exits. A rank's seconds count its connection and its body.
std::vector<RankOutcome> run_ranks(std::uint32_t world,
                                   const std::function<void(std::uint32_t, Transport&)>& body,
                                   std::chrono::milliseconds timeout = 20s);

}  // namespace rv::test

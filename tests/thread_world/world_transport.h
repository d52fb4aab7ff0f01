// The transports a thread-per-rank world can connect its ranks with, so a test of code that
// sees only a Transport (the reducers, the agreement) runs over each: in-process always (no
// transport library), gloo when this build has it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/transport/transport.h"
#include "tests/thread_world/harness_names.h"

namespace rv::test {

enum class WorldTransport { kInProcess, kGloo };

// Those this build has, in-process first.
std::vector<WorldTransport> world_transports();

// "in_process", "gloo": usable in a test name.
std::string to_string(WorldTransport transport);

// Connects every rank of a fresh world over `transport` (with `timeout` for every wait), then
// runs body(rank, transport) on every rank thread; a rank's transport is closed when its
// body returns.
std::vector<RankOutcome> run_ranks_over(WorldTransport transport, std::uint32_t world,
                                        const std::function<void(std::uint32_t, Transport&)>& body,
                                        std::chrono::milliseconds timeout = 20s);

}  // namespace rv::test

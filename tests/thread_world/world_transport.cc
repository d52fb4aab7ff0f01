#include "tests/thread_world/world_transport.h"

#include "core/error.h"
#include "core/transport/in_process/in_process_world.h"
#if defined(RV_HAVE_GLOO)
#include "tests/thread_world/gloo_world.h"
#endif

namespace rv::test {

std::vector<WorldTransport> world_transports() {
  std::vector<WorldTransport> transports = {WorldTransport::kInProcess};
#if defined(RV_HAVE_GLOO)
  transports.push_back(WorldTransport::kGloo);
#endif
  return transports;
}

std::string to_string(WorldTransport transport) {
  return transport == WorldTransport::kGloo ? "gloo" : "in_process";
}

std::vector<RankOutcome> run_ranks_over(WorldTransport transport, std::uint32_t world,
                                        const std::function<void(std::uint32_t, Transport&)>& body,
                                        std::chrono::milliseconds timeout) {
  if (transport == WorldTransport::kGloo) {
#if defined(RV_HAVE_GLOO)
    return run_ranks(world, body, timeout);
#else
    throw InputError("this build has no gloo transport");
#endif
  }
  in_process::InProcessWorld shared(world, timeout);
  RankThreads threads(world);
  return threads
      .run([&](std::uint32_t rank) {
        auto link = shared.connect(rank);
        body(rank, *link);
      })
      .ranks;
}

}  // namespace rv::test

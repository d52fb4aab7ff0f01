// The Gloo transport (DESIGN.md §5): CPU ranks over Gloo's TCP device, rendezvous through a
// Gloo store, a full mesh of pairs. It moves bytes only; the fixed-order reducer folds on
// the CPU, and `library_sum` is Gloo's own ring allreduce.
//
// What this backend guarantees on top of Gloo (the Debian Gloo has sharp edges, see
// gloo_transport.cc): every wait has the connect-time deadline; sizes are agreed between
// ranks before any payload is posted, so a disagreement is an InputError on every rank
// instead of an abort inside Gloo's I/O thread; a dead or frozen peer becomes an error
// naming that peer's rank; after any failure the transport is unusable and says why.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/transport/transport.h"

namespace gloo {
namespace rendezvous {
class Store;
}  // namespace rendezvous
}  // namespace gloo

namespace rv {

struct GlooConnectOptions {
  std::string store_dir;  // directory for Gloo's FileStore (exists; under the job directory)
  std::uint32_t rank = 0, world = 1;
  std::string hostname = "127.0.0.1";  // address the TCP device binds
  // Set on the Gloo context before connecting: the deadline of the rendezvous and of every
  // later operation, each measured from the operation's start.
  std::chrono::milliseconds timeout{30000};
};

// Rendezvous through a gloo::rendezvous::FileStore in options.store_dir. Throws InputError on
// bad options, DeadlineExceeded naming the ranks that did not arrive, RuntimeFailure otherwise.
std::unique_ptr<Transport> connect_gloo(const GlooConnectOptions& options);

// The same over any Gloo store (e.g. a gloo::rendezvous::HashStore shared by the threads of a
// thread-per-rank test); options.store_dir is only used in messages.
std::unique_ptr<Transport> connect_gloo_with_store(std::shared_ptr<gloo::rendezvous::Store> store,
                                                   const GlooConnectOptions& options);

// What can honestly be said about the Gloo this was built against, e.g.
// "Gloo 0.5.0 (Debian libgloo-dev 0.0~git20220518.5b14351-3)".
std::string gloo_library_version();

}  // namespace rv

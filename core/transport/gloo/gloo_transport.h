// The Gloo transport (docs/DESIGN.md §5): CPU ranks over Gloo's TCP device, rendezvous through a
// Gloo store, a full mesh of pairs. It moves bytes only; the fixed-order reducer folds on
// the CPU, and `library_sum` is Gloo's own ring allreduce (the new-style gloo::allreduce).
//
// What this backend guarantees on top of the Debian Gloo (details in gloo_context_transport.cc
// and peer_transfers.h):
// - every wait has a deadline: the connect-time timeout, measured from each operation's start
//   (a peer's header, i.e. its arrival at the operation, gets up to 1 s of grace);
// - byte counts are agreed before a receive is posted for them, so a size mismatch between
//   ranks is an InputError on every rank, never the abort Gloo's I/O thread does when a send
//   is larger than the posted receive;
// - a dead peer (closed connection) or a frozen one (silence) becomes an error naming that
//   peer's rank: DeadlineExceeded for silence, RuntimeFailure for a lost connection;
// - after any failure the transport is unusable and every later call says why, at once;
// - only unbound buffers and new-style collectives are used (the bound-buffer algorithms
//   shrink the sockets' send buffers and slow all later traffic about 100×);
// - SIGPIPE is ignored once a transport connects (if the program left it at its default),
//   so writing to a killed peer's socket is an error, not the death of this process.
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

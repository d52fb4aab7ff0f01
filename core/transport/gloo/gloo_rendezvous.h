// Rendezvous of one rank into a Gloo full mesh: every rank first announces its arrival in
// the store and waits for all the others within the deadline (so a missing rank is named),
// then, under a fresh deadline, the ranks exchange their pair addresses and connect the TCP
// pairs (pair_mesh.h; not Gloo's connectFullMesh, whose waits have fixed limits).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/transport/gloo/gloo_transport.h"

namespace gloo {
class Context;
}  // namespace gloo

namespace rv {
namespace gloo_detail {

// Whether a key is in the store, without blocking for long. Gloo's Store interface has only
// blocking waits, and a FileStore's wait rounds its timeout up to whole seconds, so the
// file store gets an exact check (see gloo_transport.cc).
using StoreHasKey = std::function<bool(const std::string& key)>;

// The store key under which rank r announces its arrival.
std::string arrival_key(std::uint32_t rank);

// A StoreHasKey for any store: a 1 ms wait.
StoreHasKey has_key_by_short_wait(::gloo::rendezvous::Store& store);

// Throws InputError on bad options, DeadlineExceeded naming every rank that did not arrive,
// RuntimeFailure when the device, the store or a connection fails. `store_name` is what
// messages call the store (its directory).
std::shared_ptr<::gloo::Context> connect_full_mesh(::gloo::rendezvous::Store& store,
                                                   const StoreHasKey& has_key,
                                                   const GlooConnectOptions& options,
                                                   const std::string& store_name);

}  // namespace gloo_detail
}  // namespace rv

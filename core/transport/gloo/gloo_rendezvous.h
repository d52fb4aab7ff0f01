// Rendezvous of one rank into a Gloo full mesh: every rank first announces its arrival in
// the store and waits for all the others within the deadline (so a missing rank is named,
// and Gloo's own waits, some of which have a fixed 30 s limit, only ever run when everyone
// has come), then Gloo's connectFullMesh joins the TCP pairs.
#pragma once

#include <memory>
#include <string>

#include "core/transport/gloo/gloo_transport.h"

namespace gloo {
class Context;
}  // namespace gloo

namespace rv {
namespace gloo_detail {

// Throws InputError on bad options, DeadlineExceeded naming the ranks that did not arrive,
// RuntimeFailure when the device, the store or a connection fails. `store_name` is what
// messages call the store (its directory).
std::shared_ptr<::gloo::Context> connect_full_mesh(::gloo::rendezvous::Store& store,
                                                   const GlooConnectOptions& options,
                                                   const std::string& store_name);

}  // namespace gloo_detail
}  // namespace rv

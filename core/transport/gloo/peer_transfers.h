// One round of point-to-point transfers between this rank and each of its peers, over Gloo's
// unbound buffers (the only Gloo API this backend uses for its own traffic: the old bound
// buffer algorithms resize the sockets' send buffers and slow later traffic ~100×).
//
// Every receive and every send is posted first, each on its own buffer, and only then waited
// for, peer by peer, within the operation's deadline. That is what lets a failure name the
// peer: the buffer that did not complete belongs to exactly one rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/transport/gloo/gloo_failure.h"

namespace gloo {
class Context;
}  // namespace gloo

namespace rv {
namespace gloo_detail {

// What moves between this rank and one peer. The caller has agreed every count with the
// peer; zero-byte directions post nothing. This rank's own entry is ignored (local copies
// are the caller's business).
struct PeerBytes {
  const void* send = nullptr;
  std::size_t send_bytes = 0;
  void* recv = nullptr;
  std::size_t recv_bytes = 0;
};

// Posts and completes one round; all ranks call it in the same order (it takes the next
// slot of the context). Throws DeadlineExceeded when a peer did not deliver or take its
// bytes in time, RuntimeFailure when a peer's connection failed; the message starts with
// `label` and names every failing peer, e.g.
//   "gloo exchange on rank 0 of 4: rank 3: no data within 10 s (peer dead or frozen?)".
// After a DeadlineExceeded Gloo has closed every pair of the context.
void transfer_with_peers(::gloo::Context& context, const std::string& label,
                         const std::vector<PeerBytes>& peers, const Deadline& deadline);

}  // namespace gloo_detail
}  // namespace rv

// What this process can offer as a bind address: its place (the network namespace of this
// machine boot) and the IPv4 addresses of its interfaces that are up (getifaddrs), loopback
// ones included but marked. The input of the choice in bind_address.h.
#pragma once

#include <cstdint>

#include "core/transport/gloo/bind_address.h"

namespace rv {

// This process's candidates as rank `rank`, addresses in getifaddrs order (interface by
// interface, as the kernel lists them). Throws RuntimeFailure when getifaddrs fails.
BindCandidates local_bind_candidates(std::uint32_t rank);

}  // namespace rv

// Choosing and building the live transport and the fixed-order device a rank uses. The only file
// of verify/ that knows which transports this build has.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/reducer/exact_device.h"
#include "core/reducer/fixed_order_device.h"
#include "core/rendezvous/job_directory.h"
#include "core/rendezvous/launcher_env.h"
#include "core/transport/transport.h"
#include "verify/live/run_selection.h"

namespace rv {

// "auto" becomes nccl (two or more GPUs), cuda-loopback (one GPU) or gloo (no GPU). A rank
// under an external launcher has no loopback world to join: there auto is nccl on any GPU.
TransportKind resolve_transport(TransportChoice requested, bool under_launcher);

// The largest world a self-spawned run starts on this transport by default: 8 processes on
// gloo, one rank per GPU on nccl, any W on cuda-loopback (one process).
std::uint32_t default_max_world(TransportKind transport);

// The transports this build has, e.g. "gloo, cuda-loopback, nccl".
std::string available_transports();

struct RankTransport {
  std::unique_ptr<Transport> transport;
  FixedOrderDevice* device = nullptr;   // owned by the factory (process lifetime)
  ExactDevice* exact_device = nullptr;  // the same memory and queue as `device`
};

// `hostname` is the address gloo binds, or kAutoHostname: the ranks agree on one per rank
// through the job directory (core/transport/gloo/bind_address_agreement.h).
RankTransport connect_rank_transport(TransportKind transport, const JobDirectory& job,
                                     const LaunchRank& launch, std::chrono::milliseconds timeout,
                                     const std::string& hostname);

// Transport facts for `info`: one (key, value) per line.
std::vector<std::pair<std::string, std::string>> transport_facts();

}  // namespace rv

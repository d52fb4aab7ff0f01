// Choosing and building the live transport and the fold device a rank uses. The only file
// of verify/ that knows which transports this build has.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/launch/job_directory.h"
#include "core/launch/launcher_env.h"
#include "core/reducer/fold_device.h"
#include "core/transport/transport.h"

namespace rv {

// "auto" becomes nccl (two or more GPUs), cuda-loopback (one GPU) or gloo (no GPU); a
// transport this build lacks is an InputError that says so.
std::string resolve_transport(const std::string& requested);

// The transports this build has, e.g. "gloo, cuda-loopback, nccl".
std::string available_transports();

struct RankTransport {
  std::unique_ptr<Transport> transport;
  FoldDevice* device = nullptr;  // owned by the factory (process lifetime)
};

RankTransport connect_rank_transport(const std::string& transport, const JobDirectory& job,
                                     const LaunchRank& launch, std::chrono::milliseconds timeout,
                                     const std::string& hostname);

// Transport facts for `info`: one (key, value) per line.
std::vector<std::pair<std::string, std::string>> transport_facts();

}  // namespace rv

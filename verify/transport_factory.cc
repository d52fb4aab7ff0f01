#include "verify/transport_factory.h"

#include "core/error.h"

#if defined(RV_HAVE_GLOO)
#include "core/transport/gloo/gloo_transport.h"
#endif
#if defined(RV_HAVE_CUDA)
#include "core/cuda/cuda_fold_device.h"
#include "core/cuda/device_info.h"
#include "core/cuda/nccl_library.h"
#include "core/cuda/nccl_transport.h"
#endif

namespace rv {
namespace {

int gpu_count() {
#if defined(RV_HAVE_CUDA)
  return cuda_device_present() ? static_cast<int>(list_cuda_devices().size()) : 0;
#else
  return 0;
#endif
}

[[noreturn]] void not_built(const std::string& transport, const char* needs) {
  throw InputError("transport " + transport + " is not in this build (it needs " + needs +
                   "); this build has: " + available_transports());
}

}  // namespace

std::string available_transports() {
  std::string list;
#if defined(RV_HAVE_GLOO)
  list += "gloo";
#endif
#if defined(RV_HAVE_CUDA)
  list += std::string(list.empty() ? "" : ", ") + "cuda-loopback, nccl";
#endif
  return list.empty() ? "none" : list;
}

std::string resolve_transport(const std::string& requested) {
  if (requested == "auto") {
    const int gpus = gpu_count();
    if (gpus >= 2) return "nccl";
    if (gpus == 1) return "cuda-loopback";
    return "gloo";
  }
  return requested;
}

RankTransport connect_rank_transport(const std::string& transport, const JobDirectory& job,
                                     const LaunchRank& launch, std::chrono::milliseconds timeout,
                                     const std::string& hostname) {
  RankTransport link;
  if (transport == "gloo") {
#if defined(RV_HAVE_GLOO)
    GlooConnectOptions options;
    options.store_dir = job.gloo_store_dir();
    options.rank = launch.rank;
    options.world = launch.world;
    options.hostname = hostname;
    options.timeout = timeout;
    link.transport = connect_gloo(options);
    link.device = &host_fold_device();
    return link;
#else
    (void)job, (void)launch, (void)timeout, (void)hostname;
    not_built(transport, "Gloo");
#endif
  }
  if (transport == "nccl") {
#if defined(RV_HAVE_CUDA)
    NcclConnectOptions options;
    options.job_dir = job.path();
    options.rank = launch.rank;
    options.world = launch.world;
    options.device = static_cast<int>(launch.local_rank);
    options.timeout = timeout;
    static CudaFoldDevice device(options.device);
    link.transport = connect_nccl(options);
    link.device = &device;
    return link;
#else
    not_built(transport, "CUDA");
#endif
  }
  throw InputError("transport " + transport + " has no rank processes (cuda-loopback runs every "
                   "rank in one process)");
}

std::vector<std::pair<std::string, std::string>> transport_facts() {
  std::vector<std::pair<std::string, std::string>> facts;
  facts.emplace_back("transports built", available_transports());
#if defined(RV_HAVE_GLOO)
  facts.emplace_back("gloo", gloo_library_version());
#endif
#if defined(RV_HAVE_CUDA)
  for (const auto& line : cuda_info_lines()) facts.push_back(line);
#endif
  return facts;
}

}  // namespace rv

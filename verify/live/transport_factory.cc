#include "verify/live/transport_factory.h"

#include <algorithm>

#include "core/case_id.h"
#include "core/error.h"
#include "verify/live/run_plan.h"

#if defined(RV_HAVE_GLOO)
#include "core/transport/gloo/bind_address_agreement.h"
#include "core/transport/gloo/gloo_transport.h"
#include "core/transport/gloo/host_interfaces.h"
#endif
#if defined(RV_HAVE_CUDA)
#include "core/cuda/device_info.h"
#include "core/cuda/exact/cuda_exact_device.h"
#include "core/cuda/fixed_order/cuda_fixed_order_device.h"
#include "core/transport/nccl/nccl_library.h"
#include "core/transport/nccl/nccl_transport.h"
#endif

namespace rv {
namespace {

int gpu_count() {
#if defined(RV_HAVE_CUDA)
  return cuda_device_count();
#else
  return 0;
#endif
}

[[maybe_unused]] [[noreturn]] void not_built(TransportKind transport, const char* needs) {
  throw InputError(std::string("transport ") + to_string(transport) +
                   " is not in this build (it needs " + needs +
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

TransportKind resolve_transport(TransportChoice requested, bool under_launcher) {
  switch (requested) {
    case TransportChoice::kGloo:
      return TransportKind::kGloo;
    case TransportChoice::kNccl:
      return TransportKind::kNccl;
    case TransportChoice::kCudaLoopback:
      return TransportKind::kCudaLoopback;
    case TransportChoice::kAuto:
      break;
  }
  const int gpus = gpu_count();
  if (gpus >= 2 || (gpus == 1 && under_launcher)) return TransportKind::kNccl;
  if (gpus == 1) return TransportKind::kCudaLoopback;
  return TransportKind::kGloo;
}

std::uint32_t default_max_world(TransportKind transport) {
  if (transport == TransportKind::kGloo) return 8;
  if (transport == TransportKind::kNccl) {
    return static_cast<std::uint32_t>(std::max(1, gpu_count()));
  }
  return kMaxWorld;
}

RankTransport connect_rank_transport(TransportKind transport, const JobDirectory& job,
                                     const LaunchRank& launch, std::chrono::milliseconds timeout,
                                     const std::string& hostname) {
  RankTransport link;
  if (transport == TransportKind::kGloo) {
#if defined(RV_HAVE_GLOO)
    GlooConnectOptions options;
    options.store_dir = job.gloo_store_dir();
    options.rank = launch.rank;
    options.world = launch.world;
    options.hostname = hostname;
    options.timeout = timeout;
    if (hostname == kAutoHostname) {
      BindAddressAgreementOptions agreement;
      agreement.dir = job.file(kBindAddressFolder);
      agreement.rank = launch.rank;
      agreement.world = launch.world;
      agreement.timeout = timeout;
      options.hostname = agree_bind_address(agreement, local_bind_candidates(launch.rank));
    }
    link.transport = connect_gloo(options);
    link.device = &host_fixed_order_device();
    link.exact_device = &host_exact_device();
    return link;
#else
    (void)job, (void)launch, (void)timeout, (void)hostname;
    not_built(transport, "Gloo");
#endif
  }
  if (transport == TransportKind::kNccl) {
#if defined(RV_HAVE_CUDA)
    (void)hostname;
    // One GPU per rank: the launcher's local rank picks it (CUDA_VISIBLE_DEVICES narrows the
    // choice). The device and the transport share one stream, so NCCL's byte movement and
    // the fold kernel that reads those bytes are ordered without extra waits.
    static CudaFixedOrderDevice device(static_cast<int>(launch.local_rank));
    NcclConnectOptions options;
    options.job_dir = job.path();
    options.job_nonce = job.nonce();
    options.rank = launch.rank;
    options.world = launch.world;
    options.device = device.device();
    options.timeout = timeout;
    options.stream = device.stream();
    link.transport = connect_nccl(options);
    link.device = &device;
    // The exact kernels enqueue on the fixed-order device's stream, so NCCL's int64 all-reduces
    // order with them as with the fold.
    static CudaExactDevice exact_device(device);
    link.exact_device = &exact_device;
    return link;
#else
    not_built(transport, "CUDA");
#endif
  }
  throw InputError(std::string("transport ") + to_string(transport) +
                   " has no rank processes (cuda-loopback runs every "
                   "rank in one process)");
}

std::vector<std::pair<std::string, std::string>> transport_facts() {
  std::vector<std::pair<std::string, std::string>> facts;
  facts.emplace_back("transports built", available_transports());
#if defined(RV_HAVE_GLOO)
  facts.emplace_back("gloo", gloo_library_version());
#endif
#if defined(RV_HAVE_CUDA)
  const CudaInfo cuda = cuda_info();
  facts.emplace_back("cuda driver", cuda_version_text(cuda.driver_version));
  facts.emplace_back("cuda runtime", cuda_version_text(cuda.runtime_version));
  facts.emplace_back("gpus", cuda.gpus.empty() ? cuda.status : std::to_string(cuda.gpus.size()));
  for (const GpuInfo& gpu : cuda.gpus) {
    facts.emplace_back("gpu " + std::to_string(gpu.index), describe(gpu));
  }
  try {
    facts.emplace_back("nccl", NcclLibrary::load().describe());
  } catch (const Error& error) {
    facts.emplace_back("nccl", std::string("not loaded: ") + error.what());
  }
#endif
  return facts;
}

}  // namespace rv

#include "core/launch/dist_context.h"

#include <string>
#include <utility>

#include "core/error.h"
#include "core/reducer/agreement.h"
#include "core/reducer/exact_reducer.h"
#include "core/reducer/fixed_order_reducer.h"
#include "core/reducer/library_sum_reducer.h"
#include "core/rendezvous/file_barrier.h"

namespace rv {

// Heap-allocated so the reducer's references to the transport and the device stay valid
// when the context moves.
struct DistContext::Process {
  Process(const LaunchRank& launch_rank, JobDirectory job_directory,
          std::unique_ptr<Transport> connected, FixedOrderDevice& fixed_order_device,
          ExactDevice* exact, std::chrono::milliseconds timeout)
      : launch(launch_rank),
        job(std::move(job_directory)),
        transport(std::move(connected)),
        device(fixed_order_device),
        barrier(job.file("barrier"), launch.rank, launch.world, timeout),
        reducer(*transport, device) {
    if (exact != nullptr) exact_reducer = std::make_unique<ExactReducer>(*transport, *exact);
  }

  LaunchRank launch;
  JobDirectory job;
  std::unique_ptr<Transport> transport;
  FixedOrderDevice& device;
  FileBarrier barrier;
  FixedOrderReducer reducer;
  std::unique_ptr<ExactReducer> exact_reducer;  // under the exact contract only
  std::uint64_t collectives = 0;  // this context's collectives so far, for the agreement
};

DistContext::DistContext(std::uint32_t device, SeedLaw seed, Contract contract,
                         std::unique_ptr<Process> process)
    : device_(device), seed_(seed), contract_(contract), process_(std::move(process)) {}

DistContext::DistContext(DistContext&&) noexcept = default;
DistContext& DistContext::operator=(DistContext&&) noexcept = default;

DistContext::~DistContext() {
  if (process_ == nullptr) return;
  try {
    process_->job.close();
  } catch (...) {
    // A directory that cannot be marked closed still cannot be joined: every rank slot in it
    // is taken (job_directory.h).
  }
}

DistContext DistContext::single(std::uint32_t device, std::uint64_t seed) {
  return DistContext(device, SeedLaw(seed), Contract::kFixedOrder, nullptr);
}

DistContext DistContext::process(const LaunchRank& launch, JobDirectory job,
                                 std::unique_ptr<Transport> transport, FixedOrderDevice& device,
                                 Contract contract, std::chrono::milliseconds timeout,
                                 std::uint64_t seed, ExactDevice* exact_device) {
  if (transport == nullptr) throw InputError("DistContext::process: no transport");
  RV_ENFORCE_EQ(InputError, transport->rank(), launch.rank,
                "DistContext: the transport was connected for another rank");
  RV_ENFORCE_EQ(InputError, transport->world_size(), launch.world,
                "DistContext: the transport was connected for another world size");
  RV_ENFORCE_EQ(InputError, job.rank(), launch.rank,
                "DistContext: the job directory was opened for another rank");
  RV_ENFORCE_EQ(InputError, job.world_size(), launch.world,
                "DistContext: the job directory was opened for another world size");
  agree_across_ranks(*transport, detail::concat("DistContext contract=", to_string(contract),
                                                " seed=", seed, " world=", launch.world));
  if (contract == Contract::kExact && exact_device == nullptr) {
    if (&device != &host_fixed_order_device()) {
      throw InputError("DistContext: the exact contract on " + std::string(device.name()) +
                       " needs its ExactDevice");
    }
    exact_device = &host_exact_device();
  }
  auto state =
      std::make_unique<Process>(launch, std::move(job), std::move(transport), device,
                                contract == Contract::kExact ? exact_device : nullptr, timeout);
  return DistContext(launch.local_rank, SeedLaw(seed), contract, std::move(state));
}

std::uint32_t DistContext::rank() const { return process_ ? process_->launch.rank : 0; }

std::uint32_t DistContext::world_size() const { return process_ ? process_->launch.world : 1; }

const JobDirectory* DistContext::job() const { return process_ ? &process_->job : nullptr; }

Transport* DistContext::transport() { return process_ ? process_->transport.get() : nullptr; }

void DistContext::agree(const char* collective, std::size_t n) {
  const std::uint64_t index = process_->collectives++;
  agree_across_ranks(*process_->transport,
                     detail::concat("DistContext collective #", index, ": ", collective, " n=", n,
                                    " contract=", to_string(contract_)));
}

void DistContext::barrier() {
  if (process_ == nullptr) return;
  process_->barrier.wait();
}

void DistContext::all_reduce_grad_sum(float* arena, std::size_t n) {
  if (process_ == nullptr) return;
  agree("grad-sum", n);
  if (contract_ == Contract::kFixedOrder) {
    process_->reducer.all_reduce(arena, n, Op::kSum);
  } else if (contract_ == Contract::kExact) {
    process_->exact_reducer->all_reduce(arena, n, Op::kSum);
  } else {
    library_sum_all_reduce(*process_->transport, process_->device, arena, n, Op::kSum);
  }
}

void DistContext::all_reduce_host_mean(float* values, std::size_t n) {
  if (process_ == nullptr) return;
  agree("host-mean", n);
  FixedOrderDevice& device = process_->device;
  const auto reduce = [&](float* arena) {
    if (contract_ == Contract::kFixedOrder) {
      process_->reducer.all_reduce(arena, n, Op::kMean);
    } else if (contract_ == Contract::kExact) {
      process_->exact_reducer->all_reduce(arena, n, Op::kMean);
    } else {
      library_sum_all_reduce(*process_->transport, device, arena, n, Op::kMean);
    }
  };
  if (&device == &host_fixed_order_device()) {
    reduce(values);
    return;
  }
  // A device transport moves device memory only: stage the host values through it.
  float* staged = device.allocate(n);
  try {
    device.upload(staged, values, n * sizeof(float));
    reduce(staged);
    device.download(values, staged, n * sizeof(float));
    device.synchronize();
  } catch (...) {
    device.free(staged);
    throw;
  }
  device.free(staged);
}

bool DistContext::any(bool flag) {
  if (process_ == nullptr) return flag;
  agree("any", 1);
  return process_->transport->max_int(flag ? 1 : 0) != 0;
}

}  // namespace rv

// The one-GPU loopback world (docs/DESIGN.md §5, transport cuda-loopback): W logical ranks,
// threads of this process, every rank's memory on one GPU, device-to-device copies as the
// byte mover. It is the in-process world (core/transport/in_process) with another mover: each
// rank's transport issues its copies with cudaMemcpyAsync on that rank's own stream (its
// CudaFixedOrderDevice's; one rank issuing at a time, so the W threads never contend inside the
// runtime) and synchronises the stream before the meeting that releases the buffers, so the real
// reducers (core/reducer) run over it unchanged, one rank thread per logical rank, each with its
// own devices. The exchanges' copies into a rank are issued in a seeded shuffled order of the
// source ranks, new at every exchange: the slot is still the source rank's, so the bits must not
// change, and that is what running the suite over it proves on any single GPU.
//
// Memory: exchanges and all_reduce_int64 take device memory of the GPU; all_gather and
// broadcast take host or device memory (the agreement records live on the host); max_int
// reduces a host value. all_reduce_int64 combines on the GPU: rank 0 gathers every rank's
// words into one table and combines them with the exact contract's word kernel
// (launch_combine_words), then every rank copies the result; integer max and sum are
// order-free, so any gather order gives the same bits. library_sum throws InputError: the
// ranks share one process and no collective library, so there is no library sum to report
// (`run --transport cuda-loopback` skips that contract).
// No CUDA types here: host code of any target can include it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>

#include "core/cuda/fixed_order/cuda_fixed_order_device.h"
#include "core/transport/in_process/in_process_world.h"
#include "core/transport/transport.h"

namespace rv::cuda_loopback {

class CudaLoopbackWorld {
 public:
  // On GPU `device`; every wait has `timeout`; `delivery_seed` seeds the shuffled delivery
  // orders. Asks for the device's host waits to yield (cudaDeviceScheduleYield,
  // process-wide): the W rank threads may outnumber the cores, and a spinning wait would take
  // them from the ranks still issuing copies. Throws RuntimeFailure when the device cannot be
  // used.
  CudaLoopbackWorld(std::uint32_t world, int device, std::chrono::milliseconds timeout,
                    std::uint64_t delivery_seed);
  CudaLoopbackWorld(const CudaLoopbackWorld&) = delete;
  CudaLoopbackWorld& operator=(const CudaLoopbackWorld&) = delete;

  std::uint32_t world_size() const { return world_.world_size(); }
  // Rank `rank`'s transport, copying on `device`'s stream; the world and the device must
  // outlive it. One per rank; every rank's device on the world's GPU (else InputError).
  std::unique_ptr<Transport> connect(std::uint32_t rank, const CudaFixedOrderDevice& device);
  // Rank `rank` is gone (it failed and will make no more calls): whoever waits for it stops
  // waiting, with a RuntimeFailure naming it. Its transport's destructor says the same.
  void leave(std::uint32_t rank);

 private:
  in_process::InProcessWorld world_;
  const int device_;
  std::mutex issue_;  // held by a rank while it issues an exchange's copies
};

}  // namespace rv::cuda_loopback

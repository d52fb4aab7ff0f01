// The NCCL transport's class (docs/DESIGN.md §5.5): one communicator, its streams, its scratch
// and staging memory, and the watchdog every call waits under. Its lifecycle (join, the
// watchdog waits, failure, finalize and abort) is in nccl_transport.cc, the collectives in
// nccl_transport_collectives.cc, the started exchanges in nccl_transport_pending.cc. Private
// to core/cuda.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda/cuda_check.h"
#include "core/deadline.h"
#include "core/transport/nccl/nccl_api.h"
#include "core/transport/nccl/nccl_library.h"
#include "core/transport/nccl/nccl_transport.h"
#include "core/transport/transport.h"

namespace rv::nccl_detail {

class NcclTransport final : public Transport {
 public:
  NcclTransport(const NcclLibrary& library, const NcclConnectOptions& options);
  ~NcclTransport() override;
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  std::uint32_t rank() const override { return rank_; }
  std::uint32_t world_size() const override { return world_; }
  std::string name() const override { return "nccl"; }
  std::string library_version() const override { return library_.describe(); }

  void all_gather(const void* in, void* out, std::size_t bytes) override;
  void exchange(const ExchangePlan& plan) override;
  // With a caller's stream and counts_agreed: enqueued on the exchange stream and returned
  // at once (nccl_transport_pending.cc); otherwise exchange(plan) before returning.
  std::unique_ptr<PendingExchange> start_exchange(const ExchangePlan& plan) override;
  void broadcast(void* buf, std::size_t bytes, std::uint32_t root) override;
  void barrier() override;
  void library_sum(float* values, std::size_t n) override;
  void library_sum_half(void* values, std::size_t n, DType dtype) override;
  // NCCL sums both half formats natively (ncclBfloat16, ncclFloat16).
  std::optional<std::string> library_sum_unavailable(DType) const override {
    return std::nullopt;
  }
  // ncclReduceScatter in place (f32, bf16, f16: NCCL's own arithmetic).
  void library_reduce_scatter(void* values, std::size_t shard_size, DType dtype) override;
  std::optional<std::string> library_reduce_scatter_unavailable(DType) const override {
    return std::nullopt;
  }
  std::int64_t max_int(std::int64_t value) override;
  void all_reduce_int64(std::int64_t* values, std::size_t n, IntReduction op) override;

 private:
  const NcclApi& api() const { return library_.api(); }
  std::string where() const {
    return "rank " + std::to_string(rank_) + " of " + std::to_string(world_) +
           " (cuda:" + std::to_string(device_) + ")";
  }
  class Pending;  // a started exchange (nccl_transport_pending.cc)

  void join(const NcclConnectOptions& options);
  void check_usable(const char* what) const;
  void begin(const char* what);
  void check_plan_shape(const ExchangePlan& plan) const;
  void check_exchange_agreement(const ExchangePlan& plan);
  // The own slot's device copy and the grouped sends and receives of `plan`, on `stream`.
  void enqueue_exchange(const ExchangePlan& plan, cudaStream_t stream);
  void check_enqueue(ncclResult_t result, const char* what);
  void wait_enqueued(const char* what, const Deadline& deadline);
  // Polls `event` until it has completed, watching NCCL's state and the deadline.
  void wait_event(cudaEvent_t event, const char* what, const Deadline& deadline, Backoff backoff);
  void complete(const char* what);
  // A started exchange's end: waited for (the main stream then waits for it too), or
  // abandoned (the communicator is aborted: its transfers may still be landing).
  void finish_started(cudaEvent_t landed);
  void abandon_started(cudaEvent_t landed) noexcept;
  cudaEvent_t take_spare_event();
  void return_spare_event(cudaEvent_t event) noexcept;
  [[noreturn]] void fail(const char* what, ncclResult_t result);
  [[noreturn]] void expire(const char* what, std::chrono::milliseconds waited);
  void abort_once() noexcept;
  void finalize() noexcept;

  const NcclLibrary& library_;
  std::uint32_t rank_;
  std::uint32_t world_;
  int device_;
  std::chrono::milliseconds timeout_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool own_stream_ = false;
  cudaEvent_t done_ = nullptr;
  // Started exchanges (start_exchange) run on their own stream, so the fold on stream_ runs
  // meanwhile; it exists only with a caller's stream (NcclConnectOptions::stream).
  // main_ready_ orders it after stream_, exchange_tail_ orders stream_ after it, and each
  // started exchange records one of spare_events_ when its bytes have landed.
  cudaStream_t exchange_stream_ = nullptr;
  cudaEvent_t main_ready_ = nullptr;
  cudaEvent_t exchange_tail_ = nullptr;
  std::vector<cudaEvent_t> spare_events_;
  std::size_t started_in_flight_ = 0;     // started and neither waited for nor abandoned
  std::int64_t* host_scratch_ = nullptr;  // pinned, so its copies never block the host
  std::int64_t* device_scratch_ = nullptr;
  // Staging for all-gathers of host memory (the agreement records): NCCL's kernels touch
  // device memory only. Grown on demand; pinned on the host side so the copy back can wait
  // with a deadline (complete) instead of blocking in a pageable cudaMemcpy.
  unsigned char* staging_device_ = nullptr;
  unsigned char* staging_host_ = nullptr;
  std::size_t staging_bytes_ = 0;
  void grow_staging(std::size_t bytes);
  bool broken_ = false;
  bool abort_hung_ = false;  // NCCL work may still run: leave memory and streams alone
};

}  // namespace rv::nccl_detail

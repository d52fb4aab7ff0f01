// CudaExactDevice: the exact reducer's ExactDevice on one GPU (core/cuda/exact/exact_kernel.h's
// kernels). It enqueues on a CudaFixedOrderDevice's stream, so an NCCL transport created for that
// stream (verify/live/transport_factory.cc passes CudaFixedOrderDevice::stream() to connect_nccl)
// orders its int64 all-reduces with the encode before them and the round after them
// without extra waits; the fixed-order and the exact reducer of one rank share the device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cuda/fixed_order/cuda_fixed_order_device.h"
#include "core/exact/exact_plan.h"
#include "core/reducer/exact_device.h"

namespace rv {

class CudaExactDevice final : public ExactDevice {
 public:
  // `fixed_order_device` must outlive this device. Throws RuntimeFailure for device errors.
  explicit CudaExactDevice(const CudaFixedOrderDevice& fixed_order_device);
  ~CudaExactDevice() override;
  CudaExactDevice(const CudaExactDevice&) = delete;
  CudaExactDevice& operator=(const CudaExactDevice&) = delete;

  const char* name() const override { return name_.c_str(); }  // the fixed-order device's name
  DeviceKind kind() const override { return DeviceKind::kGpu; }
  std::int64_t* allocate_words(std::size_t n) override;
  void free_words(std::int64_t* p) override;
  void agreement_words(const float* values, std::size_t n, std::int64_t* words) override;
  void download_words(std::int64_t* host, const std::int64_t* words, std::size_t n) override;
  // encode and round upload the plan's block slots (16 bytes per 1024 elements) on the
  // stream when they differ from the last plan uploaded: a round after its encode reuses it.
  void encode(const float* values, const ExactPlan& plan, std::int64_t* words) override;
  void round(const std::int64_t* sums, const ExactPlan& plan, Op op, float* out,
             DType dtype) override;
  void synchronize() override;
  // The reduce-scatter's owner reduction (docs/DESIGN.md §2.6): f32 by
  // launch_exact_reduce_stacked; bf16/f16 tables (the dtype's values widened) narrowed to
  // their 2-byte form (exact), reduced by cuda_exact_stacked_half, which rounds each exact
  // sum once to the dtype, and widened back into out. All on the stream, no host wait.
  float* allocate_values(std::size_t n) override;
  void free_values(float* p) override;
  void reduce_stacked(const float* stacked, std::uint32_t world, std::size_t slot_stride,
                      std::size_t n, Op op, float* out, DType dtype) override;

  int device() const { return device_; }
  void* stream() const { return stream_; }

 private:
  // The device copy of plan.blocks, uploaded when it differs from the last one.
  const ExactBlockSlot* device_slots(const ExactPlan& plan);

  int device_;
  void* stream_;
  std::string name_;
  ExactBlockSlot* slots_ = nullptr;  // device memory, capacity slots_capacity_
  std::size_t slots_capacity_ = 0;
  std::vector<ExactBlockSlot> uploaded_;  // what slots_ holds
  bool uploaded_valid_ = false;
  // reduce_stacked's 2-byte table and result (device memory), grown when a call needs more.
  void* half_scratch_ = nullptr;
  std::size_t half_scratch_bytes_ = 0;
};

}  // namespace rv

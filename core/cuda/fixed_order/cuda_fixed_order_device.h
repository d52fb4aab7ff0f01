// CudaFixedOrderDevice: a FixedOrderDevice on one GPU. Scratch is cudaMalloc'd, copies and kernels
// are enqueued in order on the device's own stream, and synchronize waits for that stream. A device
// transport (NCCL) given stream() enqueues on the same stream, so bytes the transport moves and the
// folds that read them are ordered without extra waits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/reducer/fixed_order_device.h"

namespace rv {

class CudaFixedOrderDevice final : public FixedOrderDevice {
 public:
  // Throws RuntimeFailure when `device` cannot be used.
  explicit CudaFixedOrderDevice(int device);
  ~CudaFixedOrderDevice() override;
  CudaFixedOrderDevice(const CudaFixedOrderDevice&) = delete;
  CudaFixedOrderDevice& operator=(const CudaFixedOrderDevice&) = delete;

  const char* name() const override { return name_.c_str(); }  // "cuda:<index> <device name>"
  DeviceKind kind() const override { return DeviceKind::kGpu; }
  float* allocate(std::size_t n) override;
  void free(float* p) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void fold_stacked(const float* stacked, std::uint32_t world, std::size_t slot_stride,
                    std::size_t n, Op op, float* out) override;
  void finish_library_sum(float* values, std::size_t n, std::uint32_t world, Op op) override;
  void round_to_dtype(float* values, std::size_t n, DType dtype) override;
  void narrow(const float* values, std::size_t n, DType dtype, void* out) override;
  void widen(const void* values, std::size_t n, DType dtype, float* out) override;
  void synchronize() override;
  // Synchronous host copies (they wait for the work enqueued before them).
  void upload(void* dst, const void* host_src, std::size_t bytes) override;
  void download(void* host_dst, const void* src, std::size_t bytes) override;

  int device() const { return device_; }
  // The cudaStream_t everything is enqueued on.
  void* stream() const { return stream_; }

 private:
  int device_;
  std::string name_;
  void* stream_ = nullptr;
};

}  // namespace rv

#include "core/cuda/fixed_order/cuda_fixed_order_device.h"

#include "core/cuda/cuda_check.h"
#include "core/cuda/dtype_kernel.h"
#include "core/cuda/fixed_order/fold_kernel.h"
#include "core/cuda/library_sum/finish_kernel.h"

namespace rv {
namespace {

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

}  // namespace

CudaFixedOrderDevice::CudaFixedOrderDevice(int device) : device_(device) {
  const cuda_detail::ScopedDevice scope(device_);
  cudaDeviceProp prop{};
  RV_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  name_ = "cuda:" + std::to_string(device_) + " " + prop.name;
  cudaStream_t stream = nullptr;
  // Non-blocking: the legacy default stream (used by libraries we do not control) never
  // serialises with ours.
  RV_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  stream_ = stream;
}

CudaFixedOrderDevice::~CudaFixedOrderDevice() {
  int previous = -1;
  const bool restore = cudaGetDevice(&previous) == cudaSuccess && previous != device_;
  if (restore) (void)cudaSetDevice(device_);
  (void)cudaStreamSynchronize(as_stream(stream_));
  (void)cudaStreamDestroy(as_stream(stream_));
  if (restore) (void)cudaSetDevice(previous);
}

float* CudaFixedOrderDevice::allocate(std::size_t n) {
  const cuda_detail::ScopedDevice scope(device_);
  void* p = nullptr;
  RV_CUDA_CHECK(cudaMalloc(&p, (n ? n : 1) * sizeof(float)));
  return static_cast<float*>(p);
}

void CudaFixedOrderDevice::free(float* p) {
  if (p == nullptr) return;
  const cuda_detail::ScopedDevice scope(device_);
  // cudaFree waits for the device; work on our stream that still reads p finishes first.
  RV_CUDA_CHECK(cudaFree(p));
}

void CudaFixedOrderDevice::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  const cuda_detail::ScopedDevice scope(device_);
  RV_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, as_stream(stream_)));
}

void CudaFixedOrderDevice::fold_stacked(const float* stacked, std::uint32_t world,
                                        std::size_t slot_stride, std::size_t n, Op op, float* out) {
  const cuda_detail::ScopedDevice scope(device_);
  launch_fold_stacked(stacked, world, slot_stride, n, op, out, stream_);
}

void CudaFixedOrderDevice::round_to_dtype(float* values, std::size_t n, DType dtype) {
  const cuda_detail::ScopedDevice scope(device_);
  launch_round_to_dtype(values, n, dtype, stream_);
}

void CudaFixedOrderDevice::narrow(const float* values, std::size_t n, DType dtype, void* out) {
  const cuda_detail::ScopedDevice scope(device_);
  launch_narrow(values, n, dtype, out, stream_);
}

void CudaFixedOrderDevice::widen(const void* values, std::size_t n, DType dtype, float* out) {
  const cuda_detail::ScopedDevice scope(device_);
  launch_widen(values, n, dtype, out, stream_);
}

void CudaFixedOrderDevice::finish_library_sum(float* values, std::size_t n, std::uint32_t world,
                                              Op op) {
  const cuda_detail::ScopedDevice scope(device_);
  launch_finish_library_sum(values, n, world, op, stream_);
}

void CudaFixedOrderDevice::synchronize() {
  const cuda_detail::ScopedDevice scope(device_);
  RV_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream_)));
}

void CudaFixedOrderDevice::upload(void* dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
  const cuda_detail::ScopedDevice scope(device_);
  RV_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, as_stream(stream_)));
  RV_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream_)));
}

void CudaFixedOrderDevice::download(void* host_dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  const cuda_detail::ScopedDevice scope(device_);
  RV_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, as_stream(stream_)));
  RV_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream_)));
}

}  // namespace rv

#include "core/cuda/device_buffer.h"

#include <string>
#include <utility>

#include "core/cuda/cuda_check.h"
#include "core/error.h"

namespace rv {

DeviceBuffer::DeviceBuffer(int device, std::size_t bytes) : bytes_(bytes), device_(device) {
  const cuda_detail::ScopedDevice scope(device);
  RV_CUDA_CHECK(cudaMalloc(&data_, bytes ? bytes : 1));
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      device_(std::exchange(other.device_, -1)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (data_ == nullptr) return;
  int previous = -1;
  const bool restore = cudaGetDevice(&previous) == cudaSuccess && previous != device_;
  if (restore) (void)cudaSetDevice(device_);
  (void)cudaFree(data_);  // a destructor must not throw; a failed free leaks only
  if (restore) (void)cudaSetDevice(previous);
  data_ = nullptr;
}

void DeviceBuffer::check_range(std::size_t bytes, std::size_t offset) const {
  if (offset > bytes_ || bytes > bytes_ - offset) {
    throw InputError("device buffer of " + std::to_string(bytes_) + " bytes: copy of " +
                     std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                     " is out of range");
  }
}

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
  check_range(bytes, offset);
  if (bytes == 0) return;
  const cuda_detail::ScopedDevice scope(device_);
  RV_CUDA_CHECK(cudaDeviceSynchronize());
  RV_CUDA_CHECK(
      cudaMemcpy(static_cast<char*>(data_) + offset, host, bytes, cudaMemcpyHostToDevice));
  // A pageable upload may return before its DMA lands; a later non-blocking stream would
  // not wait for it.
  RV_CUDA_CHECK(cudaDeviceSynchronize());
}

void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
  check_range(bytes, offset);
  if (bytes == 0) return;
  const cuda_detail::ScopedDevice scope(device_);
  RV_CUDA_CHECK(cudaDeviceSynchronize());
  RV_CUDA_CHECK(
      cudaMemcpy(host, static_cast<const char*>(data_) + offset, bytes, cudaMemcpyDeviceToHost));
}

void DeviceBuffer::fill_bytes(unsigned char value) {
  const cuda_detail::ScopedDevice scope(device_);
  RV_CUDA_CHECK(cudaDeviceSynchronize());
  RV_CUDA_CHECK(cudaMemset(data_, value, bytes_ ? bytes_ : 1));
  RV_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace rv

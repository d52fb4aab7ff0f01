// DeviceBuffer: bytes in one GPU's memory, owned (cudaMalloc on construction, cudaFree on
// destruction), with synchronous host copies for tests, benchmarks and the loopback world's
// bookkeeping. No CUDA types here.
#pragma once

#include <cstddef>
#include <vector>

namespace rv {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // At least one byte is allocated, so data() is a real device pointer even for 0 bytes.
  DeviceBuffer(int device, std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  float* floats() const { return static_cast<float*>(data_); }
  std::size_t bytes() const { return bytes_; }
  int device() const { return device_; }

  // Copies between the host and [offset, offset + bytes) of this buffer, synchronous with
  // all work on the device (every stream): they wait for it before and finish before they
  // return. For bookkeeping, not for timed paths.
  void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
  void download(void* host, std::size_t bytes, std::size_t offset = 0) const;
  // Every byte set to `value` (tests poison outputs with it).
  void fill_bytes(unsigned char value);

  void upload_floats(const std::vector<float>& values, std::size_t element_offset = 0) {
    upload(values.data(), values.size() * sizeof(float), element_offset * sizeof(float));
  }
  std::vector<float> download_floats(std::size_t count, std::size_t element_offset = 0) const {
    std::vector<float> values(count);
    download(values.data(), count * sizeof(float), element_offset * sizeof(float));
    return values;
  }

 private:
  void release() noexcept;
  void check_range(std::size_t bytes, std::size_t offset) const;

  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  int device_ = -1;
};

}  // namespace rv
